"""Rotation-fusion figures: test accuracy of each fusion against the weight alpha (every
precision), headline fused accuracy per regime, learning curves of the endpoints."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from reprolab.contract import Figure
from reprolab.core.plots import facets, grouped_bars, mean_cis, plt, save_figure

FUSIONS = ("average", "perm", "rotation")
PREFIX = "test_acc_alpha_"


def accuracy_vs_alpha(table: pd.DataFrame, path: Path) -> Path:
    rows = table[table.metric.str.startswith(PREFIX)].copy()
    rows["alpha"] = rows.metric.str[len(PREFIX) :].astype(int) / 100
    fig, panels = facets(
        rows,
        "regime",
        "precision",
        cols=sorted(rows.regime.unique()),
        size=(4.5, 3.3),
        title="{col} [{row}]",
    )
    for panel in panels:
        ax = panel.ax
        for how in FUSIONS:
            sel = panel.data[panel.data.variant == how]
            if sel.empty:
                continue
            alphas = sorted(sel.alpha.unique())
            means, errs = mean_cis(sel[sel.alpha == a].value for a in alphas)
            ax.plot(alphas, means, marker="o", label=how)
            ax.fill_between(alphas, means - errs, means + errs, alpha=0.2)
        ax.set(xlabel="alpha (weight on model B)", ylabel="test accuracy")
        ax.legend(fontsize=7)
    fig.suptitle("fused accuracy vs interpolation weight (mean, 95% CI over pairs)")
    return save_figure(fig, path)


def fusion_accuracy(table: pd.DataFrame, path: Path) -> Path:
    rows = table[table.metric == "test_acc"]
    precisions = list(dict.fromkeys(rows.precision))
    variants = ["endpoints", *FUSIONS]
    fig, panels = facets(
        rows, "regime", cols=sorted(rows.regime.unique()), size=(5, 3.5), title="{col}"
    )
    for panel in panels:
        grouped_bars(panel.ax, panel.data, "variant", variants, "precision", precisions)
        panel.ax.set_ylabel("test accuracy (best endpoint / fused)")
        panel.ax.legend(fontsize=7)
    return save_figure(fig, path)


def learning_curves(trained, path: Path) -> Path:
    names = {0.0: "a", 1.0: "b", 2.0: "base"}
    tasks = sorted({u.param["regime"] for u in trained})
    fig, axes = plt.subplots(1, len(tasks), figsize=(5 * len(tasks), 3.5), squeeze=False)
    for j, task in enumerate(tasks):
        ax = axes[0][j]
        for unit, history in sorted(trained.items(), key=lambda kv: kv[0].sort_key()):
            if unit.param["regime"] != task:
                continue
            for code, name in names.items():
                h = [e for e in history if e.get("model") == code]
                if h:
                    ax.plot(
                        [e["epoch"] for e in h],
                        [e["val_acc"] for e in h],
                        alpha=0.7,
                        marker=".",
                        label=f"s{unit.seed} p{unit.param['pair']} {name}",
                    )
        ax.set_title(f"{task}: validation accuracy per epoch")
        ax.set(xlabel="epoch (fine-tunes count from 0 again)", ylabel="val accuracy")
        ax.legend(fontsize=6, ncol=2)
    return save_figure(fig, path)


FIGURES = (
    Figure(accuracy_vs_alpha, "accuracy_vs_alpha.png"),
    Figure(fusion_accuracy, "fusion_accuracy.png"),
    Figure(learning_curves, "learning_curves.png", "units"),
)
