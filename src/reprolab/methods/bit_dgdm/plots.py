"""bit_dgdm figures: sample quality per precision (QM9 validity / uniqueness, community
MMD next to its train-vs-test floor), memory per precision, training curves."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from reprolab.contract import Figure
from reprolab.core.plots import plot_mean_curves, plt, save_figure

PANELS = (
    ("qm9", "validity", "QM9 validity"),
    ("qm9", "uniqueness", "QM9 uniqueness"),
    ("community", "validity", "community validity (SBM test)"),
    ("community", "mmd_avg", "community MMD^2 (avg of 3)"),
)


def _bars(ax, rows: pd.DataFrame, precisions: list[str]) -> None:
    stats = rows.groupby("precision").value.agg(["mean", "std", "count"]).reindex(precisions)
    ax.bar(range(len(precisions)), stats["mean"], yerr=stats["std"].fillna(0), capsize=3)
    ax.set_xticks(range(len(precisions)), precisions, rotation=45, ha="right", fontsize=7)


def quality_by_precision(table: pd.DataFrame, path: Path) -> Path:
    precisions = list(dict.fromkeys(table.precision))
    panels = [p for p in PANELS if ((table.task == p[0]) & (table.metric == p[1])).any()]
    fig, axes = plt.subplots(1, max(len(panels), 1), figsize=(4 * max(len(panels), 1), 3.6))
    axes = axes if len(panels) > 1 else [axes]
    for ax, (task, metric, title) in zip(axes, panels, strict=False):
        rows = table[(table.task == task) & (table.metric == metric)]
        _bars(ax, rows, precisions)
        ref = table[(table.task == task) & (table.metric == f"{metric}_floor")]
        if ref.empty:
            ref = table[(table.task == task) & (table.metric == f"{metric}_test")]
        if not ref.empty:
            ax.axhline(ref.value.mean(), color="k", ls="--", lw=0.8, label="test / floor")
            ax.legend(fontsize=7)
        ax.set_title(f"{title}\n(mean +- std over seeds)", fontsize=9)
    return save_figure(fig, path)


def memory_by_precision(table: pd.DataFrame, path: Path) -> Path:
    precisions = list(dict.fromkeys(table.precision))
    fig, ax = plt.subplots(figsize=(5, 3.6))
    _bars(ax, table[table.metric == "memory_ratio_16bit"], precisions)
    ax.axhline(2.8, color="k", ls="--", lw=0.8, label="paper: up to 2.8x")
    ax.set_ylabel("16-bit bytes / effective bytes")
    ax.legend(fontsize=7)
    return save_figure(fig, path)


def training_curves(histories: dict, path: Path) -> Path:
    """Validation cross-entropy of the edges per task and of QM9's node types (community
    graphs have one node type), mean over seeds."""
    fig, ax = plt.subplots(figsize=(5, 3.5))
    plot_mean_curves(ax, histories, "val_ce_edges", suffix=" edges")
    qm9 = {unit: history for unit, history in histories.items() if unit.task == "qm9"}
    plot_mean_curves(ax, qm9, "val_ce_nodes", suffix=" nodes", ls="--")
    ax.set(xlabel="epoch", ylabel="validation cross-entropy (fixed noise)")
    ax.set_title("Training curves (mean over seeds)")
    ax.legend(fontsize=7)
    return save_figure(fig, path)


FIGURES = (
    Figure(quality_by_precision, "quality_by_precision.png"),
    Figure(memory_by_precision, "memory_by_precision.png"),
    Figure(training_curves, "training_curves.png", "units"),
)
