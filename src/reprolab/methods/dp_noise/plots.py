"""dp_noise figures: epsilon vs k per mechanism, the optimized noise's relative gain vs k,
and the optimisation curves (moments-accountant epsilon by iteration)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from reprolab.contract import Figure
from reprolab.core.plots import facets, plt, save_figure
from reprolab.methods.dp_noise.claims import BASELINES, gains

_STYLE = {"optimized": "o-", "optimized_from_laplace": "d-.", "gaussian": "s--", "laplace": "^:"}


def eps_vs_k(table: pd.DataFrame, path: Path) -> Path:
    """eps(delta) after k compositions (dp-accounting), one panel per sigma/s."""
    rows = table[(table.metric == "eps_ref") & (table.precision == "fp32")]
    fig, panels = facets(
        rows, "sigma", cols=sorted(rows.sigma.unique()), size=(5, 3.8), title="sigma/s = {col:g}"
    )
    for panel in panels:
        ax = panel.ax
        mean = panel.data.groupby(["variant", "k"]).value.mean()
        for variant in mean.index.get_level_values("variant").unique():
            series = mean.xs(variant, level="variant")
            ax.plot(series.index, series.to_numpy(), _STYLE.get(variant, "x-"), label=variant)
        ax.set(xscale="log", yscale="log", xlabel="compositions k (noise optimised for each k)")
        ax.set_ylabel("epsilon at the target delta")
        ax.legend(fontsize=8)
    return save_figure(fig, path)


def gain_vs_k(table: pd.DataFrame, path: Path) -> Path:
    """Relative epsilon gain of the optimized noise over each baseline and the better one."""
    rows = table[(table.metric == "eps_ref") & (table.precision == "fp32")]
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    present = [b for b in BASELINES if b in set(rows.variant)]
    for label, baselines in [(f"vs {b}", (b,)) for b in present] + [("vs better", tuple(present))]:
        g = gains(rows, "eps_ref", "optimized", baselines)
        for sigma, by_sigma in g.groupby("sigma"):
            curve = by_sigma.groupby("k").gain.mean() * 100
            ax.plot(curve.index, curve.to_numpy(), "o-", label=f"{label} (sigma/s={sigma:g})")
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set(xscale="log", xlabel="compositions k", ylabel="1 - eps_opt / eps_baseline  (%)")
    ax.set_title("Gain of the optimized noise")
    ax.legend(fontsize=7)
    return save_figure(fig, path)


def optimisation_curves(histories: dict, path: Path) -> Path:
    """Moments-accountant epsilon by iteration relative to its first logged value, one
    colour per task, one line per seed (the optimized noise from the Gaussian start)."""
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    units = sorted(
        (u for u, h in histories.items() if u.variant == "optimized" and len(h) > 2),
        key=lambda u: (u.param["k"], u.param["sigma"], -1 if u.seed is None else u.seed),
    )
    tasks = list(dict.fromkeys(u.task for u in units))
    colours = {t: plt.cm.viridis(i / max(1, len(tasks) - 1)) for i, t in enumerate(tasks)}
    labelled = set()
    for unit in units:
        history = histories[unit][1:]  # step 0 is the raw Gaussian-like start
        steps = [h["step"] for h in history]
        values = [h["eps_moments"] / history[0]["eps_moments"] for h in history]
        label = None if unit.task in labelled else unit.task
        labelled.add(unit.task)
        ax.plot(steps, values, lw=0.9, color=colours[unit.task], label=label)
    ax.set(xlabel="iteration", ylabel="moments-accountant eps / first logged value")
    ax.set_title("Preconditioned gradient descent (Eq. 25), every seed")
    ax.legend(fontsize=7)
    return save_figure(fig, path)


FIGURES = (
    Figure(eps_vs_k, "eps_vs_k.png"),
    Figure(gain_vs_k, "gain_vs_k.png"),
    Figure(optimisation_curves, "optimisation.png", "units"),
)
