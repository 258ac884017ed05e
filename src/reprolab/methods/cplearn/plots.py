"""cplearn figures: effective rank and code usage against c / f, collapse metrics per
variant, probe accuracy and NMI per variant, and
training curves (distinct codes per batch and the prior-matching term by epoch)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from reprolab.contract import Figure
from reprolab.core.plots import mean_ci, plot_mean_curves, plt, save_figure


def _bars(table: pd.DataFrame, panels: list[tuple[str, str]], title: str, path: Path) -> Path:
    rows = table[table.precision == "fp32"]
    base = rows[rows.variant != "cplearn"]
    if "ratio" in rows.columns and len(base):  # cplearn at the baselines' c / f only
        ratios = sorted(base.ratio.unique())
        rows = rows[rows.ratio.isin(ratios)]
        title = f"{title}, c / f = {', '.join(f'{r:g}' for r in ratios)}"
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), squeeze=False)
    for ax, (metric, label) in zip(axes[0], panels, strict=True):
        r = rows[rows.metric == metric]
        mean = r.groupby(["task", "variant"]).value.mean().unstack("variant")
        err = r.groupby(["task", "variant"]).value.std().unstack("variant").fillna(0.0)
        mean.plot.bar(ax=ax, rot=0, yerr=err, capsize=2)
        ax.set_ylabel(label, fontsize=9)
        ax.set_xlabel("")
        ax.legend(fontsize=7)
    fig.suptitle(f"{title} (fp32; mean and std over seeds)", fontsize=10)
    return save_figure(fig, path)


def collapse_vs_ratio(table: pd.DataFrame, path: Path) -> Path:
    """Effective rank / f, normalised code-usage entropy and codes used against c / f
    (log2 axis), one line per (task, variant), mean and 95% t-interval over seeds.
    The baselines run at one ratio only and show as single points."""
    rows = table[table.precision == "fp32"]
    panels = [
        ("erank_frac", "effective rank / f"),
        ("usage_entropy", "normalised code-usage entropy"),
        ("clusters_used", "clusters (codes) used on the test split"),
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.4 * len(panels), 3.6), squeeze=False)
    markers = {"cplearn": "o", "cplearn_noprior": "s", "barlow_twins": "^"}
    for ax, (metric, label) in zip(axes[0], panels, strict=True):
        r = rows[rows.metric == metric]
        if "ratio" not in r.columns:
            continue
        by = "dataset" if "dataset" in r.columns else "task"  # one task per (dataset, ratio)
        for (task, variant), g in r.groupby([by, "variant"]):
            pts = sorted((float(ratio), *mean_ci(gg.value)) for ratio, gg in g.groupby("ratio"))
            x, m, h = zip(*pts, strict=True)
            ax.errorbar(
                x,
                m,
                yerr=h,
                marker=markers.get(variant, "."),
                capsize=3,
                label=f"{task} / {variant}",
            )
        ax.set_xscale("log", base=2)
        ax.set_xlabel("c / f (codes per embedding dimension)", fontsize=9)
        ax.set_ylabel(label, fontsize=9)
        ax.axvline(8, color="grey", lw=0.8, ls=":")  # the official configuration
        ax.legend(fontsize=6)
    f = rows["f"].dropna().unique() if "f" in rows.columns else []
    fdesc = f"f = {', '.join(str(int(v)) for v in f)}; " if len(f) else ""
    fig.suptitle(
        f"Collapse against c / f ({fdesc}fp32; mean and 95% t-interval over seeds; "
        "dotted: the paper's c / f = 8)",
        fontsize=10,
    )
    return save_figure(fig, path)


def collapse_metrics(table: pd.DataFrame, path: Path) -> Path:
    return _bars(
        table,
        [
            ("usage_entropy", "normalised cluster-usage entropy"),
            ("erank_frac", "effective rank / embedding dim"),
            ("intra_var", "intra-cluster variance (unit vectors)"),
        ],
        "Collapse metrics on the test split",
        path,
    )


def quality(table: pd.DataFrame, path: Path) -> Path:
    return _bars(
        table,
        [
            ("probe_acc", "linear-probe accuracy"),
            ("nmi", "NMI, own clusters (codes / k-means)"),
            ("nmi_kmeans", "NMI, k-means on embeddings"),
        ],
        "Downstream quality on the test split",
        path,
    )


def training_curves(histories: dict, path: Path) -> Path:
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for ax, metric, label in (
        (axes[0], "codes_used_frac", "distinct codes per batch / batch size"),
        (axes[1], "prior", "KL(batch-mean assignment || uniform)"),
    ):
        # barlow_twins logs neither: only cplearn's variants have lines
        plot_mean_curves(ax, histories, metric, by=("task", "variant"), marker=".")
        if ax.lines:
            ax.set_xlabel("epoch")
            ax.set_ylabel(label, fontsize=9)
            ax.legend(fontsize=7)
    fig.suptitle("Training (mean over seeds)", fontsize=10)
    return save_figure(fig, path)


FIGURES = (
    Figure(collapse_vs_ratio, "collapse_vs_ratio.png"),
    Figure(collapse_metrics, "collapse_metrics.png"),
    Figure(quality, "probe_and_nmi.png"),
    Figure(training_curves, "training_curves.png", "units"),
)
