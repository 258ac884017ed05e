"""Semi-Clipped figures: recall@k curves per variant (held-out perturbations in held-out
batches), one row per data setting, one column per precision (fp32 and every quantized
one)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from reprolab.core.plots import plt, save_figure

_RELATED = {"sim": "same-pathway", "pbmc": "same-cell-type"}


def recall_curves(table: pd.DataFrame, path: Path, ks) -> Path:
    precisions = list(dict.fromkeys(table.precision))
    settings = list(dict.fromkeys(table.setting)) if "setting" in table else [None]
    fig, axes = plt.subplots(
        len(settings),
        len(precisions),
        figsize=(4.5 * len(precisions), 4 * len(settings)),
        squeeze=False,
    )
    for row, setting in zip(axes, settings, strict=True):
        part = table if setting is None else table[table.setting == setting]
        for ax, prec in zip(row, precisions, strict=True):
            rows = part[part.precision == prec]
            for variant in dict.fromkeys(rows.variant):
                ys = [
                    rows[
                        (rows.variant == variant) & (rows.metric == f"recall_ood_at{k}")
                    ].value.mean()
                    for k in ks
                ]
                ax.plot(ks, ys, marker="o", label=variant)
            ax.set(xlabel="k", ylabel=f"recall@k, {_RELATED.get(setting, 'related')} (OOD)")
            ax.set_title(f"{setting or ''} {prec}".strip())
            ax.legend(fontsize=7)
    return save_figure(fig, path)
