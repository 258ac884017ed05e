"""LIFT-GS figures: 3D IoU by training signal (all / occluded / visible objects) on
procedural and on mesh scenes, the render-supervised data-scaling curve, pretrain-then-
finetune, rendered query masks next to the teacher masks of a held-out scene, and
training loss by epoch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from reprolab.core.plots import curves_figure, grouped_bars, mean_cis, plt, save_figure
from reprolab.methods.lift_gs.config import FINETUNE

SUBSETS = (("miou", "all"), ("miou_occluded", "occluded"), ("miou_visible", "visible"))


SIGNALS = ("render", "unproj", "unproj_naive", "sup3d")


def _full(table: pd.DataFrame, scenes: str = "procedural") -> pd.DataFrame:
    """Rows of the three signals trained on every training scene of a setting (not the
    scaling units)."""
    rows = table[(table.scenes == scenes) & table.variant.isin(SIGNALS)]
    return rows[rows.n_scenes == rows.n_scenes.max()]


def _signal_units(trained) -> list:
    """The trained units of the three signals on all procedural training scenes."""
    units = [u for u in trained if u.variant in SIGNALS and u.param["scenes"] == "procedural"]
    full = max(int(u.param["n_scenes"]) for u in units)
    return [u for u in units if int(u.param["n_scenes"]) == full]


def miou_by_variant(table: pd.DataFrame, path: Path, scenes: str = "procedural") -> Path:
    rows = _full(table[table.precision == "fp32"], scenes)
    variants = [v for v in SIGNALS if v in set(rows.variant)]
    fig, ax = plt.subplots(figsize=(6, 3.8))
    metrics, labels = zip(*SUBSETS, strict=True)
    grouped_bars(ax, rows, "metric", metrics, "variant", variants, labels)
    ax.set_ylabel("held-out 3D IoU (mean, 95% CI over seeds)")
    ax.set_ylim(0, 1)
    ax.set_title(f"3D instance IoU by training signal ({scenes} scenes)")
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def scaling_curve(table: pd.DataFrame, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for precision, rows in table[table.metric == "miou"].groupby("precision"):
        render = rows[(rows.variant == "render") & (rows.scenes == "procedural")]
        ns = sorted(render.n_scenes.unique())
        means, errs = mean_cis(render[render.n_scenes == n].value for n in ns)
        style = {"lw": 2} if precision == "fp32" else {"lw": 1, "alpha": 0.6, "ls": "--"}
        ax.errorbar(
            ns,
            means,
            yerr=errs,
            capsize=2,
            label=f"render {precision}",
            **style,
        )
    fp = _full(table[(table.metric == "miou") & (table.precision == "fp32")])
    for variant, color in (
        ("unproj", "tab:red"),
        ("unproj_naive", "tab:orange"),
        ("sup3d", "tab:green"),
    ):
        vals = fp[fp.variant == variant].value
        if len(vals):
            ax.axhline(vals.mean(), color=color, ls=":", label=f"{variant} (all scenes, fp32)")
    ax.set_xscale("log", base=2)
    ax.set(xlabel="training scenes (unlabeled, 2D teacher masks only)", ylabel="held-out 3D IoU")
    ax.set_title("Render supervision: data scaling")
    ax.legend(fontsize=7)
    return save_figure(fig, path)


def finetune_bars(table: pd.DataFrame, path: Path) -> Path:
    """Held-out 3D IoU after the same fine-tuning, by pretraining (none, N, 2N unlabeled
    scenes) and for the from-scratch baseline on 2n labeled scenes, per precision."""
    rows = table[(table.metric == "miou") & table.variant.isin(list(FINETUNE))]
    variants = [v for v in FINETUNE if v in set(rows.variant)]
    precisions = sorted(set(rows.precision), key=lambda p: (p != "fp32", p))
    fig, ax = plt.subplots(figsize=(6, 3.8))
    labels = {
        "ft_scratch": "scratch\nn labeled",
        "ft_scratch_2lab": "scratch\n2n labeled",
        "ft_pre1x": "pretrain N\n+ n labeled",
        "ft_pre2x": "pretrain 2N\n+ n labeled",
    }
    grouped_bars(
        ax, rows, "variant", variants, "precision", precisions, [labels[v] for v in variants]
    )
    ax.tick_params(axis="x", labelsize=8)
    ax.set_ylabel("held-out 3D IoU (mean, 95% CI over seeds)")
    ax.set_ylim(0, 1)
    ax.set_title("Render-supervised pretraining, then 3D fine-tuning")
    ax.legend(fontsize=7)
    return save_figure(fig, path)


def _colour(labels: np.ndarray) -> np.ndarray:
    """Label image (-1 background) -> RGB."""
    cmap = plt.get_cmap("tab10")
    out = np.ones((*labels.shape, 3))
    for k in np.unique(labels):
        if k >= 0:
            out[labels == k] = cmap(int(k) % 10)[:3]
    return out


def _rendered_labels(model, scene: dict) -> np.ndarray:
    """Each pixel's query (argmax of the rendered query masks) where coverage > 1/2."""
    import torch

    from reprolab.methods.lift_gs.render import render_views

    points = torch.from_numpy(scene["points"]).float()
    n = len(points)
    intr = scene["intrinsics"]
    intr = (*map(float, intr[:4]), int(intr[4]), int(intr[5]))
    with torch.inference_mode():
        probs = torch.sigmoid(model(points[None]))[0]
        img = render_views(
            points,
            torch.full((n,), float(scene["sigma"])),
            torch.full((n,), 0.9),
            probs,
            torch.from_numpy(scene["R"]),
            torch.from_numpy(scene["t"]),
            intr,
        ).numpy()
    return np.where(img.max(-1) > 0.5, img.argmax(-1), -1)


def rendered_vs_teacher(trained, path: Path, n_views: int = 4) -> Path:
    """Rows: teacher masks (noisy, per-view colours), ground-truth visible objects, and
    the rendered query masks of one model per training signal (lowest seed, all scenes),
    for the first views of held-out scene 0. Query colours are the model's own."""
    chosen = {}
    for unit in sorted(_signal_units(trained), key=lambda u: u.sort_key()):
        chosen.setdefault(unit.variant, unit)
    models = {v: trained.model(u) for v, u in chosen.items()}
    scene = next(iter(models.values())).preview
    V = min(n_views, scene["R"].shape[0])
    rows = [("teacher", None), ("ground truth", None)] + [(v, m) for v, m in models.items()]
    fig, axes = plt.subplots(len(rows), V, figsize=(1.6 * V, 1.6 * len(rows)), squeeze=False)
    rendered = {v: _rendered_labels(m, scene) for v, m in models.items()}
    for r, (name, _) in enumerate(rows):
        for v in range(V):
            if name == "teacher":
                m = scene["masks"][v, : scene["mask_count"][v]]
                lab = np.where(m.any(0), m.argmax(0), -1) if len(m) else -np.ones(m.shape[1:])
            elif name == "ground truth":
                lab = scene["labels"][v]
            else:
                lab = rendered[name][v]
            axes[r, v].imshow(_colour(lab), interpolation="nearest")
            axes[r, v].set_xticks([])
            axes[r, v].set_yticks([])
            if v == 0:
                axes[r, v].set_ylabel(name, fontsize=8)
    fig.suptitle("Held-out scene: rendered query masks vs 2D teacher masks", fontsize=9)
    return save_figure(fig, path)


def loss_curves(trained, path: Path) -> Path:
    histories = {u: trained[u] for u in _signal_units(trained)}
    return curves_figure(
        histories,
        "train_loss",
        path,
        by=("variant",),
        ylabel="training loss (mean over seeds)",
        title="Matched mask loss by training signal",
    )
