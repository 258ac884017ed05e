"""ttba figures: median L2 vs queries per attack; best-k / k_bridge per unit against 2/3;
the victims' validation accuracy by epoch (one victim per (task, seed))."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from reprolab.contract import Figure
from reprolab.core.plots import curves_figure, facets, plt, save_figure
from reprolab.methods.ttba.claims import RATIO_TOLERANCE, TWO_THIRDS

_PREFIX = "l2_at_q"


def l2_vs_queries(table: pd.DataFrame, path: Path) -> Path:
    rows = table[table.metric.str.startswith(_PREFIX)].copy()
    rows["queries"] = [int(m[len(_PREFIX) :]) for m in rows.metric]
    fig, panels = facets(
        rows, "task", "precision", size=(4.8, 3.6), title="{col}, {row}", title_size=10
    )
    for panel in panels:
        ax, sub = panel.ax, panel.data
        for variant in dict.fromkeys(sub.variant):
            g = sub[sub.variant == variant].groupby("queries").value.agg(["mean", "min", "max"])
            ax.plot(g.index, g["mean"], marker=".", label=variant)
            ax.fill_between(g.index, g["min"], g["max"], alpha=0.15)
        ax.set_xlabel("queries (band: min-max over seeds)", fontsize=8)
        ax.set_ylabel("median L2 of best adversarial")
        ax.legend(fontsize=8)
    return save_figure(fig, path)


def k_ratios(table: pd.DataFrame, path: Path) -> Path:
    ttba = table[table.variant == "ttba"]
    wide = ttba[ttba.metric.isin(["k_ratio_median", "k_ratio_n"])].pivot_table(
        index=["task", "seed", "precision"], columns="metric", values="value"
    )
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    ax.axhspan(TWO_THIRDS - RATIO_TOLERANCE, TWO_THIRDS + RATIO_TOLERANCE, color="g", alpha=0.1)
    ax.axhline(TWO_THIRDS, color="g", ls="--", lw=1, label="2/3 (band: claim tolerance)")
    if "k_ratio_n" in wide:
        wide = wide[wide.k_ratio_n > 0].reset_index()
        groups = list(dict.fromkeys(zip(wide.task, wide.precision, strict=True)))
        for i, (task, precision) in enumerate(groups):
            g = wide[(wide.task == task) & (wide.precision == precision)]
            ax.scatter([i] * len(g), g.k_ratio_median, s=18, label=None)
        ax.set_xticks(range(len(groups)), [f"{t}\n{p}" for t, p in groups], fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_ylabel("median best-k / k_bridge per unit")
    ax.set_title("TtBA: best k on a grid vs the bridge k", fontsize=10)
    ax.legend(fontsize=8)
    return save_figure(fig, path)


# ``trained`` holds the victims only (the attacks train nothing).
FIGURES = (
    Figure(l2_vs_queries, "median_l2_vs_queries.png"),
    Figure(k_ratios, "best_k_over_k_bridge.png"),
    Figure(
        curves_figure,
        "victim_val_acc_by_epoch.png",
        "units",
        dict(
            key="val_acc",
            ylabel="victim accuracy on the validation split",
            title="Victim CNN training (mean over seeds)",
            title_size=10,
            marker=".",
        ),
    ),
)
