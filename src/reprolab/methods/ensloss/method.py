"""EnsLoss hooks for the pipeline stages (see reprolab.contract.MethodHooks)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from reprolab.contract import TrainedUnit, Unit
from reprolab.core import datasets
from reprolab.methods.ensloss.config import EnsLossConfig

# Each stage is its own process: import torch / Lightning only in the hooks that use
# them, so `prepare` pays for neither and `evaluate` does not pay for Lightning.
if TYPE_CHECKING:
    import pandas as pd
    import torch

# ---------------------------------------------------------------- prepare


def class_pairs(n_pairs: int, pair_seed: int) -> list[tuple[int, int]]:
    """``n_pairs`` of the 45 digit pairs, in a fixed pseudo-random order."""
    pairs = list(itertools.combinations(range(10), 2))
    order = np.random.default_rng(pair_seed).permutation(len(pairs))
    return [pairs[i] for i in order[:n_pairs]]


def _binary_task(x, y01, cfg: EnsLossConfig, seed: int, scale: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    if cfg.max_rows and len(y01) > cfg.max_rows:
        keep = np.sort(rng.choice(len(y01), cfg.max_rows, replace=False))
        x, y01 = x[keep], y01[keep]
    tr, va, te = datasets.stratified_split(y01, cfg.split, seed)
    y_train = y01[tr].copy()
    flip = rng.random(len(y_train)) < cfg.label_noise  # noisy training labels only
    y_train[flip] = 1 - y_train[flip]
    out = {
        "y_train": y_train,
        "y_train_clean": y01[tr],
        "y_val": y01[va],
        "y_test": y01[te],
    }
    if scale == "image":  # keep uint8 on disk; scaled to [0, 1] at load
        out |= {"x_train": x[tr], "x_val": x[va], "x_test": x[te]}
    else:  # standardise with training statistics only
        mu, sd = x[tr].mean(0), x[tr].std(0) + 1e-8
        out |= {
            k: ((x[i] - mu) / sd).astype(np.float32)
            for k, i in (("x_train", tr), ("x_val", va), ("x_test", te))
        }
    return out


def prepare(
    cfg: EnsLossConfig, seeds: Sequence[int], raw_dir: Path, assets: dict[str, Path]
) -> tuple[dict, dict]:
    sources = {}
    for name in cfg.datasets:  # load (or fail with install instructions) before building
        if name in datasets.TABULAR_SOURCES:
            sources[name] = datasets.TABULAR_SOURCES[name](raw_dir)
        else:
            sources[name] = datasets.image_asset(assets["images"], name)
    tasks: dict[str, dict[str, np.ndarray]] = {}
    sizes = {}
    for name, (x, y) in sources.items():
        if name in datasets.TABULAR_SOURCES:
            tasks[name] = _binary_task(x, y, cfg, cfg.data_seed, "tabular")
        else:
            for a, b in class_pairs(cfg.n_pairs, cfg.pair_seed):
                rows = (y == a) | (y == b)
                task = f"{name}-{a}v{b}"
                tasks[task] = _binary_task(
                    x[rows], (y[rows] == b).astype(np.int64), cfg, cfg.data_seed, "image"
                )
    for task, arrays in tasks.items():
        sizes[task] = int(len(arrays["y_train"]))
    return tasks, {"sizes": sizes, "label_noise": cfg.label_noise}


# ---------------------------------------------------------------- train


def units(cfg: EnsLossConfig, seeds: Sequence[int], tasks: Sequence[str]) -> list[Unit]:
    from reprolab.methods.ensloss import SPEC

    variants = SPEC.selected_variants(cfg)
    return [Unit(t, v, s) for t in sorted(tasks) for s in seeds for v in variants]


def train_unit(
    unit: Unit, cfg: EnsLossConfig, data: dict, resume_dir: Path, progress: Callable[[str], None]
) -> TrainedUnit:
    import torch

    from reprolab.core.training import fit_supervised
    from reprolab.methods.ensloss.module import BinaryClassifier

    x_tr, y_tr = datasets.part_tensors(data, "train")
    x_va, y_va = datasets.part_tensors(data, "val")
    torch.manual_seed(unit.seed)  # initial weights: same init for every loss under a seed
    module = BinaryClassifier(
        in_dim=x_tr.shape[1],
        hidden=cfg.hidden,
        depth=cfg.depth,
        loss=unit.variant,
        lr=cfg.lr,
        momentum=cfg.momentum,
        weight_decay=cfg.weight_decay,
        epochs=cfg.epochs,
        seed=unit.seed,
    )
    fit_supervised(
        module, (x_tr, y_tr), (x_va, y_va), cfg.batch_size, cfg.epochs, unit.seed, resume_dir
    )
    return TrainedUnit(state=module.net.state_dict(), history=module.history)


def restore(unit: Unit, cfg: EnsLossConfig, data: dict, state: dict) -> torch.nn.Module:
    from reprolab.methods.ensloss.net import mlp

    net = mlp(np.asarray(data["x_train"]).shape[1], cfg.hidden, cfg.depth)
    net.load_state_dict(state)
    return net.eval()


# ---------------------------------------------------------------- evaluate


def evaluate_unit(
    model: torch.nn.Module, unit: Unit, cfg: EnsLossConfig, data: dict, history: list[dict]
) -> dict[str, float]:
    import torch

    from reprolab.methods.ensloss.net import accuracy

    out = {}
    for part in ("train", "val", "test"):
        x, y = datasets.part_tensors(data, part)
        if part == "train":  # accuracy on the clean labels: how well it fits the truth
            y = torch.from_numpy(np.asarray(data["y_train_clean"])).long()
        out[f"{part}_acc"] = accuracy(model, x, y)
    return out


def example_input(unit: Unit, cfg: EnsLossConfig, data: dict) -> torch.Tensor:
    x, _ = datasets.part_tensors(data, "test")
    return x[:256]


def calibration_inputs(unit: Unit, cfg: EnsLossConfig, data: dict, model) -> list:
    """Training rows (never test rows) calibrate the quantizers' activation thresholds."""
    x, _ = datasets.part_tensors(data, "train")
    return [x[:512]]


def plots(table: pd.DataFrame, out_dir: Path, histories: dict[Unit, list[dict]]) -> list[Path]:
    from reprolab.methods.ensloss import plots as figs

    return [
        figs.accuracy_by_pair(table, out_dir / "accuracy_by_pair.png"),
        figs.quantized_vs_fp32(table, out_dir / "quantized_vs_fp32.png"),
        figs.validation_curves(histories, out_dir / "val_acc_by_epoch.png"),
    ]
