"""w2s_bregman figures: gain vs misfit per strong class (the paper's scatter, with the
y = x line), gain - misfit by k, and the strong models' training objective."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from reprolab.contract import Figure
from reprolab.core.plots import facets, mean_ci, mean_curves, plt, save_figure
from reprolab.methods.w2s_bregman.config import HEADS


def _order(variants) -> list[str]:
    """k-variants by their number of heads, then the others (convex)."""
    ks = sorted((v for v in variants if v in HEADS), key=HEADS.__getitem__)
    return ks + sorted(v for v in variants if v not in HEADS)


def gain_vs_misfit(table: pd.DataFrame, path: Path, reverse: bool) -> Path:
    """One panel per variant: one point per (task, seed), gain against misfit."""
    suffix = "_rev" if reverse else ""
    fp = table[table.precision == "fp32"]
    wide = fp[fp.metric.isin([f"gain{suffix}", f"misfit{suffix}"])].pivot_table(
        index=["task", "seed", "variant"], columns="metric", values="value"
    )
    wide = wide.reset_index()
    fig, panels = facets(
        wide,
        "variant",
        cols=_order(wide.variant.unique()),
        size=(3.0, 3.2),
        title="{col}",
    )
    for panel in panels:
        ax, rows = panel.ax, panel.data
        ax.scatter(rows[f"misfit{suffix}"], rows[f"gain{suffix}"], s=8, alpha=0.6)
        lo = float(min(rows[f"misfit{suffix}"].min(), rows[f"gain{suffix}"].min(), 0.0))
        hi = float(max(rows[f"misfit{suffix}"].max(), rows[f"gain{suffix}"].max()))
        ax.plot([lo, hi], [lo, hi], "k--", lw=0.8, label="y = x")
        ax.set_xlabel("misfit KL(f_w||f_sw)" if reverse else "misfit KL(f_sw||f_w)", fontsize=8)
    panels[0].ax.set_ylabel(
        "gain KL(f_w||f*) - KL(f_sw||f*)" if reverse else "gain KL(f*||f_w) - KL(f*||f_sw)",
        fontsize=8,
    )
    panels[0].ax.legend(fontsize=7)
    title = "reversed KL arguments (not the paper's inequality)" if reverse else "paper's order"
    fig.suptitle(f"Gain vs misfit per strong class, one point per task x seed ({title})")
    return save_figure(fig, path, dpi=100)


def gap_by_k(table: pd.DataFrame, path: Path) -> Path:
    """Mean gain - misfit (95% t-interval over tasks x seeds) per variant, both orders."""
    fp = table[table.precision == "fp32"]
    variants = _order(fp.variant.unique())
    fig, ax = plt.subplots(figsize=(5, 3.4))
    for offset, metric in ((-0.1, "gain_minus_misfit"), (0.1, "gain_minus_misfit_rev")):
        means, errs = [], []
        for v in variants:
            mean, err = mean_ci(fp[(fp.metric == metric) & (fp.variant == v)].value)
            means.append(mean)
            errs.append(err)
        xs = [i + offset for i in range(len(variants))]
        ax.errorbar(xs, means, yerr=errs, fmt="o", capsize=3, label=metric)
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_xticks(range(len(variants)), variants)
    ax.set_ylabel("gain - misfit (nats)")
    ax.legend(fontsize=7)
    ax.set_title("gain - misfit by strong class")
    return save_figure(fig, path, dpi=100)


def training_curves(histories: dict, path: Path) -> Path:
    """Mean training objective KL(f_strong || f_weak) against step, one line per variant."""
    curves = mean_curves(histories, "train_kl", by=("variant",), x="step")
    fig, ax = plt.subplots(figsize=(5, 3.4))
    for variant in _order(curves):
        ax.plot(curves[variant].index, curves[variant].to_numpy(), label=variant)
    if curves:
        ax.legend(fontsize=7)
    ax.set(xlabel="step", ylabel="train E KL(f_strong || f_weak)", yscale="log")
    return save_figure(fig, path, dpi=100)


FIGURES = (
    Figure(gain_vs_misfit, "gain_vs_misfit.png", "table", {"reverse": False}),
    Figure(gain_vs_misfit, "gain_vs_misfit_reverse_kl.png", "table", {"reverse": True}),
    Figure(gap_by_k, "gap_by_k.png"),
    Figure(training_curves, "train_kl_by_step.png", "units"),
)
