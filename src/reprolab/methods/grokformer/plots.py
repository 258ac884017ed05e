"""grokformer figures: learned filter responses against the targets, filter-fit error per
response, and node accuracy against homophily (means with 95% t-intervals)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from reprolab.core.plots import mean_cis, plt, save_figure
from reprolab.methods.grokformer.config import FILTER_VARIANTS, NODE_VARIANTS
from reprolab.methods.grokformer.graphs import RESPONSES, response


def accuracy_vs_homophily(table: pd.DataFrame, path: Path) -> Path:
    fp = table[(table.precision == "fp32") & (table.metric == "acc")]
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for variant in [v for v in NODE_VARIANTS if v in set(fp.variant)]:
        rows = fp[fp.variant == variant]
        hs = sorted(rows.homophily.dropna().unique())
        means, errs = mean_cis(rows[rows.homophily == h].value for h in hs)
        lw = 1.8 if variant == "grokformer" else 1.0
        ax.errorbar(hs, means, yerr=errs, marker="o", ms=3, capsize=2, lw=lw, label=variant)
    ax.set(xlabel="requested edge homophily h", ylabel="test accuracy")
    ax.set_ylim(0.0, 1.02)  # intervals of two seeds can reach past [0, 1]
    ax.legend(fontsize=7, ncol=2)
    ax.set_title("CSBM node classification (mean, 95% CI over draws x seeds)", fontsize=9)
    return save_figure(fig, path, dpi=100)


def filter_errors(table: pd.DataFrame, path: Path) -> Path:
    fp = table[(table.precision == "fp32") & (table.metric == "sse")]
    responses = [r for r in RESPONSES if r in set(fp.response.dropna())]
    variants = [v for v in FILTER_VARIANTS if v in set(fp.variant)]
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    width = 0.8 / max(1, len(variants))
    for i, variant in enumerate(variants):
        of = fp[fp.variant == variant]
        means, errs = mean_cis(of[of.response == r].value for r in responses)
        xs = np.arange(len(responses)) + (i - (len(variants) - 1) / 2) * width
        ax.bar(xs, means, width, yerr=errs, label=variant)
    ax.set_xticks(range(len(responses)), responses)
    ax.set(yscale="log", ylabel="held-out SSE per image")
    ax.legend(fontsize=7)
    return save_figure(fig, path, dpi=100)


def filter_responses(trained, path: Path) -> Path:
    """Learned response at each eigenvalue of the grid (seed of the first unit) against
    the target, one panel per response."""
    from reprolab.methods.grokformer.net import effective_response

    units = [u for u in trained if u.variant in FILTER_VARIANTS]
    responses = [r for r in RESPONSES if any(u.param["response"] == r for u in units)]
    seed = min(u.seed for u in units)
    fig, axes = plt.subplots(1, len(responses), figsize=(3.0 * len(responses), 3.0), squeeze=False)
    for ax, r in zip(axes[0], responses, strict=True):
        grid = np.linspace(0, 2, 200)
        ax.plot(grid, response(r, grid), "k--", lw=1.0, label="target")
        for u in units:
            if u.param["response"] != r or u.seed != seed:
                continue
            model = trained.model(u)
            lam, evecs = model.evals, model.evecs
            resp = effective_response(model, evecs)
            ax.plot(lam.numpy(), resp.numpy(), ".", ms=2, label=u.variant)
        ax.set_title(r, fontsize=9)
        ax.set_xlabel("eigenvalue")
    axes[0][0].legend(fontsize=6)
    fig.suptitle("learned filter responses vs targets")
    return save_figure(fig, path, dpi=100)
