"""BDIA figures: test accuracy per variant and precision, activation memory held for
backward (with the paper's peak-memory ratio for reference), learning curves."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from reprolab.contract import Figure
from reprolab.core.plots import mean_ci, plot_mean_curves, plt, save_figure

PAPER_RATIO = 693 / 1571  # BDIA vs standard peak training memory, ViT on CIFAR-10


def _bar_groups(ax, rows: pd.DataFrame, groups: list, series: list, key_g: str, key_s: str):
    width = 0.8 / max(len(series), 1)
    for j, s in enumerate(series):
        means, errs = [], []
        for g in groups:
            vals = rows[(rows[key_g] == g) & (rows[key_s] == s)].value.to_numpy()
            if vals.size == 0:
                means.append(np.nan)
                errs.append(0.0)
                continue
            mean, err = mean_ci(vals)
            means.append(mean)
            errs.append(err)
        ax.bar(np.arange(len(groups)) + j * width, means, width, yerr=errs, capsize=2, label=s)
    ax.set_xticks(np.arange(len(groups)) + width * (len(series) - 1) / 2, groups)


def accuracy(table: pd.DataFrame, path: Path) -> Path:
    rows = table[table.metric == "test_acc"].copy()
    rows["group"] = rows.task + " " + rows.precision
    groups = sorted(rows.group.unique())
    variants = sorted(rows.variant.unique())
    fig, ax = plt.subplots(figsize=(max(5, 1.3 * len(groups) + 2), 3.8))
    _bar_groups(ax, rows, groups, variants, "group", "variant")
    ax.set_ylim(max(0.0, rows.value.min() - 0.1), 1.0)
    ax.tick_params(axis="x", labelrotation=30)
    ax.set_ylabel("test accuracy (mean, 95% CI over seeds)")
    ax.set_title("BDIA vs standard ViT (gamma = 0 at inference)")
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def memory_bars(table: pd.DataFrame, path: Path) -> Path:
    rows = table[(table.metric == "saved_mb") & (table.precision == "fp32")]
    tasks = sorted(rows.task.unique())
    variants = sorted(rows.variant.unique())
    fig, ax = plt.subplots(figsize=(max(4.5, 1.5 * len(tasks) + 2), 3.8))
    _bar_groups(ax, rows, tasks, variants, "task", "variant")
    means = rows.groupby("variant").value.mean()
    if {"bdia", "standard"} <= set(means.index):
        ratio = means["bdia"] / means["standard"]
        ax.set_title(
            f"activation memory held for backward\nBDIA / standard = {ratio:.3f} "
            f"(paper peak memory: {PAPER_RATIO:.2f})",
            fontsize=9,
        )
    ax.set_ylabel("MiB saved for backward per step")
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def learning_curves(histories, path: Path) -> Path:
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for ax, key, label in (
        (axes[0], "train_loss", "training loss"),
        (axes[1], "val_acc", "validation accuracy"),
    ):
        plot_mean_curves(ax, histories, key, by=("task", "variant"))
        ax.set(xlabel="epoch", ylabel=f"{label} (mean over seeds)")
        ax.legend(fontsize=7)
    fig.suptitle("Learning curves (BDIA trains with gamma = +-0.5; validation at gamma = 0)")
    return save_figure(fig, path)


FIGURES = (
    Figure(accuracy, "accuracy.png"),
    Figure(memory_bars, "saved_memory.png"),
    Figure(learning_curves, "learning_curves.png", "units"),
)
