"""Semi-Clipped hooks for the pipeline stages (see reprolab.contract.MethodHooks)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from reprolab.contract import TrainedUnit, Unit
from reprolab.methods.semiclipped import pbmc, sim
from reprolab.methods.semiclipped.config import SemiClippedConfig

if TYPE_CHECKING:
    import pandas as pd
    import torch

KS = (1, 3, 5, 10, 20)

# ---------------------------------------------------------------- prepare


def prepare(
    cfg: SemiClippedConfig, seeds: Sequence[int], raw_dir: Path, assets: dict[str, Path]
) -> tuple[dict, dict]:
    # the pbmc source first: a missing package is named before any compute
    src = pbmc.load(raw_dir) if cfg.pbmc_splits else None
    tasks = {}
    for i in range(cfg.n_sims):
        s = cfg.data_seed * 1000 + i
        d = sim.simulate(
            s, cfg.n_pathways, cfg.perts_per_pathway, cfg.n_batches, cfg.n_controls,
            cfg.reps, cfg.latent, cfg.tx_dim, cfg.img_dim, cfg.noise,
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


def units(cfg: SemiClippedConfig, seeds: Sequence[int], tasks: Sequence[str]) -> list[Unit]:
    from reprolab.methods.semiclipped import SPEC

    return [
        Unit(t, v, s, params={"setting": setting(t)})
        for t in sorted(tasks)
        for s in seeds
        for v in SPEC.selected_variants(cfg)
    ]


def adapter(in_dim: int, hidden: int, out_dim: int):
    import torch.nn as nn

    return nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, out_dim))


def clip_loss(a, b, temperature: float):
    """Symmetric InfoNCE over the cosine-similarity matrix (row i of a pairs with row i of b)."""
    import torch
    import torch.nn.functional as F

    logits = F.normalize(a, dim=1) @ F.normalize(b, dim=1).T / temperature
    target = torch.arange(len(a))
    return 0.5 * (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target))


def _train_rows(data: dict) -> np.ndarray:
    return (data["pert"] >= 0) & ~data["test_pert"] & ~data["test_batch"]


def batches(data: dict, cfg: SemiClippedConfig, rng: np.random.Generator, pea) -> list:
    """One epoch of weak pairs: each minibatch holds distinct perturbations; each
    transcriptomics sample is paired with a random image sample of the same perturbation
    (any batch). Where the task says ``pair_other_cell`` (a sample's two views are one
    cell) the image sample is another cell, and a perturbation with one training cell
    is left out. With PEA each sample gets a random correction from ``pea``."""
    rows = np.flatnonzero(_train_rows(data))
    rows = rows[rng.permutation(len(rows))]
    img_rows = {
        p: np.flatnonzero(_train_rows(data) & (data["pert"] == p))
        for p in np.unique(data["pert"][rows])
    }
    other_cell = "pair_other_cell" in data
    if other_cell:
        rows = rows[[len(img_rows[int(data["pert"][r])]) > 1 for r in rows]]
    out, cur, seen = [], [], set()
    for r in rows:
        p = int(data["pert"][r])
        if p in seen:
            continue
        cur.append(r)
        seen.add(p)
        if len(cur) == cfg.batch_size:
            out.append(np.array(cur))
            cur, seen = [], set()
    if len(cur) >= 2:
        out.append(np.array(cur))
    res = []
    for idx in out:
        if pea is None:
            x = data["tx_tvn"][idx]
        else:
            means, maps = pea
            k = rng.integers(means.shape[1], size=len(idx))
            b = data["batch"][idx]
            x = np.einsum("nd,nde->ne", data["tx"][idx] - means[b, k], maps[b, k])
        if other_cell:
            j = np.array([rng.choice(_others(img_rows[int(data["pert"][i])], i)) for i in idx])
        else:
            j = np.array([rng.choice(img_rows[int(data["pert"][i])]) for i in idx])
        res.append((x.astype(np.float32), data["img_emb"][j].astype(np.float32)))
    return res


def _others(pool: np.ndarray, row: int) -> np.ndarray:
    return pool[pool != row]


def dims(data: dict) -> tuple[int, int]:
    """(transcriptomics input, image embedding) widths of a task."""
    return int(np.shape(data["tx"])[1]), int(np.shape(data["img_emb"])[1])


def train_unit(
    unit: Unit,
    cfg: SemiClippedConfig,
    data: dict,
    resume_dir: Path,
    progress: Callable[[str], None],
) -> TrainedUnit:
    import torch
    from torch.utils.data import DataLoader

    from reprolab.core.training import fit_resumable
    from reprolab.methods.semiclipped.module import AdapterModule, WeakPairs

    data = {k: np.asarray(v) for k, v in data.items()}
    torch.manual_seed(unit.seed)
    tx_dim, img_dim = dims(data)
    tx_net = adapter(tx_dim, cfg.hidden, img_dim)
    img_net = adapter(img_dim, cfg.hidden, img_dim) if unit.variant == "joint_clip" else None
    pairs = WeakPairs(
        data, cfg, np.random.default_rng(unit.seed), unit.variant == "semiclipped_pea"
    )
    module = AdapterModule(tx_net, img_net, unit.variant, cfg.lr, cfg.temperature, pairs)
    fit_resumable(module, DataLoader(pairs, batch_size=None), None, cfg.epochs, resume_dir)
    history = module.history
    state = {f"tx.{k}": v for k, v in tx_net.state_dict().items()}
    return TrainedUnit(state=state, history=history)


def restore(unit: Unit, cfg: SemiClippedConfig, data: dict, state: dict) -> torch.nn.Module:
    tx_dim, img_dim = dims(data)
    net = adapter(tx_dim, cfg.hidden, img_dim)
    net.load_state_dict({k[3:]: v for k, v in state.items() if k.startswith("tx.")})
    return net.eval()


# ---------------------------------------------------------------- evaluate


def embed(model, unit: Unit, data: dict) -> np.ndarray:
    import torch

    if unit.variant == "raw":
        return np.asarray(data["tx"])
    if unit.variant == "tvn":
        return np.asarray(data["tx_tvn"])
    with torch.no_grad():
        return model(torch.from_numpy(np.asarray(data["tx_tvn"], np.float32))).numpy()


def evaluate_unit(
    model, unit: Unit, cfg: SemiClippedConfig, data: dict, history: list[dict]
) -> dict[str, float]:
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


def example_input(unit: Unit, cfg: SemiClippedConfig, data: dict):
    import torch

    return torch.from_numpy(np.asarray(data["tx_tvn"][:256], np.float32))


def calibration_inputs(unit: Unit, cfg: SemiClippedConfig, data: dict, model) -> list:
    import torch

    rows = _train_rows({k: np.asarray(data[k]) for k in ("pert", "test_pert", "test_batch")})
    return [torch.from_numpy(np.asarray(data["tx_tvn"], np.float32)[rows][:512])]


def plots(table: pd.DataFrame, out_dir: Path, trained) -> list[Path]:
    from reprolab.methods.semiclipped import plots as figs

    return [figs.recall_curves(table, out_dir / "recall_at_k.png", KS)]
