"""bit_dgdm hooks for the pipeline stages (see reprolab.contract.MethodHooks).

One DiGress-style model is trained per (task, seed); the paper's comparisons are
quantization schemes of that model, which the quantize stage applies and evaluate
measures by sampling graphs from every precision with the same seed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from reprolab.contract import Run, TrainedUnit, Unit, figures_hook
from reprolab.methods.bit_dgdm import graphs
from reprolab.methods.bit_dgdm.config import BitDGDMConfig

if TYPE_CHECKING:
    import torch

#: number of node and edge types per task
TYPES = {"qm9": (len(graphs.ATOMS), len(graphs.BOND_ORDERS)), "community": (1, 2)}

# ---------------------------------------------------------------- prepare


def prepare(run: Run, raw_dir: Path) -> tuple[dict, dict]:
    cfg = run.cfg
    tasks, meta = {}, {}
    for name in cfg.datasets:
        if name == "qm9":
            arrays, info = graphs.qm9_graphs(
                cfg.qm9_train, cfg.qm9_val, cfg.qm9_test, cfg.data_seed
            )
            meta.update(info)
        else:
            arrays = graphs.community_graphs(
                cfg.community_train,
                cfg.community_val,
                cfg.community_test,
                tuple(cfg.community_nodes),
                cfg.p_in,
                cfg.p_out,
                cfg.data_seed,
            )
        tasks[name] = arrays
    sizes = {k: {p: len(v[f"n_{p}"]) for p in ("train", "val", "test")} for k, v in tasks.items()}
    return tasks, {**meta, "sizes": {k: v["train"] for k, v in sizes.items()}, "splits": sizes}


# ---------------------------------------------------------------- train


def units(run: Run, tasks: Sequence[str]) -> list[Unit]:
    """One unit per (task, seed) of the one variant, ``digress``."""
    return run.default_units(tasks)


def _split(data: dict, part: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    import torch

    return tuple(torch.from_numpy(np.asarray(data[f"{k}_{part}"])).long() for k in "xen")


def build(unit: Unit, cfg: BitDGDMConfig, data: dict):
    """The architecture of a unit (marginal buffers still uniform)."""
    from reprolab.methods.bit_dgdm.net import GraphDiffusion

    kx, ke = TYPES[unit.task]
    return GraphDiffusion(
        kx,
        ke,
        np.asarray(data["x_train"]).shape[1],
        cfg.steps,
        dx=cfg.hidden_x,
        de=cfg.hidden_e,
        dy=cfg.hidden_y,
        layers=cfg.layers,
        heads=cfg.heads,
    )


def marginals(data: dict, kx: int, ke: int) -> dict[str, torch.Tensor]:
    """Type marginals of the training graphs (real nodes; ordered real node pairs, i != j)
    and their node-count distribution: the buffers m_x, m_e, n_dist."""
    import torch

    x, e, n = (np.asarray(data[f"{k}_train"]) for k in "xen")
    n_max = x.shape[1]
    mask = np.arange(n_max)[None] < n[:, None]
    pair = mask[:, :, None] & mask[:, None, :] & ~np.eye(n_max, dtype=bool)
    m_x = np.bincount(x[mask], minlength=kx).astype(np.float64)
    m_e = np.bincount(e[pair], minlength=ke).astype(np.float64)
    n_dist = np.bincount(n, minlength=n_max + 1).astype(np.float64)
    return {
        k: torch.tensor(v / v.sum(), dtype=torch.float32)
        for k, v in (("m_x", m_x), ("m_e", m_e), ("n_dist", n_dist))
    }


def train_unit(
    run: Run, unit: Unit, data: dict, resume_dir: Path, progress: Callable[[str], None]
) -> TrainedUnit:
    import torch
    from torch.utils.data import DataLoader

    from reprolab.core.training import EpochBatchSampler, TensorBatches, fit_resumable
    from reprolab.methods.bit_dgdm.module import DiffusionModule

    cfg = run.cfg
    torch.manual_seed(unit.seed)
    model = build(unit, cfg, data)
    for name, value in marginals(data, *TYPES[unit.task]).items():
        getattr(model, name).copy_(value)
    module = DiffusionModule(model, cfg.lr, cfg.lambda_e, cfg.epochs, unit.seed)

    def loader(part: str, shuffle: bool) -> DataLoader:
        tensors = _split(data, part)
        sampler = EpochBatchSampler(len(tensors[0]), cfg.batch_size, unit.seed, shuffle)
        return DataLoader(TensorBatches(*tensors), sampler=sampler, batch_size=None)

    fit_resumable(
        module,
        loader("train", True),
        loader("val", False),
        cfg.epochs,
        resume_dir,
        trainer=run.trainer,
    )
    return TrainedUnit(state=model.state_dict(), history=module.history)


def restore(run: Run, unit: Unit, data: dict, state: dict) -> torch.nn.Module:
    from reprolab.core.training import restore_module

    return restore_module(build(unit, run.cfg, data), state)


# ---------------------------------------------------------------- evaluate


def _generator(unit: Unit, salt: int):
    import torch

    return torch.Generator().manual_seed(1_000_003 * unit.seed + salt)


def evaluate_unit(run: Run, model, unit: Unit, data: dict, history: list[dict]) -> dict[str, float]:
    from reprolab.core import quant
    from reprolab.methods.bit_dgdm import diffusion, metrics

    cfg = run.cfg
    # The same generator at every precision: differences come from quantization only.
    n_samples = cfg.qm9_samples if unit.task == "qm9" else cfg.community_samples
    samples = diffusion.sample(model, n_samples, _generator(unit, 1), cfg.sample_batch)
    samples = [(x.numpy(), e.numpy()) for x, e in samples]
    fp32_bytes = quant.effective_bytes(build(unit, cfg, data))
    eff = quant.effective_bytes(model)
    out: dict[str, float] = {
        "effective_mb": eff / 2**20,
        "memory_ratio": fp32_bytes / eff,
        "memory_ratio_16bit": fp32_bytes / 2 / eff,
    }
    train, test = (
        graphs.unpad(*(np.asarray(data[f"{k}_{p}"]) for k in "xen")) for p in ("train", "test")
    )
    out.update(_quality(unit, cfg, data, samples, train))
    out.update({f"{k}_test": v for k, v in _quality(unit, cfg, data, test, train).items()})
    gen_g, test_g = ([metrics.to_networkx(e) for _, e in part] for part in (samples, test))
    out.update(metrics.graph_mmds(gen_g, test_g))
    # The floor: as many training graphs as samples against the same test graphs.
    floor = metrics.graph_mmds([metrics.to_networkx(e) for _, e in train[: len(samples)]], test_g)
    out.update({f"{k}_floor": v for k, v in floor.items()})
    out["mean_nodes"] = float(np.mean([len(x) for x, _ in samples]))
    out["mean_edges"] = float(np.mean([(e > 0).sum() / 2 for _, e in samples]))
    return out


def _quality(unit: Unit, cfg: BitDGDMConfig, data: dict, samples: list, train: list) -> dict:
    from reprolab.methods.bit_dgdm import metrics

    if unit.task == "qm9":
        return metrics.molecule_metrics(samples, set(np.asarray(data["smiles_train"]).tolist()))
    return metrics.community_metrics(
        [metrics.to_networkx(e) for _, e in samples],
        [metrics.to_networkx(e) for _, e in train],
        cfg.p_in,
        cfg.p_out,
    )


def calibration_inputs(run: Run, unit: Unit, data: dict, model) -> list[tuple]:
    """Data-free: the denoiser inputs at every step of the full-precision model's own
    reverse chain (``calib_graphs`` graphs, a generator disjoint from evaluation's)."""
    from reprolab.methods.bit_dgdm import diffusion

    cfg = run.cfg
    seen: list[tuple] = []
    diffusion.sample(model, cfg.calib_graphs, _generator(unit, 2), cfg.calib_graphs, seen)
    return seen


#: test graphs in the latency batch of example_input
LATENCY_BATCH = 32


def example_input(run: Run, unit: Unit, data: dict) -> tuple:
    """32 test graphs noised half-way (t = T / 2): the denoiser's positional args."""
    import torch

    from reprolab.methods.bit_dgdm import diffusion
    from reprolab.methods.bit_dgdm.module import node_mask_of

    cfg = run.cfg
    kx, ke = TYPES[unit.task]
    x, e, n = (t[:LATENCY_BATCH] for t in _split(data, "test"))
    mask = node_mask_of(n, x.shape[1])
    m = marginals(data, kx, ke)
    _, abar = diffusion.cosine_schedule(cfg.steps)
    gen = torch.Generator().manual_seed(unit.seed)
    t = cfg.steps // 2
    xt, et = diffusion.noise(x, e, mask, abar[t].expand(len(n)), m["m_x"], m["m_e"], gen)
    xo, eo = diffusion.one_hot_graph(xt, et, mask, kx, ke)
    return xo, eo, torch.full((len(n), 1), t / cfg.steps), mask


plots = figures_hook()
