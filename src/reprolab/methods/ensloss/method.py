"""EnsLoss hooks for the pipeline stages (see reprolab.contract.MethodHooks)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from reprolab.contract import Run, TrainedUnit, TrainedUnits, Unit
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


def flip_symmetric(y01: np.ndarray, rate: float, rng: np.random.Generator) -> np.ndarray:
    """Symmetric label noise on 0/1 labels: exactly ``round(rate * n_c)`` labels of each
    class c, chosen at random, flipped to the other class (so the realised rate is the
    nominal one, in each class)."""
    noisy = y01.copy()
    for label in (0, 1):
        idx = np.flatnonzero(y01 == label)
        flip = rng.choice(idx, int(round(rate * len(idx))), replace=False)
        noisy[flip] = 1 - label
    return noisy


def _binary_task(
    x,
    y01,
    max_rows: int,
    split,
    label_noise: float,
    seed: int,
    scale: str,
    exact_noise: bool = False,
) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    if max_rows and len(y01) > max_rows:
        keep = np.sort(rng.choice(len(y01), max_rows, replace=False))
        x, y01 = x[keep], y01[keep]
    tr, va, te = datasets.stratified_split(y01, split, seed)
    if exact_noise:  # the CNN setting: symmetric noise at exactly the nominal rate
        y_train = flip_symmetric(y01[tr], label_noise, rng)
    else:  # the MLP setting: each label flipped with probability label_noise
        y_train = y01[tr].copy()
        flip = rng.random(len(y_train)) < label_noise  # noisy training labels only
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


def cnn_tasks(cfg: EnsLossConfig) -> dict[str, tuple[str, int, int]]:
    """The CNN setting's tasks: name -> (image dataset, class a, class b). Named apart
    from the MLP setting's pairs (both may hold the same pair, prepared differently)."""
    if "cnn" not in cfg.settings:
        return {}
    return {
        f"cnn-{name}-{a}v{b}": (name, a, b)
        for name in cfg.cnn_datasets
        for a, b in class_pairs(cfg.cnn_n_pairs, cfg.pair_seed)
    }


def prepare(run: Run, raw_dir: Path) -> tuple[dict, dict]:
    cfg = run.cfg
    wanted = (list(cfg.datasets) if "mlp" in cfg.settings else []) + (
        list(cfg.cnn_datasets) if "cnn" in cfg.settings else []
    )
    sources = {}
    for name in dict.fromkeys(wanted):  # load (or fail with install instructions) first
        if name in datasets.TABULAR_SOURCES:
            sources[name] = datasets.TABULAR_SOURCES[name](raw_dir)
        else:
            sources[name] = datasets.image_asset(run.asset("images"), name)
    tasks: dict[str, dict[str, np.ndarray]] = {}
    if "mlp" in cfg.settings:
        for name in cfg.datasets:
            x, y = sources[name]
            if name in datasets.TABULAR_SOURCES:
                tasks[name] = _binary_task(
                    x, y, cfg.max_rows, cfg.split, cfg.label_noise, cfg.data_seed, "tabular"
                )
                continue
            for a, b in class_pairs(cfg.n_pairs, cfg.pair_seed):
                rows = (y == a) | (y == b)
                tasks[f"{name}-{a}v{b}"] = _binary_task(
                    x[rows],
                    (y[rows] == b).astype(np.int64),
                    cfg.max_rows,
                    cfg.split,
                    cfg.label_noise,
                    cfg.data_seed,
                    "image",
                )
    for task, (name, a, b) in cnn_tasks(cfg).items():
        x, y = sources[name]
        rows = (y == a) | (y == b)
        tasks[task] = _binary_task(
            x[rows],
            (y[rows] == b).astype(np.int64),
            cfg.cnn_max_rows,
            cfg.cnn_split,
            cfg.cnn_label_noise,
            cfg.data_seed,
            "image",
            exact_noise=True,
        )
    sizes = {task: int(len(arrays["y_train"])) for task, arrays in tasks.items()}
    noise = {
        task: float((arrays["y_train"] != arrays["y_train_clean"]).mean())
        for task, arrays in tasks.items()
    }
    return tasks, {"sizes": sizes, "label_noise": noise}


# ---------------------------------------------------------------- train


def setting_of(unit: Unit) -> str:
    """``cnn`` for the CNN setting's units (unit parameter ``setting``), else ``mlp``:
    the MLP units carry no parameter, so their ids are those of the earlier runs."""
    return str(unit.param.get("setting", "mlp"))


def units(run: Run, tasks: Sequence[str]) -> list[Unit]:
    """Every task x loss x seed; the CNN setting's units carry ``setting=cnn``."""
    cnn = cnn_tasks(run.cfg)
    return [
        Unit(u.task, u.variant, u.seed, {"setting": "cnn"}) if u.task in cnn else u
        for u in run.default_units(tasks)
    ]


def build_net(unit: Unit, cfg: EnsLossConfig, n_features: int) -> torch.nn.Module:
    """The untrained scorer of a unit's setting (initial weights from torch's RNG)."""
    from reprolab.methods.ensloss.net import cnn, image_side, mlp

    if setting_of(unit) == "cnn":
        return cnn(image_side(n_features), cfg.cnn_channels, cfg.cnn_hidden)
    return mlp(n_features, cfg.hidden, cfg.depth)


def train_unit(
    run: Run, unit: Unit, data: dict, resume_dir: Path, progress: Callable[[str], None]
) -> TrainedUnit:
    from reprolab.core.training import train_classifier
    from reprolab.methods.ensloss.module import ScoreClassifier

    cfg = run.cfg
    if setting_of(unit) == "cnn":
        epochs, batch_size = cfg.cnn_epochs, cfg.cnn_batch_size
        lr, weight_decay = cfg.cnn_lr, cfg.cnn_weight_decay
        clip = cfg.cnn_clip_exp if unit.variant == "exp" else 0.0
    else:
        epochs, batch_size = cfg.epochs, cfg.batch_size
        lr, weight_decay = cfg.lr, cfg.weight_decay
        clip = cfg.clip_exp if unit.variant == "exp" else 0.0

    def build() -> ScoreClassifier:  # after the seed: the same init for every loss
        net = build_net(unit, cfg, np.asarray(data["x_train"]).shape[1])
        return ScoreClassifier(
            net, unit.variant, lr, cfg.momentum, weight_decay, epochs, unit.seed, clip_norm=clip
        )

    return train_classifier(
        run, unit, data, resume_dir, build, batch_size=batch_size, epochs=epochs
    )


def restore(run: Run, unit: Unit, data: dict, state: dict) -> torch.nn.Module:
    from reprolab.core.training import restore_module

    return restore_module(build_net(unit, run.cfg, np.asarray(data["x_train"]).shape[1]), state)


# ---------------------------------------------------------------- evaluate


def evaluate_unit(
    run: Run, model: torch.nn.Module, unit: Unit, data: dict, history: list[dict]
) -> dict[str, float]:
    """Test, validation and training accuracy on clean labels; training accuracy on the
    noisy labels it was fitted to, and the share of the flipped labels it reproduces
    (how much of the noise it memorised)."""
    import torch

    from reprolab.methods.ensloss.net import accuracy, predict

    out = {}
    for part in ("val", "test"):
        out[f"{part}_acc"] = accuracy(model, *datasets.part_tensors(data, part))
    x, y_noisy = datasets.part_tensors(data, "train")
    y_clean = torch.from_numpy(np.asarray(data["y_train_clean"])).long()
    pred = predict(model, x)  # one pass over the training images for the three metrics
    out["train_acc"] = float((pred == y_clean).float().mean())  # how well it fits the truth
    out["train_acc_noisy"] = float((pred == y_noisy).float().mean())  # ... its labels
    flipped = y_noisy != y_clean
    if bool(flipped.any()):
        out["noise_fit"] = float((pred[flipped] == y_noisy[flipped]).float().mean())
    return out


example_input = datasets.example_rows(256)
calibration_inputs = datasets.calibration_rows(512)


def plots(run: Run, table: pd.DataFrame, out_dir: Path, trained: TrainedUnits) -> list[Path]:
    from reprolab.methods.ensloss import plots as figs

    by_setting = {
        setting: {u: h for u, h in trained.items() if setting_of(u) == setting}
        for setting in ("mlp", "cnn")
    }
    out = [
        figs.accuracy_by_pair(table, out_dir / "accuracy_by_pair.png"),
        figs.quantized_vs_fp32(table, out_dir / "quantized_vs_fp32.png"),
    ]
    if by_setting["mlp"]:
        out.append(figs.validation_curves(by_setting["mlp"], out_dir / "val_acc_by_epoch.png"))
    if by_setting["cnn"]:  # the paper's regime: fitting the noisy labels, and what it costs
        out.append(figs.cnn_curves(by_setting["cnn"], out_dir / "cnn_fit_by_epoch.png"))
    return out
