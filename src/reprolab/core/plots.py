"""What every method's figures share: a headless backend, one way to save a figure, and
training curves averaged over seeds from the units' histories."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")  # stage processes have no display
import matplotlib.pyplot as plt  # noqa: E402

if TYPE_CHECKING:
    import pandas as pd


def save_figure(fig, path: Path, dpi: int = 110) -> Path:
    """Lay out, write and close ``fig``; return ``path`` (the plots hook's contract)."""
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


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
    ax.set_xlabel(x)
    ax.set_ylabel(ylabel)
    ax.set_title(title, **({} if title_size is None else {"fontsize": title_size}))
    ax.legend(fontsize=legend_size)
    return save_figure(fig, path)


def grouped_bars(
    ax, ticks: Sequence[str], series: Mapping[str, Sequence[tuple[float, float]]]
) -> None:
    """Bars grouped by tick, one bar per series: ``series`` maps a label (a precision, a
    variant) to one ``(mean, error bar half-width)`` per tick."""
    import numpy as np

    width = 0.8 / max(len(series), 1)
    for k, (label, stats) in enumerate(series.items()):
        ax.bar(
            np.arange(len(ticks)) + k * width,
            [s[0] for s in stats],
            width,
            yerr=[s[1] for s in stats],
            capsize=2,
            label=label,
        )
    ax.set_xticks(np.arange(len(ticks)) + width * (len(series) - 1) / 2, list(ticks))
