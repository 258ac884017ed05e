"""crane figures: accuracy and validity per decoder (mean over seeds with a 95%
t-interval, one panel per task and precision); the grammar's wall time per constrained
step (a runtime figure)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from reprolab.contract import Figure
from reprolab.core.plots import facets, plt, save_figure
from reprolab.evidence.judging.stats import t_interval

ORDER = ("unconstrained_direct", "constrained_direct", "unconstrained_cot", "crane")


def per_decoder(table: pd.DataFrame, metric: str, path: Path) -> Path:
    rows = table[(table.metric == metric) & table.variant.isin(ORDER)]
    fig, panels = facets(
        rows,
        "task",
        "precision",
        cols=list(dict.fromkeys(rows.task)) or ["(none)"],
        rows=list(dict.fromkeys(rows.precision)) or ["fp32"],
        size=(4.6, 3.4),
        title="{col}, {row} (95% t-interval over seeds)",
    )
    for panel in panels:
        ax, sub = panel.ax, panel.data
        for i, variant in enumerate(ORDER):
            v = sub[sub.variant == variant].value.to_numpy(dtype=float)
            if v.size == 0:
                continue
            iv = t_interval(v)
            lo, hi = (iv.low, iv.high) if np.isfinite(iv.low) else (iv.mean, iv.mean)
            ax.bar(i, iv.mean, color="C3" if variant == "crane" else "C0", alpha=0.6)
            ax.errorbar(i, iv.mean, yerr=[[iv.mean - lo], [hi - iv.mean]], color="k", capsize=4)
            ax.scatter(np.full(v.size, i) + 0.15, v, s=10, color="k", zorder=3)
        ax.set_xticks(range(len(ORDER)), [o.replace("_", "\n") for o in ORDER], fontsize=7)
        ax.set_ylim(-0.05, 1.05)
        ax.set_ylabel(metric)
    return save_figure(fig, path)


def step_time(table: pd.DataFrame, path: Path) -> Path:
    rows = table[(table.metric == "constrained_step_ms") & table.variant.isin(ORDER)]
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    groups = list(dict.fromkeys(zip(rows.variant, rows.precision, strict=True)))
    for i, (variant, precision) in enumerate(groups):
        v = rows[(rows.variant == variant) & (rows.precision == precision)].value
        ax.scatter(np.full(len(v), i), v, s=12)
    ax.set_xticks(range(len(groups)), [f"{v}\n{p}" for v, p in groups], fontsize=7)
    ax.set_ylabel("ms of grammar work per constrained step")
    ax.set_title("Check (and mask on failure) per token inside << >>", fontsize=9)
    return save_figure(fig, path)


FIGURES = (
    Figure(per_decoder, "accuracy_per_decoder.png", "table", {"metric": "accuracy"}),
    Figure(per_decoder, "validity_per_decoder.png", "table", {"metric": "validity"}),
)


RUNTIME_FIGURES = (Figure(step_time, "constrained_step_ms.png"),)
