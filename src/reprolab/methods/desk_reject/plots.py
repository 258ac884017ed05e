"""Desk-rejection figures: author-cost distributions per policy, the LP-vs-MILP gap by
instance size, and solve time by instance size (where the NP-hard MILPs show)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from reprolab.contract import Figure
from reprolab.core.plots import mean_cis, plt, save_figure

POLICIES = ("cvpr_rule", "lp_rounded", "milp_average", "milp_worst_case")
FAMILIES = ("conf", "tight")


def _synthetic(table: pd.DataFrame) -> pd.DataFrame:
    rows = table[(table.precision == "fp32") & table.family.isin(FAMILIES)].copy()
    rows["papers"] = rows.papers.astype(int)
    return rows


def cost_distribution(table: pd.DataFrame, path: Path) -> Path:
    """Per family: mean author cost per instance (box), the share of authors by cost
    band (stacked; cost 0 is the rest), and the share of innocent authors hit."""
    rows = _synthetic(table)
    families = [f for f in FAMILIES if f in set(rows.family)]
    fig, axes = plt.subplots(len(families), 3, figsize=(13, 3.6 * len(families)), squeeze=False)
    bands = (
        ("cost_share_low", "(0, 0.5]"),
        ("cost_share_high", "(0.5, 1)"),
        ("cost_share_full", "1"),
    )
    for r, family in enumerate(families):
        fam = rows[rows.family == family]
        policies = [p for p in POLICIES if p in set(fam.variant)]
        ax = axes[r, 0]
        data = [fam[(fam.variant == p) & (fam.metric == "mean_cost")].value for p in policies]
        ax.boxplot(data, tick_labels=policies)
        ax.set_ylabel("mean author cost per instance")
        ax.set_title(f"{family}: mean cost (all sizes, seeds)")
        ax = axes[r, 1]
        bottom = np.zeros(len(policies))
        for metric, label in bands:
            share = np.array(
                [fam[(fam.variant == p) & (fam.metric == metric)].value.mean() for p in policies]
            )
            ax.bar(policies, share, bottom=bottom, label=f"cost {label}")
            bottom += share
        ax.set(ylabel="share of authors", title=f"{family}: authors with cost > 0")
        ax.legend(fontsize=7)
        ax = axes[r, 2]
        hit = fam[fam.metric == "innocent_hit_frac"]
        means, errs = mean_cis(hit[hit.variant == p].value for p in policies)
        ax.bar(policies, means, yerr=errs, capsize=3)
        ax.set_ylabel("share of innocent authors hit")
        ax.set_title(f"{family}: innocent authors hit (95% CI)")
        for a in axes[r]:
            a.tick_params(axis="x", labelrotation=20, labelsize=8)
    return save_figure(fig, path)


def gap_vs_size(table: pd.DataFrame, path: Path) -> Path:
    """Mean-cost gaps by instance size: rounded LP - exact MILP (what rounding loses) and
    exact MILP - LP bound (the integrality gap), mean and 95% CI over seeds."""
    rows = _synthetic(table)
    families = [f for f in FAMILIES if f in set(rows.family)]
    fig, axes = plt.subplots(1, len(families), figsize=(5.5 * len(families), 3.8), squeeze=False)
    for ax, family in zip(axes[0], families, strict=True):
        fam = rows[rows.family == family]
        cost = fam[fam.metric == "mean_cost"].pivot_table(
            index=["papers", "seed"], columns="variant", values="value"
        )
        bound = (
            fam[(fam.metric == "lp_bound") & (fam.variant == "lp_rounded")]
            .set_index(["papers", "seed"])
            .value
        )
        curves = {}
        if {"lp_rounded", "milp_average"} <= set(cost.columns):
            curves["rounded LP - MILP"] = (cost.lp_rounded - cost.milp_average).dropna()
            curves["MILP - LP bound"] = (cost.milp_average - bound).dropna()
        curves["CVPR rule - rounded LP"] = (cost.cvpr_rule - cost.lp_rounded).dropna()
        for label, series in curves.items():
            sizes = sorted(series.index.get_level_values("papers").unique())
            means, errs = mean_cis(series.xs(m, level="papers") for m in sizes)
            ax.errorbar(sizes, means, yerr=errs, marker="o", capsize=3, label=label)
        ax.axhline(0.0, color="k", lw=0.6)
        ax.set(xscale="log", xlabel="papers per instance", ylabel="difference in mean author cost")
        ax.set_title(f"{family}: LP vs MILP gap")
        ax.legend(fontsize=7)
    return save_figure(fig, path)


def solve_time(timings: dict, path: Path) -> Path:
    """Solver wall time per instance by size and policy (the units' training timings)."""
    records = [
        {
            "family": unit.param["family"],
            "papers": int(unit.param["papers"]),
            "policy": unit.variant,
            "seconds": t["solve_seconds"],
        }
        for unit, t in timings.items()
        if unit.param["family"] in FAMILIES and "solve_seconds" in t
    ]
    frame = pd.DataFrame(records)
    families = [f for f in FAMILIES if f in set(frame.family)] if len(frame) else []
    fig, axes = plt.subplots(
        1, max(1, len(families)), figsize=(5.5 * max(1, len(families)), 3.8), squeeze=False
    )
    for ax, family in zip(axes[0], families, strict=False):
        fam = frame[frame.family == family]
        for policy in [p for p in POLICIES if p in set(fam.policy)]:
            med = fam[fam.policy == policy].groupby("papers").seconds.median()
            ax.plot(med.index, np.maximum(med.to_numpy(), 1e-5), marker="o", label=policy)
        ax.set(xscale="log", yscale="log", xlabel="papers per instance")
        ax.set(ylabel="solve seconds (median over seeds)", title=f"{family}: solver time")
        ax.legend(fontsize=7)
    return save_figure(fig, path)


FIGURES = (
    Figure(cost_distribution, "cost_distribution.png"),
    Figure(gap_vs_size, "gap_vs_size.png"),
)


RUNTIME_FIGURES = (Figure(solve_time, "solve_time.png", "units"),)
