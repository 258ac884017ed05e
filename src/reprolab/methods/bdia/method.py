"""BDIA hooks for the pipeline stages (see reprolab.contract.MethodHooks).

Units: one tiny ViT per (dataset, variant, seed); variants ``standard`` and ``bdia``
train the same architecture. Evaluation is at gamma = 0 (the standard forward; for BDIA
with block inputs on its fixed-point grid, ``net.FixedPointViT``).
The training-time measurements (activation bytes held for backward, per epoch) come from
the history; the reconstruction check runs the BDIA forward and inverse on the evaluated
model's own blocks (fp32, or the quantized blocks at int8 / RTN / Bit-DGDM).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from reprolab.contract import Run, TrainedUnit, Unit, figures_hook
from reprolab.core import datasets

if TYPE_CHECKING:
    import torch

# ---------------------------------------------------------------- prepare


def prepare(run: Run, raw_dir: Path) -> tuple[dict, dict]:
    return datasets.prepare_image_tasks(run)


# ---------------------------------------------------------------- train


def units(run: Run, tasks: Sequence[str]) -> list[Unit]:
    return run.default_units(tasks)


def _n_features(data: dict) -> int:
    return int(np.asarray(data["x_train"]).shape[1])


def train_unit(
    run: Run, unit: Unit, data: dict, resume_dir: Path, progress: Callable[[str], None]
) -> TrainedUnit:
    from reprolab.core.training import train_classifier
    from reprolab.methods.bdia.module import ViTClassifier
    from reprolab.methods.bdia.net import build_vit

    cfg = run.cfg

    def build() -> ViTClassifier:  # after the seed: one initial ViT for every variant
        net = build_vit(_n_features(data), cfg)
        return ViTClassifier(
            net, unit.variant, cfg.bits, unit.seed, cfg.lr, cfg.epochs, cfg.optimizer
        )

    return train_classifier(
        run, unit, data, resume_dir, build, batch_size=cfg.batch_size, epochs=cfg.epochs
    )


def restore(run: Run, unit: Unit, data: dict, state: dict) -> torch.nn.Module:
    from reprolab.core.training import restore_module
    from reprolab.methods.bdia.net import FixedPointViT, build_vit
    from reprolab.methods.bdia.revvit import RevViT

    cfg = run.cfg
    net = restore_module(build_vit(_n_features(data), cfg), state)
    if unit.variant == "bdia":
        return FixedPointViT(net, cfg.bits).eval()
    return (RevViT(net) if unit.variant == "revvit" else net).eval()


# ---------------------------------------------------------------- evaluate


def evaluate_unit(run: Run, model, unit: Unit, data: dict, history: list[dict]) -> dict[str, float]:
    import torch

    from reprolab.methods.bdia.check import reconstruction_check

    cfg = run.cfg
    out = {}
    with torch.inference_mode():
        for part in ("train", "val", "test"):
            x, y = datasets.part_tensors(data, part)
            out[f"{part}_acc"] = float((model(x).argmax(-1) == y).float().mean())
    # training-time measurement: the largest per-step count of any epoch
    out["saved_mb"] = max(h["saved_mb"] for h in history)
    if unit.variant == "bdia":
        x, _ = datasets.part_tensors(data, "test")
        with torch.inference_mode():
            embedded = model.embed(x[:256])
        out |= reconstruction_check(
            model.blocks, embedded, cfg.bits, cfg.recon_batches, cfg.recon_batch, unit.seed
        )
    return out


example_input = datasets.example_rows(256)
calibration_inputs = datasets.calibration_rows(512)


plots = figures_hook()
