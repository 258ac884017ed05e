"""cot_order figures: pass@1 per SFT arm (mean and 95% interval over seeds) on the own
held-out templates and on HumanEval (when measured), the share of answers that finished
inside the token budget, at every precision; SFT training loss per arm."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from reprolab.contract import Figure
from reprolab.core.plots import mean_cis, plt, save_figure

ARMS = ("code_only", "cot_first", "code_first")
PANELS = (
    ("pass_at_1", "pass@1", "own test split (held-out templates)"),
    ("finished", "share of answers", "answer ended inside the token budget"),
    ("humaneval_pass_at_1", "pass@1", "HumanEval"),
)


def pass_at_1(table: pd.DataFrame, path: Path) -> Path:
    """pass@1 and the share of finished answers per arm; a panel whose metric was not
    measured (HumanEval with ``n_humaneval: 0``) is left out."""
    precisions = list(dict.fromkeys(table.precision))
    finite = table[np.isfinite(table.value.astype(float))]
    panels = [p for p in PANELS if (finite.metric == p[0]).any()]
    if not panels:
        raise ValueError("no finite pass@1 or finished values to plot")
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 3.6), squeeze=False)
    width = 0.8 / max(len(precisions), 1)
    for ax, (metric, ylabel, title) in zip(axes[0], panels, strict=True):
        rows = finite[finite.metric == metric]
        for j, precision in enumerate(precisions):
            seeds = [rows[(rows.variant == a) & (rows.precision == precision)].value for a in ARMS]
            means, errs = mean_cis(seeds)
            x = np.arange(len(ARMS)) + (j - (len(precisions) - 1) / 2) * width
            ax.bar(x, means, width, yerr=errs, capsize=3, label=precision)
            for x_arm, vals in zip(x, seeds, strict=True):  # the seeds themselves
                ax.scatter(np.full(len(vals), x_arm), vals, s=8, color="black", zorder=3)
        ax.set_xticks(np.arange(len(ARMS)), ARMS)
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle("per SFT arm: mean, 95% CI over seeds; dots: seeds")
    return save_figure(fig, path)


def training_loss(trained, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(5, 3.4))
    colors = dict(zip(ARMS, ("tab:gray", "tab:blue", "tab:orange"), strict=True))
    seen = set()
    for unit, history in sorted(trained.items(), key=lambda kv: kv[0].sort_key()):
        if not history:
            continue
        epochs = [h["epoch"] for h in history]
        loss = [h["train_loss"] for h in history]
        label = unit.variant if unit.variant not in seen else None
        seen.add(unit.variant)
        ax.plot(epochs, loss, marker="o", color=colors.get(unit.variant), label=label, alpha=0.7)
    ax.set(xlabel="epoch", ylabel="SFT loss (completion tokens)")
    ax.set_title("LoRA SFT loss per arm (one line per seed)", fontsize=9)
    ax.legend(fontsize=7)
    return save_figure(fig, path)


FIGURES = (
    Figure(pass_at_1, "pass_at_1.png"),
    Figure(training_loss, "training_loss.png", "units"),
)
