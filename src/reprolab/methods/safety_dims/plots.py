"""safety_dims figures: singular value spectra of the shift, per-layer probe accuracy,
effective rank per layer, and the trigger-removal comparison (every precision; means
and 95% intervals over seeds)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from reprolab.contract import Figure
from reprolab.core.plots import facets, grouped_bars, mean_cis, plt, save_figure


def _per_layer(rows: pd.DataFrame, pattern: str) -> dict[int, np.ndarray]:
    """{layer: values over seeds} of the metrics matching ``pattern`` (one group: layer)."""
    out: dict[int, list[float]] = {}
    for metric, group in rows.groupby("metric"):
        m = re.fullmatch(pattern, metric)
        if m:
            out.setdefault(int(m.group(1)), []).extend(group.value.tolist())
    return {k: np.array(v) for k, v in sorted(out.items())}


def _precisions(rows: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(rows.precision)) or ["fp32"]


def _per_precision(rows: pd.DataFrame, title: str):
    """A figure with one panel per precision (titled ``title`` with ``{col}``)."""
    return facets(rows, "precision", cols=_precisions(rows), size=(5, 3.6), title=title)


def spectra(table: pd.DataFrame, path: Path) -> Path:
    rows = table[(table.variant == "safety_tuned") & table.metric.str.startswith("ev_share_")]
    layers = sorted({int(m[-2:]) for m in rows.metric.unique()})
    fig, panels = _per_precision(rows, "shift spectrum [{col}]")
    for panel in panels:
        ax, sel = panel.ax, panel.data
        for layer in layers:
            per = _per_layer(sel, rf"ev_share_(\d+)_l{layer:02d}")
            if not per:
                continue
            mean, err = mean_cis(per.values())
            k = np.arange(1, len(mean) + 1)
            ax.errorbar(k, mean, yerr=err, marker="o", ms=3, capsize=2, label=f"layer {layer}")
        ax.set(yscale="log", xlabel="component k")
        ax.set_ylabel("share of shift variance (eigenvalue / sum)")
        ax.legend(fontsize=7)
    fig.suptitle("singular value spectra of the safety fine-tuning shift (mean, 95% CI over seeds)")
    return save_figure(fig, path)


def probe_accuracy(table: pd.DataFrame, path: Path) -> Path:
    rows = table[table.variant == "safety_tuned"]
    fig, panels = _per_precision(rows, "refusal classification per layer [{col}]")
    for panel in panels:
        ax, sel = panel.ax, panel.data
        for pattern, label in (
            (r"comp0_acc_l(\d+)", "component 0 of the shift"),
            (r"probe_acc_l(\d+)", "difference-of-means refusal probe"),
            (r"rand_acc_l(\d+)", "random directions (the control)"),
        ):
            per = _per_layer(sel, pattern)
            if not per:
                continue
            mean, err = mean_cis(per.values())
            x = np.array(list(per))
            ax.plot(x, mean, marker=".", label=label)
            ax.fill_between(x, np.clip(mean - err, 0, 1), np.clip(mean + err, 0, 1), alpha=0.2)
        ax.axhline(0.5, color="grey", lw=0.8, ls=":", label="chance")
        ax.set_ylim(0.0, 1.02)
        ax.set(xlabel="layer", ylabel="held-out refusal accuracy")
        ax.legend(fontsize=7)
    return save_figure(fig, path)


def effective_rank(table: pd.DataFrame, path: Path) -> Path:
    control = table[table.variant == "control_tuned"]
    rows = table[table.variant == "safety_tuned"]
    taus = sorted(
        {
            int(m.group(1))
            for m in rows.metric.map(lambda s: re.fullmatch(r"eff_rank_(\d+)_l\d+", s)).dropna()
        }
    )
    fig, panels = _per_precision(rows, "effective rank of the shift [{col}]")
    for panel in panels:
        ax, sel = panel.ax, panel.data
        for tau in taus:
            per = _per_layer(sel, rf"eff_rank_{tau}_l(\d+)")
            x = np.array(list(per))
            mean = mean_cis(per.values())[0]
            ax.plot(x, mean, marker=".", label=f"tau = {tau / 100:.1f}")
        ref = control[control.precision == panel.col]
        per = _per_layer(ref, r"eff_rank_90_l(\d+)")
        if per:
            x = np.array(list(per))
            mean = mean_cis(per.values())[0]
            ax.plot(x, mean, color="k", ls="--", label="control fine-tune, tau = 0.9")
        ax.axhline(1, color="k", lw=0.8, ls=":")
        ax.set(yscale="log", xlabel="layer", ylabel="effective rank (mean over seeds)")
        ax.legend(fontsize=7)
    return save_figure(fig, path)


def removal(table: pd.DataFrame, path: Path) -> Path:
    rows = table[table.variant.isin(["remove_top", "remove_random"])]
    precisions = _precisions(rows)
    metrics = ("refusal_score_drop", "refusal_drop")
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.5 * len(metrics), 3.4), squeeze=False)
    variants = ["remove_top", "remove_random"]
    for ax, metric in zip(axes[0], metrics, strict=True):
        grouped_bars(ax, rows[rows.metric == metric], "variant", variants, "precision", precisions)
        ax.axhline(0, color="k", lw=0.8)
        ax.set_title(metric, fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle("trigger-token removal on harmful test prompts (mean, 95% CI over seeds)")
    return save_figure(fig, path)


FIGURES = (
    Figure(spectra, "singular_value_spectra.png"),
    Figure(probe_accuracy, "probe_accuracy_per_layer.png"),
    Figure(effective_rank, "effective_rank_per_layer.png"),
    Figure(removal, "trigger_removal.png"),
)
