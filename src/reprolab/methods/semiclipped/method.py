"""Semi-Clipped hooks for the pipeline stages (see reprolab.contract.MethodHooks)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from reprolab.contract import Run, TrainedUnit, TrainedUnits, Unit
from reprolab.methods.semiclipped import pbmc, sim
from reprolab.methods.semiclipped.pairs import train_rows

if TYPE_CHECKING:
    import pandas as pd
    import torch

KS = (1, 3, 5, 10, 20)
#: the premise check's probes: folds over the training perturbations, ridge penalty, and
#: the least lead of the image side over expression (R^2) that counts as "clearly higher"
#: on every simulator draw (the margin of the option's first unit test, 73a70fe)
PROBE_FOLDS, PROBE_ALPHA, PREMISE_MARGIN = 5, 1.0, 0.3

# ---------------------------------------------------------------- prepare


def prepare(run: Run, raw_dir: Path) -> tuple[dict, dict]:
    cfg = run.cfg
    # the pbmc source first: a missing package is named before any compute
    src = pbmc.load(raw_dir) if cfg.pbmc_splits else None
    tasks, checks = {}, {}
    for i in range(cfg.n_sims):
        s = cfg.data_seed * 1000 + i
        d = sim.simulate(s, cfg)
        rng = np.random.default_rng(s + 1)
        n_perts = cfg.n_pathways * cfg.perts_per_pathway
        held = rng.permutation(n_perts)[: int(round(cfg.test_perts * n_perts))]
        test_b = rng.permutation(cfg.n_batches)[: cfg.test_batches]
        d["test_pert"] = np.isin(d["pert"], held)
        d["test_batch"] = np.isin(d["batch"], test_b)
        z = d.pop("z")  # the latent is never saved: only the premise check reads it
        tasks[f"sim{i}"] = _frozen_sides(d)
        checks[f"sim{i}"] = premise_probe_sim(d, z, cfg.latent, cfg.tx_weak_dims, s + 2)
    if src is not None:
        for i in range(cfg.pbmc_splits):
            d = pbmc.make_task(
                src, cfg.data_seed * 1000 + 500 + i, cfg.pbmc_train_batches,
                cfg.pbmc_group_size, cfg.pbmc_batch_effect, cfg.test_perts,
                cfg.pbmc_tx_dim, cfg.pbmc_img_dim,
            )  # fmt: skip
            # a cell's two views are one measurement: pairs are always two different cells
            d["pair_other_cell"] = np.array(True)
            tasks[f"pbmc{i}"] = _frozen_sides(d)
            checks[f"pbmc{i}"] = premise_probe_pbmc(d, cfg.data_seed * 1000 + 502 + i)
    meta = {"n_samples": {t: int(len(d["pert"])) for t, d in tasks.items()}}
    meta["n_perts"] = {t: int(d["pert"].max() + 1) for t, d in tasks.items()}
    meta["premise_check"] = premise_summary(checks, cfg.latent, cfg.tx_weak_dims)
    return tasks, meta


def _probe_rows(d: dict, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Training rows only (training perturbations of the training batches), and their
    folds over perturbations: the check never reads held-out perturbations or batches."""
    rows = train_rows(d)
    return rows, sim.probe_folds(d["pert"][rows], PROBE_FOLDS, seed)


def premise_probe_sim(d: dict, z: np.ndarray, latent: int, weak_dims: int, seed: int) -> dict:
    """The paper's premise on one simulator draw: how well a cross-fitted ridge probe
    recovers the latent dimensions expression measures badly (the last ``weak_dims``;
    every dimension when 0) from the image side and from the expression side, held-out
    R^2 over training perturbations. ``image``/``expression``: the frozen sides the
    method uses (TVN image embedding, TVN transcriptomics input); ``raw_*``: the
    uncorrected features."""
    rows, folds = _probe_rows(d, seed)
    target = z[d["pert"][rows]][:, latent - weak_dims if weak_dims else 0 :]
    sides = {"image": "img_emb", "expression": "tx_tvn", "raw_image": "img", "raw_expression": "tx"}
    out = {
        f"{name}_r2": sim.probe_r2(d[k][rows], target, folds, PROBE_ALPHA)
        for name, k in sides.items()
    }
    return {k: round(v, 4) for k, v in out.items()}


def premise_probe_pbmc(d: dict, seed: int) -> dict:
    """The same question on a pbmc68k split, where no latent exists: held-out accuracy of
    a ridge probe of the cell type (the relationship recall scores) from the image-like
    side and from the transcriptomics side, over training pseudo-perturbations."""
    rows, folds = _probe_rows(d, seed)
    labels = d["pathway"][rows]
    out = {
        "image_accuracy": sim.probe_accuracy(d["img_emb"][rows], labels, folds, PROBE_ALPHA),
        "expression_accuracy": sim.probe_accuracy(d["tx_tvn"][rows], labels, folds, PROBE_ALPHA),
    }
    return {k: round(v, 4) for k, v in out.items()}


def premise_summary(checks: dict, latent: int, weak_dims: int) -> dict:
    """The premise check as the prepared metadata records it: per task, and for the
    simulator the smallest image-over-expression lead and whether it is at least
    ``PREMISE_MARGIN`` on every draw."""
    dims = f"{latent - weak_dims}-{latent - 1}" if weak_dims else f"0-{latent - 1} (all)"
    out: dict = {
        "probe": f"ridge (alpha {PROBE_ALPHA:g}), {PROBE_FOLDS} folds over the training "
        "perturbations of the training batches, scored on the held-out folds",
        "sim_target": f"latent dimensions {dims}",
        "pbmc_target": "cell type",
        "tasks": checks,
    }
    gaps = [c["image_r2"] - c["expression_r2"] for t, c in checks.items() if setting(t) == "sim"]
    if gaps:
        out["sim_min_lead"] = round(min(gaps), 4)
        out["sim_holds"] = bool(min(gaps) >= PREMISE_MARGIN)
    return out


def _frozen_sides(d: dict) -> dict:
    """The frozen encoders' outputs: the image embedding is the TVN-corrected image
    features; the transcriptomics input is TVN-corrected with all of a batch's controls."""
    ctrl = d["pert"] < 0
    d["img_emb"] = sim.correct(d["img"], d["batch"], ctrl, "tvn")
    d["tx_tvn"] = sim.correct(d["tx"], d["batch"], ctrl, "tvn")
    return d


def setting(task: str) -> str:
    """The data setting of a task: ``sim`` (simulator draws) or ``pbmc`` (pbmc68k splits)."""
    return "pbmc" if task.startswith("pbmc") else "sim"


# ---------------------------------------------------------------- train


def units(run: Run, tasks: Sequence[str]) -> list[Unit]:
    """Every task x variant x seed, each carrying its data setting."""
    return [
        Unit(u.task, u.variant, u.seed, params={"setting": setting(u.task)})
        for u in run.default_units(tasks)
    ]


def adapter(in_dim: int, hidden: int, out_dim: int):
    import torch.nn as nn

    return nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, out_dim))


def dims(data: dict) -> tuple[int, int]:
    """(transcriptomics input, image embedding) widths of a task."""
    return int(np.shape(data["tx"])[1]), int(np.shape(data["img_emb"])[1])


def train_unit(
    run: Run, unit: Unit, data: dict, resume_dir: Path, progress: Callable[[str], None]
) -> TrainedUnit:
    import torch
    from torch.utils.data import DataLoader

    from reprolab.core.training import fit_resumable
    from reprolab.methods.semiclipped.module import AdapterModule, WeakPairs

    cfg = run.cfg
    data = {k: np.asarray(v) for k, v in data.items()}
    torch.manual_seed(unit.seed)
    tx_dim, img_dim = dims(data)
    tx_net = adapter(tx_dim, cfg.hidden, img_dim)
    img_net = adapter(img_dim, cfg.hidden, img_dim) if unit.variant == "joint_clip" else None
    pairs = WeakPairs(
        data, cfg, np.random.default_rng(unit.seed), unit.variant == "semiclipped_pea"
    )
    module = AdapterModule(tx_net, img_net, unit.variant, cfg.lr, cfg.temperature, pairs)
    fit_resumable(
        module,
        DataLoader(pairs, batch_size=None),
        None,
        cfg.epochs,
        resume_dir,
        trainer=run.trainer,
    )
    history = module.history
    state = {f"tx.{k}": v for k, v in tx_net.state_dict().items()}
    return TrainedUnit(state=state, history=history)


def restore(run: Run, unit: Unit, data: dict, state: dict) -> torch.nn.Module:
    from reprolab.core.training import restore_module

    tx_dim, img_dim = dims(data)
    return restore_module(adapter(tx_dim, run.cfg.hidden, img_dim), state, prefix="tx.")


# ---------------------------------------------------------------- evaluate


def embed(model, unit: Unit, data: dict) -> np.ndarray:
    import torch

    if unit.variant == "raw":
        return np.asarray(data["tx"])
    if unit.variant == "tvn":
        return np.asarray(data["tx_tvn"])
    with torch.no_grad():
        return model(torch.from_numpy(np.asarray(data["tx_tvn"], np.float32))).numpy()


def evaluate_unit(run: Run, model, unit: Unit, data: dict, history: list[dict]) -> dict[str, float]:
    cfg = run.cfg
    data = {k: np.asarray(v) for k, v in data.items()}
    emb = embed(model, unit, data)
    held = (data["pert"] >= 0) & data["test_pert"]
    out = {}
    for name, rows in (
        ("ood", held & data["test_batch"]),
        ("heldout_perts", held & ~data["test_batch"]),
    ):
        ids, means = sim.pert_means(emb[rows], data["pert"][rows])
        labels = np.array([data["pathway"][data["pert"] == i][0] for i in ids])
        rec = sim.recall_at_k(means, labels, KS)
        out[f"recall_{name}"] = rec[cfg.k]
        out |= {f"recall_{name}_at{k}": v for k, v in rec.items()}
    return out


def example_input(run: Run, unit: Unit, data: dict):
    import torch

    return torch.from_numpy(np.asarray(data["tx_tvn"][:256], np.float32))


def calibration_inputs(run: Run, unit: Unit, data: dict, model) -> list:
    import torch

    rows = train_rows({k: np.asarray(data[k]) for k in ("pert", "test_pert", "test_batch")})
    return [torch.from_numpy(np.asarray(data["tx_tvn"], np.float32)[rows][:512])]


def plots(run: Run, table: pd.DataFrame, out_dir: Path, trained: TrainedUnits) -> list[Path]:
    from reprolab.methods.semiclipped import plots as figs

    return [figs.recall_curves(table, out_dir / "recall_at_k.png", KS)]
