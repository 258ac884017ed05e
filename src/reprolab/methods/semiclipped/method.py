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

# ---------------------------------------------------------------- prepare


def prepare(run: Run, raw_dir: Path) -> tuple[dict, dict]:
    cfg = run.cfg
    # the pbmc source first: a missing package is named before any compute
    src = pbmc.load(raw_dir) if cfg.pbmc_splits else None
    tasks = {}
    for i in range(cfg.n_sims):
        s = cfg.data_seed * 1000 + i
        d = sim.simulate(
            s, cfg.n_pathways, cfg.perts_per_pathway, cfg.n_batches, cfg.n_controls,
            cfg.reps, cfg.latent, cfg.tx_dim, cfg.img_dim, cfg.noise,
            cfg.tx_weak_dims, cfg.tx_weak_gain,
        )  # fmt: skip
        rng = np.random.default_rng(s + 1)
        n_perts = cfg.n_pathways * cfg.perts_per_pathway
        held = rng.permutation(n_perts)[: int(round(cfg.test_perts * n_perts))]
        test_b = rng.permutation(cfg.n_batches)[: cfg.test_batches]
        d["test_pert"] = np.isin(d["pert"], held)
        d["test_batch"] = np.isin(d["batch"], test_b)
        tasks[f"sim{i}"] = _frozen_sides(d)
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
    meta = {"n_samples": {t: int(len(d["pert"])) for t, d in tasks.items()}}
    meta["n_perts"] = {t: int(d["pert"].max() + 1) for t, d in tasks.items()}
    return tasks, meta


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
