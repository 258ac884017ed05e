"""Clipped SGD hooks for the pipeline stages (see reprolab.contract.MethodHooks).

A unit is one optimizer run: (sweep setting, algorithm, seed). "Training" runs the
algorithm's chains and keeps the error curve; the trained object is the trajectory's
summary and the final iterates, not a network, so quantization does not apply.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from reprolab.contract import Run, TrainedUnit, TrainedUnits, Unit
from reprolab.methods.clipped_sgd.config import ClippedSGDConfig

if TYPE_CHECKING:
    import pandas as pd

    from reprolab.contract import TrainerConfig

# ---------------------------------------------------------------- prepare


def prepare(run: Run, raw_dir: Path) -> tuple[dict, dict]:
    """Per task: the data defining D(theta), theta_PS, PCSGD's mean-field limit for the
    task's clip, and the smallest clip that never binds on X."""
    from reprolab.methods.clipped_sgd import strategic
    from reprolab.methods.clipped_sgd.algorithms import Quadratic

    cfg = run.cfg
    tasks: dict[str, dict[str, np.ndarray]] = {}
    meta: dict = {"sizes": {}, "theta_ps": {}, "rrm_iterations": {}}
    zs = (np.random.default_rng(cfg.data_seed).random(cfg.quad_m) < cfg.quad_p).astype(float)
    for name, setting in cfg.tasks().items():
        if setting["family"] != "quad":
            continue
        beta, c = setting["beta"], setting["c"]
        model = Quadratic(cfg.quad_a, cfg.quad_b, beta, zs)
        tasks[name] = {
            "z": zs,
            "theta_ps": np.array([model.theta_ps()]),
            "theta_limit": np.array([model.pcsgd_limit(c, cfg.quad_radius)]),
            "c_nonbinding": np.array(model.max_grad(cfg.quad_radius)),
        }
        meta["sizes"][name] = cfg.quad_m
        meta["theta_ps"][name] = [model.theta_ps()]
    if cfg.strat_betas:
        x, y, mask = strategic.make_population(
            cfg.strat_n, cfg.strat_d, cfg.strat_strategic, cfg.data_seed
        )
        references = {}
        for name, setting in cfg.tasks().items():
            if setting["family"] != "strat":
                continue
            beta, c = setting["beta"], setting["c"]
            if beta not in references:
                references[beta] = strategic.performative_stable_point(
                    x, y, mask, beta, cfg.strat_lam
                )
            ps, iterations = references[beta]
            limit = strategic.pcsgd_limit(x, y, mask, beta, cfg.strat_lam, c, ps)
            cmax = strategic.max_grad_norm(x, mask, beta, cfg.strat_lam, cfg.strat_radius)
            tasks[name] = {
                "x": x,
                "y": y,
                "mask": mask,
                "theta_ps": ps,
                "theta_limit": limit,
                "c_nonbinding": np.array(cmax),
            }
            meta["sizes"][name] = cfg.strat_n
            meta["theta_ps"][name] = ps.tolist()
            meta["rrm_iterations"][name] = iterations
    return tasks, meta


# ---------------------------------------------------------------- train


def units(run: Run, tasks: Sequence[str]) -> list[Unit]:
    """Every task x algorithm x seed; a unit carries its task's setting as parameters."""
    settings = run.cfg.tasks()
    return [Unit(u.task, u.variant, u.seed, settings[u.task]) for u in run.default_units(tasks)]


def _clips(unit: Unit, cfg: ClippedSGDConfig, data: dict) -> tuple[float, float]:
    """(c or C1, C2) of a unit: the non-binding control clips at sup ||g|| on X."""
    c = float(unit.param["c"])
    if unit.variant == "nonbinding":
        c = float(data["c_nonbinding"])
    return c, cfg.dice_c2_ratio * c


def run_quadratic(unit: Unit, cfg: ClippedSGDConfig, data: dict):
    from reprolab.methods.clipped_sgd.algorithms import Quadratic, simulate_quadratic

    beta, sigma = float(unit.param["beta"]), float(unit.param["sigma"])
    c, c2 = _clips(unit, cfg, data)
    zs = np.asarray(data["z"], dtype=float)
    model = Quadratic(cfg.quad_a, cfg.quad_b, beta, zs)
    # Common random numbers: under a seed every variant and setting sees the same draws.
    rng = np.random.default_rng(unit.seed)
    samples = zs[rng.integers(0, len(zs), size=(cfg.quad_steps, cfg.chains))]
    noise = rng.standard_normal((cfg.quad_steps, cfg.chains)) if sigma > 0 else None
    return simulate_quadratic(
        model,
        unit.variant,
        c=c,
        c2=c2,
        sigma=sigma,
        radius=cfg.quad_radius,
        theta0=cfg.quad_theta0,
        lr=cfg.quad_lr,
        lr_t0=cfg.quad_lr_t0,
        samples=samples,
        noise=noise,
    )


def strategic_module(unit: Unit, cfg: ClippedSGDConfig, data: dict):
    from reprolab.methods.clipped_sgd.module import StrategicClassification, UpdateRule

    beta, sigma = float(unit.param["beta"]), float(unit.param["sigma"])
    c, c2 = _clips(unit, cfg, data)
    return StrategicClassification(
        np.asarray(data["x"]),
        np.asarray(data["y"]),
        np.asarray(data["mask"]),
        np.asarray(data["theta_ps"]),
        beta=beta,
        lam=cfg.strat_lam,
        rule=UpdateRule(
            variant=unit.variant,
            lr=cfg.strat_lr,
            lr_t0=cfg.strat_lr_t0,
            clip=c,
            clip2=c2,
            sigma=sigma,
            radius=cfg.strat_radius,
            seed=unit.seed,
        ),
        chains=cfg.chains,
        batch=cfg.strat_batch,
        steps=cfg.strat_steps,
    )


def pace(cfg: ClippedSGDConfig):
    """The loader only paces epochs (one checkpoint each); samples come from D(theta_t)."""
    from torch.utils.data import DataLoader

    return DataLoader(range(cfg.strat_steps_per_epoch), batch_size=None)


def run_strategic(
    unit: Unit, cfg: ClippedSGDConfig, data: dict, resume_dir: Path, trainer: TrainerConfig
):
    """The strategic run of a unit, fitted on ``trainer``'s devices (``Run.trainer``)."""
    from reprolab.core.training import fit_resumable
    from reprolab.methods.clipped_sgd.algorithms import Run as Trajectory

    module = strategic_module(unit, cfg, data)
    fit_resumable(module, pace(cfg), None, cfg.strat_epochs, resume_dir, trainer=trainer)
    draws = cfg.strat_steps * cfg.chains * cfg.strat_batch
    return Trajectory(
        mse=module.mse.numpy().copy(),
        bias=module.bias.numpy().copy(),
        theta=module.theta.detach().numpy().copy(),
        clip_fraction=int(module.n_clipped) / draws,
    )


def train_unit(
    run: Run, unit: Unit, data: dict, resume_dir: Path, progress: Callable[[str], None]
) -> TrainedUnit:
    import torch

    from reprolab.methods.clipped_sgd.algorithms import log_steps, summarize

    cfg = run.cfg
    traj = (
        run_quadratic(unit, cfg, data)
        if unit.param["family"] == "quad"
        else run_strategic(unit, cfg, data, resume_dir, run.trainer)
    )
    if not np.all(np.isfinite(traj.mse)):
        raise FloatingPointError(f"{unit.id}: the error curve is not finite (diverged?)")
    summary = summarize(traj.mse, traj.bias, cfg.plateau_frac, cfg.tail_start)
    steps = len(traj.mse) - 1
    history = [
        {"step": int(t), "mse": float(traj.mse[t]), "bias": float(traj.bias[t])}
        for t in log_steps(steps, cfg.history_points)
    ]
    state = {
        "theta": torch.as_tensor(traj.theta),
        "steps": steps,
        "clip_fraction": float(traj.clip_fraction),
        **summary,
    }
    return TrainedUnit(state=state, history=history)


def restore(run: Run, unit: Unit, data: dict, state: dict) -> dict:
    """The trained object: the run's summary and final iterates (chains, d)."""
    return {k: (v.numpy() if hasattr(v, "numpy") else v) for k, v in state.items()}


# ---------------------------------------------------------------- evaluate


def evaluate_unit(
    run: Run, model: dict, unit: Unit, data: dict, history: list[dict]
) -> dict[str, float]:
    ps = np.asarray(data["theta_ps"], dtype=float)
    limit = np.asarray(data["theta_limit"], dtype=float)
    return {
        "plateau_mse": float(model["plateau_mse"]),
        "tail_slope": float(model["tail_slope"]),
        "final_mse": float(model["final_mse"]),
        "final_bias": float(model["final_bias"]),
        "clip_fraction": float(model["clip_fraction"]),
        # Squared distance from theta_PS of PCSGD's small-step limit for this task's clip
        # (a property of the task, the same row for every variant): the floor theory
        # predicts for PCSGD's plateau; DiceSGD and the control are predicted at 0.
        "predicted_floor": float(np.sum((limit - ps) ** 2)),
    }


def plots(
    run: Run, table: pd.DataFrame, out_dir: Path, trained: TrainedUnits | None = None
) -> list[Path]:
    from reprolab.methods.clipped_sgd.plots import error_curves, plateau_vs_beta

    paths = []
    for family in ("quad", "strat"):
        if trained and any(u.param["family"] == family for u in trained):
            paths.append(error_curves(trained, table, family, out_dir / f"{family}_error.png"))
        if (table.family == family).any():
            paths.append(plateau_vs_beta(table, family, out_dir / f"{family}_plateau.png"))
    return paths
