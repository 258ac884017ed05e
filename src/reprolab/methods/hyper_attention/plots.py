"""hyper_attention figures: error against population size L (trained at one L), learning
curves, and error against parameter count (the matched budgets and their multiples)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
from matplotlib.ticker import NullFormatter

from reprolab.contract import Figure
from reprolab.core.plots import mean_curves, plt, save_figure

ORDER = ("ha3", "hfa", "lsa", "sa1", "sa2")
COLOR = dict(zip(ORDER, ("C3", "C2", "C0", "C1", "C4"), strict=True))
_SIZE = re.compile(r"^nmse_L(\d+)$")


def _panels(families) -> tuple:
    families = sorted(families)
    fig, axes = plt.subplots(1, len(families), figsize=(3.4 * len(families), 3.2), squeeze=False)
    return fig, list(zip(axes[0], families, strict=True))


def ood_curves(table: pd.DataFrame, path: Path, precision: str = "fp32") -> Path:
    """Per family: mean normalised test MSE (over seeds) against the population size L,
    one line per variant at the matched budget; the training size is marked."""
    rows = table[(table.precision == precision) & (table.scale == 1.0)].copy()
    sizes = rows.metric.str.extract(_SIZE)[0]
    rows = rows[sizes.notna()].assign(L=sizes.dropna().astype(int))
    fig, panels = _panels(rows.family.unique())
    for ax, family in panels:
        part = rows[rows.family == family]
        for variant in (v for v in ORDER if v in set(part.variant)):
            curve = part[part.variant == variant].groupby("L").value.mean()
            ax.plot(
                curve.index, curve.to_numpy(), marker="o", ms=3, label=variant, c=COLOR[variant]
            )
        for l_train in part.l_train.unique():
            ax.axvline(float(l_train), color="grey", ls=":", lw=0.8)
        ax.set(yscale="log", xlabel="population size L")
        ax.set_title(family, fontsize=9)
        ax.legend(fontsize=7)
    panels[0][0].set_ylabel("test MSE / Var(target)")
    fig.suptitle(f"Error vs population size (trained at the dotted L; {precision})", fontsize=9)
    return save_figure(fig, path, dpi=100)


def learning_curves(trained, path: Path) -> Path:
    """Per family: validation normalised MSE by step, mean over seeds, matched budget."""
    histories = {u: h for u, h in trained.items() if u.param.get("scale") == 1.0}
    curves = mean_curves(histories, "val_nmse", by=("task", "variant"), x="step")
    fig, panels = _panels({u.task for u in histories})
    for ax, family in panels:
        for variant in ORDER:
            series = curves.get(f"{family} {variant}")
            if series is not None:
                ax.plot(series.index, series.to_numpy(), label=variant, c=COLOR[variant])
        ax.set(yscale="log", xlabel="step")
        ax.set_title(family, fontsize=9)
        ax.legend(fontsize=7)
    panels[0][0].set_ylabel("validation MSE / Var(target)")
    fig.suptitle("Learning curves (training size, mean over seeds)", fontsize=9)
    return save_figure(fig, path, dpi=100)


def error_vs_params(table: pd.DataFrame, path: Path, precision: str = "fp32") -> Path:
    """Per family: mean normalised test MSE at the training size against the parameter
    count, one point per (variant, budget)."""
    rows = table[table.precision == precision]
    wide = rows[rows.metric.isin(["nmse_id", "n_params"])].pivot_table(
        index=["family", "variant", "scale", "seed"], columns="metric", values="value"
    )
    means = wide.groupby(level=["family", "variant", "scale"]).mean().reset_index()
    fig, panels = _panels(means.family.unique())
    for ax, family in panels:
        part = means[means.family == family]
        for variant in (v for v in ORDER if v in set(part.variant)):
            pts = part[part.variant == variant].sort_values("n_params")
            ax.plot(pts.n_params, pts.nmse_id, marker="o", ms=4, label=variant, c=COLOR[variant])
        if part.n_params.max() > 3 * part.n_params.min():
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set(yscale="log", xlabel="parameters")
        ax.set_title(family, fontsize=9)
        ax.legend(fontsize=7)
    panels[0][0].set_ylabel("test MSE / Var(target) at the training L")
    fig.suptitle(f"Error vs parameter count ({precision})", fontsize=9)
    return save_figure(fig, path, dpi=100)


FIGURES = (
    Figure(ood_curves, "nmse_vs_population.png"),
    Figure(learning_curves, "learning_curves.png", "units"),
    Figure(error_vs_params, "nmse_vs_params.png"),
)
