"""EnsLoss figures: test accuracy per class pair and loss; int8 vs fp32; validation
accuracy by epoch (where overfitting to noisy labels shows); the CNN setting's fit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from reprolab.core.plots import curves_figure, mean_ci, plot_mean_curves, plt, save_figure


def accuracy_by_pair(table: pd.DataFrame, path: Path) -> Path:
    rows = table[(table.metric == "test_acc") & (table.precision == "fp32")]
    tasks = sorted(rows.task.unique())
    variants = list(dict.fromkeys(rows.variant))
    width = 0.8 / len(variants)
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(tasks) + 2), 4))
    for j, variant in enumerate(variants):
        means, errs = [], []
        for task in tasks:
            vals = rows[(rows.task == task) & (rows.variant == variant)].value.to_numpy()
            mean, err = mean_ci(vals)
            means.append(mean)
            errs.append(err)
        ax.bar(np.arange(len(tasks)) + j * width, means, width, yerr=errs, capsize=2, label=variant)
    lo = rows.value.min()
    ax.set_ylim(max(0.0, lo - 0.05), 1.0)
    ax.set_xticks(
        np.arange(len(tasks)) + width * (len(variants) - 1) / 2, tasks, rotation=45, ha="right"
    )
    ax.set_ylabel("test accuracy (mean, 95% CI over seeds)")
    ax.set_title("EnsLoss vs fixed losses per class pair")
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def quantized_vs_fp32(table: pd.DataFrame, path: Path) -> Path:
    rows = table[table.metric == "test_acc"]
    wide = rows.pivot_table(index=["task", "variant", "seed"], columns="precision", values="value")
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    for precision in [c for c in wide.columns if c != "fp32"]:
        ax.scatter(wide["fp32"], wide[precision], s=10, label=precision)
    lims = [wide.min().min() - 0.01, 1.0]
    ax.plot(lims, lims, "k--", lw=0.8)
    ax.set(xlabel="fp32 test accuracy", ylabel="quantized test accuracy")
    ax.set_title("Post-training quantization, per unit")
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def validation_curves(histories: dict, path: Path) -> Path:
    """Mean validation accuracy per epoch and loss, over every task and seed."""
    return curves_figure(
        histories,
        "val_acc",
        path,
        by=("variant",),
        ylabel="validation accuracy (mean over tasks, seeds)",
        title="Training curves (noisy training labels)",
    )


def cnn_curves(histories: dict, path: Path) -> Path:
    """The CNN setting by epoch, mean over pairs and seeds per loss: accuracy on the
    noisy training labels it is fitted to (left; near 1 once it has memorised the
    flipped labels) and validation accuracy on clean labels (right)."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for ax, key, ylabel in (
        (axes[0], "train_acc_noisy", "training accuracy (noisy labels)"),
        (axes[1], "val_acc", "validation accuracy (clean labels)"),
    ):
        plot_mean_curves(ax, histories, key, by=("variant",))
        ax.set(xlabel="epoch", ylabel=ylabel)
        ax.legend(fontsize=8)
    fig.suptitle("CNN setting: fitting noisy labels (mean over pairs and seeds)")
    return save_figure(fig, path)
