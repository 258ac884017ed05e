"""Desk-rejection hooks for the pipeline stages (see reprolab.contract.MethodHooks).

Tasks: ``conf_m<m>`` / ``tight_m<m>`` hold one synthetic instance per seed (the seed is
the instance seed, so these units keep their seeds); ``tiny_n<n>`` holds every tiny
instance with n authors (the exhaustive search of the dilemma and the solves of those
fixed instances: no random part, so its units are seed-free and run once). A task's
family, papers, limit or authors are unit parameters (``SPEC``'s ``cfg.tasks()``), not
parsed from its name. A unit's "training" is one solver run per instance; its state is
the keep-vector.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from reprolab.contract import Run, TrainedUnit, Unit, figures_hook
from reprolab.methods.desk_reject import dilemma
from reprolab.methods.desk_reject.generator import synthetic_instance
from reprolab.methods.desk_reject.policies import (
    Instance,
    ideal_exists,
    instance_metrics,
    mean_cost_of,
    solve,
)

if TYPE_CHECKING:
    pass


# ---------------------------------------------------------------- prepare


def prepare(run: Run, raw_dir: Path) -> tuple[dict, dict]:
    cfg, seeds = run.cfg, run.seeds
    tasks: dict[str, dict[str, np.ndarray]] = {}
    sizes: dict[str, int] = {}
    pool_ratios = {"conf": cfg.pool_ratio, "tight": cfg.tight_pool_ratio}
    for name, setting in cfg.tasks().items():
        family = setting["family"]
        if family == "tiny":
            arrays = dilemma.enumerate_task(
                int(setting["authors"]), cfg.tiny_limits, cfg.tiny_max_papers
            )
            tasks[name] = arrays
            sizes[name] = len(arrays["limit"])  # instances
            continue
        m, limit = int(setting["papers"]), int(setting["limit"])
        arrays = {"limit": np.array([limit], dtype=np.int64)}
        for seed in seeds:
            inst = synthetic_instance(
                m,
                limit,
                seed,
                family,
                pool_ratios[family],
                cfg.pareto_shape,
                cfg.max_team,
                cfg.team_p,
            )
            arrays[f"s{seed}_ptr"] = inst.ptr
            arrays[f"s{seed}_idx"] = inst.idx
        tasks[name] = arrays
        sizes[name] = int(arrays[f"s{seeds[0]}_idx"].max()) + 1  # authors
    return tasks, {"sizes": sizes, "limit": cfg.limit, "tight_limit": cfg.tight_limit}


def _instance(data: dict, seed: int) -> Instance:
    ptr = np.asarray(data[f"s{seed}_ptr"])
    idx = np.asarray(data[f"s{seed}_idx"])
    return Instance(ptr, idx, int(idx.max()) + 1, int(np.asarray(data["limit"])[0]))


def _tiny_instances(data: dict) -> list[Instance]:
    n = int(np.asarray(data["n_authors"])[0])
    masks, limits = np.asarray(data["masks"]), np.asarray(data["limit"])
    return [dilemma.to_instance(masks[r], n, int(limits[r])) for r in range(len(limits))]


# ---------------------------------------------------------------- train


#: variants that solve a MILP (skipped on instances above ``milp_max_papers``)
MILPS = ("milp_average", "milp_worst_case")


def units(run: Run, tasks: Sequence[str]) -> list[Unit]:
    """Every task x seed x policy, with the task's setting as unit parameters; a tiny
    task's units are seed-free, and MILPs skip instances above ``milp_max_papers``."""
    cfg = run.cfg
    settings = cfg.tasks()
    out = []
    for task in sorted(tasks):
        setting = settings[task]
        tiny = setting["family"] == "tiny"
        too_big = not tiny and int(setting["papers"]) > cfg.milp_max_papers
        for seed in (None,) if tiny else run.seeds:
            for variant in run.variants:
                if variant in MILPS and too_big:
                    continue
                out.append(Unit(task, variant, seed, setting))
    return out


def _tiny(unit: Unit) -> bool:
    return unit.param["family"] == "tiny"


def train_unit(
    run: Run, unit: Unit, data: dict, resume_dir: Path, progress: Callable[[str], None]
) -> TrainedUnit:
    """Solve every instance of the unit's task with its policy (no resume needed: one
    solve takes seconds at most)."""
    import torch

    if _tiny(unit):
        instances = _tiny_instances(data)
        width = np.asarray(data["masks"]).shape[1]
    else:
        instances = [_instance(data, unit.seed)]
        width = instances[0].n_papers
    keep = np.zeros((len(instances), width), dtype=np.int8)
    seconds, optimal, costs = 0.0, 0, []
    extra: dict[str, list[float]] = {}
    for r, inst in enumerate(instances):
        sol = solve(unit.variant, inst, run.cfg.milp_node_limit)
        keep[r, : inst.n_papers] = sol.keep
        seconds += sol.seconds
        optimal += int(sol.optimal)
        costs.append(mean_cost_of(inst, sol.keep))
        for key, value in sol.info.items():
            extra.setdefault(key, []).append(float(value))
    if len(instances) > 1:
        progress(f"{len(instances)} tiny instances solved in {seconds:.2f}s")
    state = {
        "keep": torch.as_tensor(keep),
        "optimal_frac": optimal / len(instances),
        **{key: torch.as_tensor(values, dtype=torch.float64) for key, values in extra.items()},
    }
    history = [
        {
            "step": 0,
            "mean_cost": float(np.mean(costs)),
            "papers": float(width),
            "instances": float(len(instances)),
        }
    ]
    # the solver's wall time is a runtime measurement: MLflow and data/runtime/, never
    # the checkpoint (which must hash the same when the same instances are solved again)
    return TrainedUnit(state=state, history=history, timings={"solve_seconds": float(seconds)})


def restore(run: Run, unit: Unit, data: dict, state: dict) -> dict:
    """The trained object is the policy's decision: keep-vectors plus solver facts."""
    return {
        key: np.asarray(value) if hasattr(value, "numpy") else value for key, value in state.items()
    }


# ---------------------------------------------------------------- evaluate

#: per-instance metrics that are counts over a tiny task's instances (others: means)
_COUNTS = ("no_ideal", "avoidable_hit")


def evaluate_unit(
    run: Run, model: dict, unit: Unit, data: dict, history: list[dict]
) -> dict[str, float]:
    keep = np.asarray(model["keep"]).astype(np.int64)
    tiny = _tiny(unit)
    instances = _tiny_instances(data) if tiny else [_instance(data, unit.seed)]
    rows = [instance_metrics(inst, keep[r, : inst.n_papers]) for r, inst in enumerate(instances)]
    out = {
        key: float(
            np.sum([r[key] for r in rows]) if key in _COUNTS else np.mean([r[key] for r in rows])
        )
        for key in rows[0]
    }
    out["instances"] = float(len(instances))
    out["optimal"] = float(model["optimal_frac"])
    if "lp_bound" in model:
        out["lp_bound"] = float(np.mean(model["lp_bound"]))
        out["lp_fractional"] = float(np.mean(model["lp_fractional"]))  # fractional x_j
    if "worst_case_t" in model:
        out["worst_case_t"] = float(np.mean(model["worst_case_t"]))
    if tiny:
        # the exhaustive search: prepare tried every keep-vector of every instance
        ideal = np.asarray(data["ideal"]).astype(bool)
        closed_form = np.array([ideal_exists(inst) for inst in instances])
        if not np.array_equal(ideal, closed_form):
            raise AssertionError("brute-force and closed-form ideal checks disagree")
        out["no_ideal"] = float((~ideal).sum())
        team = np.asarray(data["max_team"])
        out["no_ideal_min_team"] = float(team[~ideal].min()) if (~ideal).any() else 0.0
    return out


# ---------------------------------------------------------------- plots


plots = figures_hook()


runtime_plots = figures_hook("RUNTIME_FIGURES")
