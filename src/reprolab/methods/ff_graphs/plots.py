"""ff_graphs figures: each metric against n on log axes per family; out-of-distribution
accuracy against each metric (fp32 and quantized)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from reprolab.contract import Figure
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
    ax.set(yscale="log", xlabel="graph size n")
    ax.set_ylabel(metric.replace("_", " ") + (" (n * minimax)" if metric == "fidelity" else ""))
    ax.set_title(f"{metric} (exact; seeded families: seed mean)", fontsize=10)
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def ood_vs_metric(table: pd.DataFrame, path: Path) -> Path:
    """One point per (task, family) mean of the families' default graphs: colour =
    precision, marker = task, label = family; each panel's title gives the fp32
    one-variable Spearman rho (a picture only: the claims are the joint regression)."""
    from reprolab.methods.ff_graphs.claims import spearman

    markers = ("o", "^", "s", "D")
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.5))
    for ax, metric in zip(axes, ("fidelity", "mixing_time"), strict=True):
        rho = None
        for precision, rows in table.groupby("precision"):
            _, means = correlation_points(rows, metric, "ood_acc")
            tasks = list(dict.fromkeys(means.index.get_level_values("task")))
            colour = None
            for k, task in enumerate(tasks):
                sub = means.xs(task, level="task")
                dots = ax.scatter(
                    sub[metric],
                    sub["ood_acc"],
                    s=28,
                    marker=markers[k % len(markers)],
                    color=colour,
                    label=f"{task} ({precision})",
                )
                colour = dots.get_facecolor()[0]
            if precision == "fp32":
                rho = spearman(means[metric], means["ood_acc"])
                for (_task, fam), r in means.iterrows():
                    ax.annotate(
                        fam,
                        (r[metric], r["ood_acc"]),
                        fontsize=7,
                        xytext=(3, 3),
                        textcoords="offset points",
                    )
        ax.set(xscale="log", xlabel=f"{metric} of the graph at the largest test length")
        ax.set_ylabel("OOD accuracy (mean over seeds and test lengths)")
        if rho is not None:
            ax.set_title(f"fp32 Spearman rho = {rho:+.2f}", fontsize=10)
        ax.legend(fontsize=7)
    fig.suptitle("Out-of-distribution accuracy against graph metrics, per (task, family)")
    return save_figure(fig, path)


FIGURES = (
    Figure(metric_vs_n, "mixing_time_vs_n.png", "table", {"metric": "mixing_time"}),
    Figure(metric_vs_n, "fidelity_vs_n.png", "table", {"metric": "fidelity"}),
    Figure(ood_vs_metric, "ood_acc_vs_metric.png"),
)
