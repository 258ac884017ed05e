"""ttba hooks for the pipeline stages (see reprolab.contract.MethodHooks).

Variants: ``victim`` (trained) and the attacks ``ttba``, ``hsja``, ``signopt``
(evaluation-only, ``reuses="victim"``). train@ttba trains one victim CNN per (task,
seed); evaluate@ttba restores it (fp32, then quantized) and runs every attack on it, so
all attacks face the identical model, the same correctly classified test images, the
same oracle and the same budget. The victim unit's own evaluation reports its clean
accuracy; the attack units report the attack metrics.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from reprolab.contract import Run, TrainedUnit, Unit, figures_hook
from reprolab.core import datasets
from reprolab.core.threads import torch_threads
from reprolab.methods.ttba.config import TtbaConfig

if TYPE_CHECKING:
    import torch

N_CLASSES = 10

# ---------------------------------------------------------------- prepare


def prepare(run: Run, raw_dir: Path) -> tuple[dict, dict]:
    return datasets.prepare_image_tasks(run)


def units(run: Run, tasks: Sequence[str]) -> list[Unit]:
    return run.default_units(tasks)


# ---------------------------------------------------------------- train


def train_unit(
    run: Run, unit: Unit, data: dict, resume_dir: Path, progress: Callable[[str], None]
) -> TrainedUnit:
    from reprolab.core.training import ClassifierModule, train_classifier

    cfg = run.cfg

    def build() -> ClassifierModule:  # the victim of (task, seed): cross-entropy, Adam, cosine
        return ClassifierModule(victim(cfg, data), lr=cfg.lr, epochs=cfg.epochs)

    with torch_threads(cfg.threads):
        return train_classifier(
            run, unit, data, resume_dir, build, batch_size=cfg.batch_size, epochs=cfg.epochs
        )


def victim(cfg: TtbaConfig, data: dict) -> torch.nn.Module:
    """The untrained victim CNN of a task (initial weights from torch's RNG)."""
    from reprolab.methods.ttba.net import cnn

    n_features = np.asarray(data["x_train"]).shape[1]
    return cnn(n_features, tuple(cfg.channels), cfg.hidden, N_CLASSES)


def restore(run: Run, unit: Unit, data: dict, state: dict) -> torch.nn.Module:
    from reprolab.core.training import restore_module

    return restore_module(victim(run.cfg, data), state)


# ---------------------------------------------------------------- evaluate


def _image_seed(seed: int, index: int) -> int:
    """Attack randomness per (seed, test image): the same for every variant and precision."""
    return 1_000_003 * seed + index


def victim_metrics(model, data: dict) -> dict[str, float]:
    """The victim unit's metrics at the precision evaluated: accuracy on the test split
    (whose correctly classified images the attacks take) and on the validation split,
    each row classified alone as the oracle does, so an int8 victim's accuracy is the
    one the attacks face."""
    from reprolab.methods.ttba.oracle import HardLabelOracle

    oracle = HardLabelOracle(model, N_CLASSES)
    out = {}
    for part, name in (("test", "accuracy"), ("val", "val_accuracy")):
        x, y = datasets.part_tensors(data, part)
        out[name] = float((oracle.predict_rows(x) == y).float().mean())
    return out


def attack_images(model, unit: Unit, cfg: TtbaConfig, data: dict) -> dict:
    """Attack the first ``n_images`` test images the victim classifies correctly with the
    unit's attack; per image, the best L2 at every checkpoint of the curve and the query
    count (and, for TtBA, its k_bridge values and best-k ratios)."""
    import torch

    from reprolab.methods.ttba.attack import TtbaParams, best_k_ratio, ttba
    from reprolab.methods.ttba.baselines import art_classifier, run_art
    from reprolab.methods.ttba.oracle import HardLabelOracle

    x_te, y_te = datasets.part_tensors(data, "test")
    oracle = HardLabelOracle(model, N_CLASSES)
    pred = oracle.predict_rows(x_te)
    correct = torch.nonzero(pred == y_te).flatten()[: cfg.n_images].tolist()
    if not correct:
        raise ValueError(f"{unit.id}: the victim classifies no test image correctly")
    params = TtbaParams(
        init_query=cfg.init_query,
        sigma=cfg.sigma,
        tol=cfg.tol,
        k_tol=cfg.k_tol,
        init_step=cfg.init_step,
    )
    classifier = None if unit.variant == "ttba" else art_classifier(oracle, x_te.shape[1])
    checkpoints = cfg.checkpoints()
    best, to_success, used, seconds = [], [], [], []
    ratios, k_bridges = [], []
    for j, i in enumerate(correct):
        oracle.reset(x_te[i], int(y_te[i]), cfg.budget)
        seed = _image_seed(unit.seed, i)
        started = time.perf_counter()
        if unit.variant == "ttba":
            y0 = int(y_te[i])

            def diagnose(x0, r, v, n, k_bridge, y0=y0):
                return best_k_ratio(
                    oracle.predict_rows, y0, x0, r, v, n, k_bridge, cfg.diag_grid, cfg.tol
                )

            trace = ttba(
                oracle,
                params,
                torch.Generator().manual_seed(seed),
                diagnose if j < cfg.diag_images else None,
            )
            ratios += trace.best_k_ratio
            k_bridges += trace.k_bridge
        else:
            run_art(unit.variant, oracle, classifier, seed)
        seconds.append(time.perf_counter() - started)
        best.append(oracle.best_l2_at(checkpoints))
        to_success.append(oracle.queries_to_reach(cfg.success_l2))
        used.append(oracle.count)
    return {
        "checkpoints": checkpoints,
        "best": np.array(best),
        "to_success": to_success,
        "used": used,
        "seconds": seconds,
        "ratios": ratios,
        "k_bridges": k_bridges,
        "in_dim": x_te.shape[1],
    }


def summarize(run: dict, cfg: TtbaConfig, variant: str) -> dict[str, float]:
    """Per-unit metrics of an attack from :func:`attack_images`' per-image results.

    An image with no adversarial query yet counts with the largest L2 possible in the
    box, sqrt(d); queries to success count a failure as the whole budget (a censored
    value, the same rule for every attack). TtBA adds its best-k diagnostic."""
    cap = math.sqrt(run["in_dim"])
    best = np.minimum(run["best"], cap)
    at = dict(zip(run["checkpoints"], np.median(best, axis=0), strict=True))
    final = best[:, run["checkpoints"].index(cfg.budget)]
    q_success = np.array([cfg.budget if q is None else q for q in run["to_success"]], float)
    out = {
        "median_l2": at[cfg.budget],
        "median_l2_half": at[cfg.budget // 2],
        "median_l2_quarter": at[cfg.budget // 4],
        "mean_l2": float(final.mean()),
        "success_rate": float(np.mean([q is not None for q in run["to_success"]])),
        "queries_to_success_mean": float(q_success.mean()),
        "queries_to_success_median": float(np.median(q_success)),
        "queries_used_mean": float(np.mean(run["used"])),
        "queries_used_max": float(np.max(run["used"])),
        "seconds_per_image": float(np.mean(run["seconds"])),
        "n_images": float(len(final)),
    }
    if variant == "ttba":
        # best-k diagnostic; k_ratio_n = 0 when no iteration qualified (the claim then
        # leaves the unit out, whatever k_ratio_median holds)
        ratios, k_bridges = run["ratios"], run["k_bridges"]
        out["k_ratio_median"] = float(np.median(ratios)) if ratios else 0.0
        out["k_ratio_n"] = float(len(ratios))
        out["k_bridge_median"] = float(np.median(k_bridges)) if k_bridges else 0.0
    for b, value in at.items():
        out[f"l2_at_q{b}"] = float(value)
    return {k: float(v) for k, v in out.items()}


def evaluate_unit(run: Run, model, unit: Unit, data: dict, history: list[dict]) -> dict[str, float]:
    cfg = run.cfg
    with torch_threads(cfg.threads):
        if unit.variant == "victim":
            return victim_metrics(model, data)
        return summarize(attack_images(model, unit, cfg, data), cfg, unit.variant)


example_input = datasets.example_rows(64)


plots = figures_hook()
