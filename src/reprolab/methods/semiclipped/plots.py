"""Semi-Clipped figures: recall@k curves per variant (held-out perturbations in held-out
batches), fp32 and every quantized precision."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from reprolab.core.plots import save_figure  # noqa: E402


def recall_curves(table: pd.DataFrame, path: Path, ks) -> Path:
    precisions = list(dict.fromkeys(table.precision))
    fig, axes = plt.subplots(1, len(precisions), figsize=(4.5 * len(precisions), 4), squeeze=False)
    for ax, prec in zip(axes[0], precisions, strict=True):
        rows = table[table.precision == prec]
        for variant in dict.fromkeys(rows.variant):
            ys = [
                rows[(rows.variant == variant) & (rows.metric == f"recall_ood_at{k}")].value.mean()
                for k in ks
            ]
            ax.plot(ks, ys, marker="o", label=variant)
        ax.set_xlabel("k")
        ax.set_ylabel("recall@k of same-pathway perturbations (OOD)")
        ax.set_title(prec)
        ax.legend(fontsize=7)
    return save_figure(fig, path)
