"""lip_rcp figures: coverage under PGD-L2 attack vs eps per variant (against 1 - alpha);
robust set size and calibration + prediction time; validation accuracy by epoch."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from reprolab.contract import Figure
from reprolab.core.plots import curves_figure, facets, plt, save_figure


def _eps(metric: str, prefix: str) -> float:
    return float(metric[len(prefix) :].replace("p", "."))


def coverage_vs_eps(table: pd.DataFrame, path: Path) -> Path:
    rows = table[table.metric.str.startswith("coverage_eps")].copy()
    rows["eps"] = [_eps(m, "coverage_eps") for m in rows.metric]
    clean = table[table.metric == "coverage_clean"].copy()
    gap = table[table.metric == "coverage_gap"]
    cov = table[table.metric == "coverage_attacked"]
    target = None
    if len(gap) and len(cov):
        target = float((cov.value.to_numpy() - gap.value.to_numpy()).mean())
    fig, panels = facets(
        table, "precision", size=(5, 3.8), title="Coverage under PGD-L2, {col}", title_size=10
    )
    for panel in panels:
        ax, precision = panel.ax, panel.col
        for variant in dict.fromkeys(rows.variant):
            r = rows[(rows.variant == variant) & (rows.precision == precision)]
            c = clean[(clean.variant == variant) & (clean.precision == precision)]
            m = r.groupby("eps").value.agg(["mean", "min", "max"])
            xs = [0.0, *m.index]
            ys = [c.value.mean(), *m["mean"]]
            ax.plot(xs, ys, marker="o", label=variant)
            ax.fill_between(m.index, m["min"], m["max"], alpha=0.15)
        if target is not None:
            ax.axhline(target, color="k", ls="--", lw=0.8, label="1 - alpha")
        ax.set_xlabel("attack budget eps (0: clean; band: min-max over seeds, tasks)", fontsize=8)
        ax.set_ylabel("coverage of the true label")
        ax.legend(fontsize=8)
    return save_figure(fig, path)


def _bars(table: pd.DataFrame, metric: str, label: str, path: Path, log: bool = False) -> Path:
    rows = table[(table.precision == "fp32") & (table.metric == metric)]
    fig, ax = plt.subplots(figsize=(4.8, 3.5))
    g = rows.groupby(["task", "variant"]).value.mean().unstack("variant")
    g.plot.bar(ax=ax, rot=0)
    ax.set_ylabel(label)
    if log:
        ax.set_yscale("log")
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def set_size(table: pd.DataFrame, path: Path) -> Path:
    return _bars(table, "set_size", "mean robust set size (clean test inputs)", path)


def wall_time(table: pd.DataFrame, path: Path) -> Path:
    """Calibration + prediction wall time (a runtime measurement: it differs per run)."""
    return _bars(table, "wall_seconds", "calibration + prediction time (s)", path, log=True)


# ``trained`` holds the trained nets: lip_rcp's (also vanilla_cp's) and rscp's.
FIGURES = (
    Figure(coverage_vs_eps, "coverage_vs_eps.png"),
    Figure(set_size, "set_size.png"),
    Figure(
        curves_figure,
        "val_acc_by_epoch.png",
        "units",
        dict(
            key="val_acc",
            by=("task", "variant"),
            ylabel="accuracy on the calibration split",
            title="Training curves (mean over seeds)",
            legend_size=7,
        ),
    ),
)


# The wall-time figure: ``table`` holds evaluate's runtime measurements.
RUNTIME_FIGURES = (Figure(wall_time, "wall_time.png"),)
