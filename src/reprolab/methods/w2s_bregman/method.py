"""w2s_bregman hooks for the pipeline stages (see reprolab.contract.MethodHooks).

prepare draws every random task and fits its weak model once (the weak model is part of
the task, shared by every variant and seed); a unit (task, variant, seed) draws the
strong training sample from the task's pool with its seed and trains the strong class
of its variant on the weak model's soft labels by minimising KL(f_strong || f_weak).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from reprolab.contract import Run, TrainedUnit, Unit, figures_hook
from reprolab.methods.w2s_bregman.config import W2SConfig, heads_of, task_name

if TYPE_CHECKING:
    import torch


def _log_softmax(a: np.ndarray) -> np.ndarray:
    a = a - a.max(axis=1, keepdims=True)
    return a - np.log(np.exp(a).sum(axis=1, keepdims=True))


def make_task(cfg: W2SConfig, index: int) -> dict[str, np.ndarray]:
    """One random task: f* = softmax(W* x); weak features z = P x + noise, P of rank r;
    the weak head fitted by cross-entropy on n_weak labels drawn from f*."""
    import torch

    from reprolab.methods.w2s_bregman.net import fit_softmax_head

    rng = np.random.default_rng([cfg.data_seed, index])
    d, c, r = cfg.dim, cfg.classes, cfg.weak_rank
    w_star = rng.normal(0.0, cfg.target_scale / np.sqrt(d), (c, d))
    proj = rng.normal(0.0, 1.0, (r, d))

    def draw(n: int):
        x = rng.normal(size=(n, d))
        z = x @ proj.T + cfg.weak_noise * rng.normal(size=(n, r))
        log_p = _log_softmax(x @ w_star.T)
        y = (rng.random((n, 1)) > np.exp(log_p).cumsum(axis=1)).sum(axis=1)
        return x, z, log_p, np.minimum(y, c - 1)

    x_w, z_w, _, y_w = draw(cfg.n_weak)
    x_pool, z_pool, _, _ = draw(cfg.n_pool)
    x_te, z_te, logp_te, y_te = draw(cfg.n_test)
    torch.manual_seed(10_000 + index)
    weak = fit_softmax_head(
        torch.as_tensor(z_w, dtype=torch.float32),
        torch.as_tensor(y_w),
        c,
        cfg.weak_steps,
        lr=0.05,
    )
    with torch.no_grad():

        def log_q(z):
            return torch.log_softmax(weak(torch.as_tensor(z, dtype=torch.float32)), 1).numpy()

        logq_pool, logq_te = log_q(z_pool), log_q(z_te)
    # the convex class: the hull of m fixed heads, W* at a random position (realizable)
    atoms = rng.normal(0.0, cfg.target_scale / np.sqrt(d), (cfg.convex_atoms, c, d))
    atoms[rng.integers(cfg.convex_atoms)] = w_star
    f32 = np.float32
    return {
        "x_pool": x_pool.astype(f32),
        "logq_pool": logq_pool.astype(f32),
        "x_test": x_te.astype(f32),
        "logq_test": logq_te.astype(f32),
        "logp_test": logp_te.astype(f32),
        "y_test": y_te.astype(np.int64),
        "atoms": atoms.astype(f32),
        "w_star": w_star.astype(f32),
        "index": np.array([index], dtype=np.int64),  # seeds the task's strong samples
    }


def prepare(run: Run, raw_dir: Path) -> tuple[dict, dict]:
    import torch

    cfg = run.cfg
    torch.set_num_threads(1)  # small full-batch fits: see train_unit
    tasks = {task_name(i): make_task(cfg, i) for i in range(cfg.n_tasks)}
    return tasks, {"sizes": {t: cfg.n_strong for t in tasks}, "classes": cfg.classes}


def units(run: Run, tasks: Sequence[str]) -> list[Unit]:
    return run.default_units(tasks)


def _module(unit: Unit, cfg: W2SConfig, data: dict):
    import torch

    from reprolab.methods.w2s_bregman.net import MixtureHeads, fixed_atoms

    module = MixtureHeads(cfg.dim, cfg.classes, heads_of(unit.variant, cfg))
    if unit.variant == "convex":
        fixed_atoms(module, torch.as_tensor(np.asarray(data["atoms"])))
    return module


def train_unit(
    run: Run, unit: Unit, data: dict, resume_dir: Path, progress: Callable[[str], None]
) -> TrainedUnit:
    # A unit is a few hundred full-batch steps (about a second): no resume points.
    import torch

    # Tensors of a few thousand rows: extra intra-op threads only add synchronisation
    # (measured 10-30x slower with 2 threads on a loaded 2-core machine).
    torch.set_num_threads(1)

    from reprolab.methods.w2s_bregman.net import fit_projection

    cfg = run.cfg
    index = int(np.asarray(data["index"])[0])
    rows = np.random.default_rng([unit.seed, index]).choice(cfg.n_pool, cfg.n_strong, False)
    x = torch.as_tensor(np.asarray(data["x_pool"])[rows])
    log_q = torch.as_tensor(np.asarray(data["logq_pool"])[rows])
    torch.manual_seed(1000 * unit.seed + index)
    module = _module(unit, cfg, data)
    history = fit_projection(
        module, x, log_q, cfg.steps, cfg.lr, cfg.weight_decay, cfg.history_every
    )
    return TrainedUnit(state=module.state_dict(), history=history)


def restore(run: Run, unit: Unit, data: dict, state: dict) -> torch.nn.Module:
    from reprolab.core.training import restore_module

    return restore_module(_module(unit, run.cfg, data), state)


def evaluate_unit(run: Run, model, unit: Unit, data: dict, history: list[dict]) -> dict[str, float]:
    import torch

    from reprolab.methods.w2s_bregman.net import misfit_gain

    x = torch.as_tensor(np.asarray(data["x_test"]))
    log_q = torch.as_tensor(np.asarray(data["logq_test"]))
    log_p = torch.as_tensor(np.asarray(data["logp_test"]))
    y = torch.as_tensor(np.asarray(data["y_test"]))
    with torch.inference_mode():
        log_sw = model(x).float()
    out = misfit_gain(log_p, log_q, log_sw)
    out["err_strong"] = float((log_sw.argmax(1) != y).float().mean())
    out["err_weak"] = float((log_q.argmax(1) != y).float().mean())
    out["err_bayes"] = float((log_p.argmax(1) != y).float().mean())
    return out


def example_input(run: Run, unit: Unit, data: dict) -> torch.Tensor:
    import torch

    return torch.as_tensor(np.asarray(data["x_test"])[:256])


plots = figures_hook()
