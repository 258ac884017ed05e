"""cplearn figures: collapse metrics per variant, probe accuracy and NMI per variant, and
training curves (distinct codes per batch and the prior-matching term by epoch)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from reprolab.core.plots import plot_mean_curves, save_figure  # noqa: E402


def _bars(table: pd.DataFrame, panels: list[tuple[str, str]], title: str, path: Path) -> Path:
    rows = table[table.precision == "fp32"]
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
