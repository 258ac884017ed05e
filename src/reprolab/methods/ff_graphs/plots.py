"""ff_graphs figures: each metric against n on log axes per family; out-of-distribution
accuracy against each metric (fp32 and quantized)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from reprolab.core.plots import plt, save_figure
from reprolab.methods.ff_graphs.claims import correlation_points, family_curve


def metric_vs_n(table: pd.DataFrame, metric: str, path: Path) -> Path:
    curve = family_curve(table[table.precision == "fp32"], metric)
    fig, ax = plt.subplots(figsize=(5, 4))
    for family in curve.columns:
        c = curve[family].dropna()
        c = c[c > 0]
        if len(c):
            ax.plot(c.index, c.to_numpy(), marker="o", label=family)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("graph size n")
    ax.set_ylabel(metric.replace("_", " ") + (" (n * minimax)" if metric == "fidelity" else ""))
    ax.set_title(f"{metric} (exact; seeded families: seed mean)", fontsize=10)
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def ood_vs_metric(table: pd.DataFrame, path: Path) -> Path:
    fig, axes = plt.subplots(1, 2, figsize=(9, 4))
    for ax, metric in zip(axes, ("fidelity", "mixing_time"), strict=True):
        for precision, rows in table.groupby("precision"):
            _, means = correlation_points(rows, metric, "ood_acc")
            ax.scatter(means[metric], means["ood_acc"], label=precision, s=25)
            if precision == "fp32":
                for (_task, fam), r in means.iterrows():
                    ax.annotate(f"{fam}", (r[metric], r["ood_acc"]), fontsize=7)
        ax.set_xscale("log")
        ax.set_xlabel(f"{metric} of the graph at the largest test length")
        ax.set_ylabel("OOD accuracy (mean over seeds and test lengths)")
        ax.legend(fontsize=8)
    fig.suptitle("Out-of-distribution accuracy against graph metrics")
    return save_figure(fig, path)
