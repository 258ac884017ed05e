"""Rotation-fusion figures: test accuracy of each fusion against the weight alpha (every
precision), headline fused accuracy per regime, learning curves of the endpoints."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from reprolab.contract import Figure
from reprolab.core.plots import facets, grouped_bars, mean_ci, plt, save_figure

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
        title_size=9,
    )
    for panel in panels:
        ax = panel.ax
        for how in FUSIONS:
            sel = panel.data[panel.data.variant == how]
            if sel.empty:
                continue
            alphas = sorted(sel.alpha.unique())
            stats = [mean_ci(sel[sel.alpha == a].value.to_numpy()) for a in alphas]
            means = np.array([s[0] for s in stats])
            errs = np.array([s[1] for s in stats])
            ax.plot(alphas, means, marker="o", label=how)
            ax.fill_between(alphas, means - errs, means + errs, alpha=0.2)
        ax.set_xlabel("alpha (weight on model B)")
        ax.set_ylabel("test accuracy")
        ax.legend(fontsize=7)
    fig.suptitle("fused accuracy vs interpolation weight (mean, 95% CI over pairs)")
    fig.tight_layout()
    return save_figure(fig, path)


def fusion_accuracy(table: pd.DataFrame, path: Path) -> Path:
    rows = table[table.metric == "test_acc"]
    precisions = list(dict.fromkeys(rows.precision))
    variants = ["endpoints", *FUSIONS]
    fig, panels = facets(
        rows, "regime", cols=sorted(rows.regime.unique()), size=(5, 3.5), title="{col}"
    )
    for panel in panels:
        sel = panel.data
        series = {
            precision: [
                mean_ci(sel[(sel.variant == v) & (sel.precision == precision)].value.to_numpy())
                if v in set(rows.variant)
                else (np.nan, 0.0)
                for v in variants
            ]
            for precision in precisions
        }
        grouped_bars(panel.ax, variants, series)
        panel.ax.set_ylabel("test accuracy (best endpoint / fused)")
        panel.ax.legend(fontsize=7)
    fig.tight_layout()
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
        ax.set_xlabel("epoch (fine-tunes count from 0 again)")
        ax.set_ylabel("val accuracy")
        ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    return save_figure(fig, path)


FIGURES = (
    Figure(accuracy_vs_alpha, "accuracy_vs_alpha.png"),
    Figure(fusion_accuracy, "fusion_accuracy.png"),
    Figure(learning_curves, "learning_curves.png", "units"),
)
