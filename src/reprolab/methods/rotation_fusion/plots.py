"""Rotation-fusion figures: test accuracy of each fusion against the weight alpha (every
precision), headline fused accuracy per regime, learning curves of the endpoints."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from reprolab.core.plots import grouped_bars, save_figure  # noqa: E402
from reprolab.core.stats import t_interval  # noqa: E402

FUSIONS = ("average", "perm", "rotation")
PREFIX = "test_acc_alpha_"


def _ci(vals: np.ndarray) -> tuple[float, float]:
    iv = t_interval(vals)
    return iv.mean, (0.0 if not np.isfinite(iv.high) else iv.high - iv.mean)


def accuracy_vs_alpha(table: pd.DataFrame, path: Path) -> Path:
    rows = table[table.metric.str.startswith(PREFIX)].copy()
    rows["alpha"] = rows.metric.str[len(PREFIX) :].astype(int) / 100
    tasks = sorted(rows.regime.unique())
    precisions = list(dict.fromkeys(rows.precision))
    fig, axes = plt.subplots(
        len(precisions),
        len(tasks),
        figsize=(4.5 * len(tasks), 3.3 * len(precisions)),
        squeeze=False,
    )
    for i, precision in enumerate(precisions):
        for j, task in enumerate(tasks):
            ax = axes[i][j]
            for how in FUSIONS:
                sel = rows[
                    (rows.regime == task) & (rows.variant == how) & (rows.precision == precision)
                ]
                if sel.empty:
                    continue
                alphas = sorted(sel.alpha.unique())
                stats = [_ci(sel[sel.alpha == a].value.to_numpy()) for a in alphas]
                means = np.array([s[0] for s in stats])
                errs = np.array([s[1] for s in stats])
                ax.plot(alphas, means, marker="o", label=how)
                ax.fill_between(alphas, means - errs, means + errs, alpha=0.2)
            ax.set_title(f"{task} [{precision}]", fontsize=9)
            ax.set_xlabel("alpha (weight on model B)")
            ax.set_ylabel("test accuracy")
            ax.legend(fontsize=7)
    fig.suptitle("fused accuracy vs interpolation weight (mean, 95% CI over pairs)")
    fig.tight_layout()
    return save_figure(fig, path)


def fusion_accuracy(table: pd.DataFrame, path: Path) -> Path:
    rows = table[table.metric == "test_acc"]
    tasks = sorted(rows.regime.unique())
    precisions = list(dict.fromkeys(rows.precision))
    variants = ["endpoints", *FUSIONS]
    fig, axes = plt.subplots(1, len(tasks), figsize=(5 * len(tasks), 3.5), squeeze=False)
    for j, task in enumerate(tasks):
        ax = axes[0][j]
        series = {
            precision: [
                _ci(
                    rows[
                        (rows.regime == task) & (rows.variant == v) & (rows.precision == precision)
                    ].value.to_numpy()
                )
                if v in set(rows.variant)
                else (np.nan, 0.0)
                for v in variants
            ]
            for precision in precisions
        }
        grouped_bars(ax, variants, series)
        ax.set_title(task)
        ax.set_ylabel("test accuracy (best endpoint / fused)")
        ax.legend(fontsize=7)
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
