"""What every method's figures share: a headless backend, one way to save a figure, a
grid of panels per group of a table, and training curves averaged over seeds from the
units' histories.

The backend is set here, once, before pyplot is imported: a method's plots.py takes
pyplot from this module (``from reprolab.core.plots import plt, save_figure``) and so
never imports it before the backend is set."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")  # stage processes have no display
import matplotlib.pyplot as plt  # noqa: E402

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

__all__ = [
    "Facet",
    "curves_figure",
    "facets",
    "grouped_bars",
    "mean_ci",
    "mean_cis",
    "mean_curves",
    "plot_mean_curves",
    "plt",
    "save_figure",
]


def save_figure(fig, path: Path, dpi: int = 110) -> Path:
    """Lay out, write and close ``fig``; return ``path`` (the plots hook's contract)."""
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


@dataclass(frozen=True)
class Facet:
    """One panel of :func:`facets`: its axes, the values of the row and column fields
    it shows (``row`` is None in a single row of panels), and the table's rows with
    those values."""

    ax: Any
    row: Any
    col: Any
    data: pd.DataFrame


def facets(
    frame: pd.DataFrame,
    col: str,
    row: str | None = None,
    *,
    cols: Sequence | None = None,
    rows: Sequence | None = None,
    size: tuple[float, float] = (4.5, 3.5),
    title: str | Callable[[Any, Any], str] | None = None,
    title_size: float = 9,
    sharex: bool | str = False,
    sharey: bool | str = False,
) -> tuple[Any, list[Facet]]:
    """A figure with one small panel per group of ``frame``: a column per value of the
    field ``col`` and, with ``row``, a row per value of that field. The values and their
    order are ``cols`` / ``rows`` when given, else as they first appear in ``frame``.
    Each panel is ``size`` (width, height) inches; ``sharex`` / ``sharey`` share axes as
    ``plt.subplots`` does. ``title`` names each panel: a format string of ``{row}`` and
    ``{col}`` (e.g. ``"{col} [{row}]"``), or a function of (row value, column value),
    at ``title_size`` points (small multiples: smaller than matplotlib's own title).

    Returns the figure and the panels, row by row (a :class:`Facet` each: the axes, the
    two values, the rows of ``frame`` with them)."""
    col_values = list(dict.fromkeys(frame[col])) if cols is None else list(cols)
    if row is None:
        row_values: list = [None]
    else:
        row_values = list(dict.fromkeys(frame[row])) if rows is None else list(rows)
    fig, axes = plt.subplots(
        len(row_values),
        len(col_values),
        figsize=(size[0] * len(col_values), size[1] * len(row_values)),
        squeeze=False,
        sharex=sharex,
        sharey=sharey,
    )
    panels = []
    for i, r in enumerate(row_values):
        for j, c in enumerate(col_values):
            ax = axes[i][j]
            mask = frame[col] == c
            if row is not None:
                mask &= frame[row] == r
            if title is not None:
                text = title(r, c) if callable(title) else title.format(row=r, col=c)
                ax.set_title(text, fontsize=title_size)
            panels.append(Facet(ax, r, c, frame[mask]))
    return fig, panels


def mean_curves(
    histories: Mapping, key: str, by: Sequence[str] = ("task",), x: str = "epoch"
) -> dict[str, pd.Series]:
    """Training curves averaged over units: ``histories`` maps each trained unit to its
    history (one dict per epoch or step). Returns, per group of the unit fields ``by``
    (sorted), the mean of ``key`` at each ``x`` over the group's units (seeds, and any
    field not in ``by``), keyed by the group's values joined by spaces. History entries
    without ``key`` are skipped (a variant that does not log it)."""
    import pandas as pd

    by = list(by)
    rows = [
        {**{f: getattr(unit, f) for f in by}, x: h[x], key: h[key]}
        for unit, history in histories.items()
        for h in history
        if key in h
    ]
    if not rows:
        return {}
    means = pd.DataFrame(rows).groupby([*by, x])[key].mean()
    curves = {}
    for group, series in means.groupby(level=by):
        values = group if isinstance(group, tuple) else (group,)
        curves[" ".join(str(v) for v in values)] = series.droplevel(by)
    return curves


def plot_mean_curves(
    ax,
    histories: Mapping,
    key: str,
    by: Sequence[str] = ("task",),
    x: str = "epoch",
    suffix: str = "",
    **plot_kw,
) -> None:
    """One line per group of :func:`mean_curves`, labelled by the group (plus ``suffix``)."""
    for label, series in mean_curves(histories, key, by, x).items():
        ax.plot(series.index, series.to_numpy(), label=label + suffix, **plot_kw)


def curves_figure(
    histories: Mapping,
    key: str,
    path: Path,
    *,
    ylabel: str,
    title: str,
    by: Sequence[str] = ("task",),
    x: str = "epoch",
    legend_size: float = 8,
    title_size: float | None = None,
    **plot_kw,
) -> Path:
    """A one-panel figure of :func:`plot_mean_curves` (e.g. validation accuracy by epoch,
    mean over seeds), written to ``path``."""
    fig, ax = plt.subplots(figsize=(5, 3.5))
    plot_mean_curves(ax, histories, key, by, x, **plot_kw)
    ax.set(xlabel=x, ylabel=ylabel)
    ax.set_title(title, **({} if title_size is None else {"fontsize": title_size}))
    ax.legend(fontsize=legend_size)
    return save_figure(fig, path)


def mean_ci(values) -> tuple[float, float]:
    """The mean of ``values`` and the half-width of its 95% t-interval, as every
    figure's error bars show it; 0 for a single value (drawn without a bar)."""
    import numpy as np

    from reprolab.evidence.judging.stats import t_interval

    iv = t_interval(np.asarray(values, dtype=float))
    return iv.mean, (iv.high - iv.mean if np.isfinite(iv.high) else 0.0)


def mean_cis(groups: Iterable) -> tuple[np.ndarray, np.ndarray]:
    """:func:`mean_ci` of each group of values in turn (one per x tick, bar or curve
    point), as two arrays: the means and the error bar half-widths. An empty group
    gives a NaN mean and no bar (matplotlib leaves the point out)."""
    import numpy as np

    stats = [mean_ci(g) if len(g) else (np.nan, 0.0) for g in groups]
    return np.array([s[0] for s in stats], dtype=float), np.array([s[1] for s in stats])


def grouped_bars(
    ax,
    frame: pd.DataFrame,
    tick: str,
    ticks: Sequence,
    by: str,
    series: Sequence,
    labels: Sequence[str] | None = None,
) -> None:
    """Bars of the mean of ``frame.value`` with :func:`mean_ci` error bars: a group per
    value in ``ticks`` of the column ``tick`` (shown as ``labels``, default the values
    themselves), in each group a bar per value in ``series`` of the column ``by`` (in
    that order, labelled for the legend). A pair without rows draws no bar."""
    import numpy as np

    width = 0.8 / max(len(series), 1)
    for k, label in enumerate(series):
        rows = frame[frame[by] == label]
        means, errs = mean_cis(rows[rows[tick] == t].value for t in ticks)
        ax.bar(np.arange(len(ticks)) + k * width, means, width, yerr=errs, capsize=2, label=label)
    ax.set_xticks(np.arange(len(ticks)) + width * (len(series) - 1) / 2, list(labels or ticks))


#: bar colour per verdict in :func:`claims_forest`
VERDICT_COLOURS = {
    "reproduced": "#1a7f37",
    "reproduced_smaller": "#7fb069",
    "no_effect": "#0969da",
    "not_reproduced": "#cf222e",
    "inconclusive": "#9a6700",
    "premise_failed": "#57606a",
    "out_of_reach": "#6e7781",
    "did_not_replicate": "#8250df",
}


def central_claims(rows: Sequence[Mapping[str, Any]], path: Path) -> Path:
    """One line per paper: its central claim's interval on a shared scale, in units of
    the smallest effect that matters from the bound (0: the bound; 1: the smallest
    effect, which is the paper's effect where the paper gives one, marked by a diamond),
    the claimed side to the right, coloured by the verdict; a paper without an interval
    is listed with its verdict (and ``note``, what a test that counts counted, where
    given). ``rows``: each with ``method`` (or a ``label`` to print), ``verdict``,
    ``low``, ``high``, ``value`` (already scaled, or None) and ``paper`` (True where 1
    is the paper's effect). Values beyond +-6 are drawn at the edge, with an arrow."""
    from matplotlib.patches import Patch

    edge = 6.0
    fig, ax = plt.subplots(figsize=(8.0, 0.32 * len(rows) + 1.3))
    labels = []
    for y, r in enumerate(reversed(list(rows))):
        colour = VERDICT_COLOURS.get(str(r["verdict"]), "#6e7781")
        labels.append(str(r.get("label", r["method"])))
        low, high, value = r.get("low"), r.get("high"), r.get("value")
        if _finite(low) and _finite(high):
            lo, hi, beyond = clamp_interval(low, high, edge)
            if lo == hi == edge:  # wholly beyond the right edge: a stub there, and the arrow
                lo = edge - 0.15
            elif lo == hi == -edge:
                hi = -edge + 0.15
            ax.plot([lo, hi], [y, y], color=colour, lw=6, solid_capstyle="butt", alpha=0.85)
            for x in beyond:
                ax.annotate(
                    "",
                    (x + 0.3 * (x / edge), y),
                    (x - 0.1 * (x / edge), y),
                    arrowprops={"arrowstyle": "->"},
                )
        if _finite(value) and abs(value) <= edge:
            ax.plot([value], [y], "o", color="white", mec=colour, mew=1.5, ms=5)
        if r.get("paper"):
            ax.plot([1.0], [y], "D", color="black", ms=4)
        if not (_finite(low) and _finite(high)):
            text = str(r["verdict"]).replace("_", " ")
            text = f"{text}: {r['note']}" if r.get("note") else text
            # on white: the bound's and the smallest effect's lines run behind it
            bbox = {"facecolor": "white", "edgecolor": "none", "pad": 0.5}
            ax.text(-edge + 0.1, y, text, va="center", fontsize=7, bbox=bbox, zorder=3)
    ax.axvline(0.0, color="#444", ls="--", lw=1)
    ax.axvline(1.0, color="#999", ls=":", lw=1)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.set_xlim(-edge - 0.3, edge + 0.3)
    ax.set_ylim(-0.7, len(labels) - 0.3)
    ax.set_xlabel(
        "(interval - bound) / smallest effect that matters, claimed side to the right", fontsize=8
    )
    ax.set_title(
        "Central claims: interval against bound (dashed) and smallest effect (dotted)",
        fontsize=9,
        pad=16,
    )
    shown = [v for v in VERDICT_COLOURS if any(r["verdict"] == v for r in rows)]
    # one line of the legend between the title and the axes: no gap below the figure
    ax.legend(
        handles=[Patch(color=VERDICT_COLOURS[v], label=v.replace("_", " ")) for v in shown],
        fontsize=7,
        loc="lower center",
        bbox_to_anchor=(0.5, 1.0),
        ncol=max(1, len(shown)),
        frameon=False,
        borderaxespad=0.2,
        handlelength=1.2,
        columnspacing=1.0,
    )
    return save_figure(fig, path)


def clamp_interval(low: float, high: float, edge: float) -> tuple[float, float, list[float]]:
    """An interval on a scale drawn from ``-edge`` to ``edge``: its ends moved inside, and
    the edges it runs past (each where an arrow points out: ``edge`` for an end beyond
    the right, ``-edge`` beyond the left; an interval wholly beyond one edge sits at it)."""
    lo = min(max(low, -edge), edge)
    hi = max(min(high, edge), -edge)
    beyond = sorted({math.copysign(edge, end) for end in (low, high) if abs(end) > edge})
    return lo, hi, beyond


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and math.isfinite(x)


def paper_point(claim: Mapping[str, Any]) -> float | None:
    """The paper's value on the claim's measured scale, where the claim's smallest effect
    that matters is the paper's own (``effect_basis`` "paper: ..."): the bound moved by
    the effect towards the claimed side. None for a declared margin or no sided bound."""
    m = claim.get("measured") or {}
    basis = str(claim.get("effect_basis") or "")
    effect, bound, side = claim.get("effect"), m.get("bound"), m.get("claimed")
    if not basis.startswith("paper") or not _finite(effect) or not _finite(bound):
        return None
    if side in (">", ">="):
        return float(bound) + float(effect)
    if side in ("<", "<="):
        return float(bound) - float(effect)
    return None


def claims_forest(claims: Sequence[Mapping[str, Any]], path: Path, title: str = "") -> Path | None:
    """One panel per claim (its own scale: claims measure different things), a row per
    precision: the measured interval as a bar coloured by its verdict, the value as a
    dot, the bound as a dashed line, the paper's value (:func:`paper_point`) as a black
    diamond. Claims without a value (out of reach, not tested) are listed by name.
    Returns ``path``, or None when no claim has a value."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    by_claim: dict[str, list[Mapping[str, Any]]] = {}
    for c in claims:
        by_claim.setdefault(str(c["id"]), []).append(c)
    shown = {
        cid: rows
        for cid, rows in by_claim.items()
        if any(_finite((r.get("measured") or {}).get("value")) for r in rows)
    }
    if not shown:
        return None
    heights = [0.45 + 0.28 * len(rows) for rows in shown.values()]
    top, bottom = (0.35 if title else 0.1), 0.35  # inches: the title, the legend
    total = sum(heights) + top + bottom
    fig, axes = plt.subplots(
        len(shown),
        1,
        figsize=(7.5, total),
        gridspec_kw={"height_ratios": heights},
        squeeze=False,
    )
    for ax, (cid, rows) in zip(axes[:, 0], shown.items(), strict=True):
        labels = []
        for y, c in enumerate(reversed(rows)):
            m = c.get("measured") or {}
            colour = VERDICT_COLOURS.get(str(c.get("verdict")), "#6e7781")
            value, low, high = m.get("value"), m.get("ci_low"), m.get("ci_high")
            if _finite(low) and _finite(high):
                ax.plot([low, high], [y, y], color=colour, lw=5, solid_capstyle="butt", alpha=0.8)
            if _finite(value):
                ax.plot([value], [y], "o", color="white", mec=colour, mew=1.5, ms=5)
            paper = paper_point(c)
            if paper is not None:
                ax.plot([paper], [y], "D", color="black", ms=5)
            labels.append(f"{c.get('precision')}  n={m.get('n', '?')}")
        bounds = set()
        for c in rows:
            b = (c.get("measured") or {}).get("bound")
            bounds.update(x for x in (b if isinstance(b, list | tuple) else [b]) if _finite(x))
        for b in bounds:
            ax.axvline(float(b), color="#444", ls="--", lw=1)
        ax.set_yticks(range(len(rows)), labels, fontsize=7)
        ax.set_ylim(-0.7, len(rows) - 0.3)
        star = "  (central)" if any(c.get("central") for c in rows) else ""
        side = next((c["measured"].get("claimed") for c in rows if c.get("measured")), None)
        claim_side = f"  claimed {side} bound" if side else ""
        if not bounds and any((c.get("measured") or {}).get("per_task") for c in rows):
            claim_side = "  verdict: the test over tasks (the bar: the pooled interval)"
        ax.set_title(f"{cid}{star}{claim_side}", fontsize=8, loc="left")
        ax.tick_params(axis="x", labelsize=7)
        ax.margins(x=0.08)
    legend = [
        Patch(color=colour, label=verdict.replace("_", " "))
        for verdict, colour in VERDICT_COLOURS.items()
    ] + [
        Line2D([], [], color="#444", ls="--", label="bound"),
        Line2D([], [], marker="D", color="black", ls="", label="paper's value"),
    ]
    fig.legend(handles=legend, loc="lower center", ncol=6, fontsize=7, frameon=False)
    if title:
        fig.suptitle(title, fontsize=9, x=0.01, ha="left")
    fig.tight_layout(rect=(0, bottom / total, 1, 1 - top / total * 0.6))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
