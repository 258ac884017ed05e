"""grokformer hooks for the pipeline stages (see reprolab.contract.MethodHooks).

prepare draws every CSBM graph (one per requested homophily and graph draw, and one per
band-pass draw), records each graph's realised Kesten-Stigum ratio (the premise), and the 2D
grid of the filter-fitting task, and computes each graph's normalized-Laplacian
eigendecomposition once. A node unit (task, variant, seed) splits the nodes with its
seed and trains one classifier full batch (all ``epochs``, or until the validation loss
has not improved for ``patience`` epochs), keeping the state of its best validation
accuracy; a filter unit draws its training and held-out signals with its seed and fits
one filter to the task's response.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from reprolab.contract import Run, TrainedUnit, TrainedUnits, Unit
from reprolab.methods.grokformer import graphs
from reprolab.methods.grokformer.config import (
    FILTER_VARIANTS,
    NODE_VARIANTS,
    GrokFormerConfig,
)

if TYPE_CHECKING:
    import pandas as pd
    import torch

#: offset of the held-out signal draw of a filter unit
HELD_OUT = 100_003


def prepare(run: Run, raw_dir: Path) -> tuple[dict, dict]:
    cfg = run.cfg
    tasks: dict[str, dict[str, np.ndarray]] = {}
    meta: dict = {"sizes": {}, "realised_homophily": {}, "graph_signal": {}}
    f32 = np.float32
    for name, p in cfg.tasks().items():
        if "homophily" in p or "spectrum" in p:
            if "homophily" in p:
                seed = int(
                    np.random.default_rng(
                        [cfg.data_seed, round(1000 * p["homophily"]), p["draw"]]
                    ).integers(2**31)
                )
                g = graphs.csbm(
                    cfg.nodes, cfg.classes, cfg.features, p["homophily"], cfg.degree,
                    cfg.separation, seed,
                )  # fmt: skip
            else:  # the band-pass CSBM: its own seed stream (no homophily in it)
                seed = int(np.random.default_rng([cfg.data_seed, 7_777, p["draw"]]).integers(2**31))
                g = graphs.bandpass_csbm(
                    cfg.nodes, cfg.classes, cfg.communities, cfg.features,
                    cfg.bandpass_degree, cfg.class_share, cfg.separation, cfg.nuisance, seed,
                )  # fmt: skip
            n = len(g["y"])
            lam, u = graphs.eigendecomposition(g["edge_index"], n)
            realised = graphs.edge_homophily(g["edge_index"], g["y"])
            signal = graphs.graph_signal(g["edge_index"], g["y"])
            tasks[name] = {
                "x": g["x"].astype(f32),
                "y": g["y"].astype(np.int64),
                "edge_index": g["edge_index"],
                "evals": lam.astype(f32),
                "evecs": u.astype(f32),
                "realised_homophily": np.array([realised]),
                "graph_signal": np.array([signal]),
            }
            meta["realised_homophily"][name] = realised
            meta["graph_signal"][name] = signal
        else:
            side = cfg.grid_side
            edges = graphs.grid_edges(side)
            lam, u = graphs.eigendecomposition(edges, side * side)
            tasks[name] = {
                "edge_index": edges,
                "evals": lam.astype(f32),
                "evecs": u.astype(f32),
                "target": graphs.response(p["response"], lam).astype(f32),
            }
            n = side * side
        meta["sizes"][name] = n
    return tasks, meta


def units(run: Run, tasks: Sequence[str]) -> list[Unit]:
    """Every task x seed x selected variant of the task's family (filter variants on a
    filter task, node classifiers on a graph), with the task's setting as parameters."""
    settings = run.cfg.tasks()

    def family(task: str) -> tuple[str, ...]:
        return FILTER_VARIANTS if "response" in settings[task] else NODE_VARIANTS

    return [
        Unit(u.task, u.variant, u.seed, settings[u.task])
        for u in run.default_units(tasks)
        if u.variant in family(u.task)
    ]


def _graph(data: dict) -> dict:
    import torch

    return {
        "edge_index": torch.as_tensor(np.asarray(data["edge_index"])),
        "evals": torch.as_tensor(np.asarray(data["evals"])),
        "evecs": torch.as_tensor(np.asarray(data["evecs"])),
    }


def build(unit: Unit, cfg: GrokFormerConfig, data: dict) -> torch.nn.Module:
    from reprolab.methods.grokformer.net import FILTER_MODELS, NODE_MODELS

    graph = _graph(data)
    if unit.variant in FILTER_MODELS:
        return FILTER_MODELS[unit.variant](graph, cfg)
    return NODE_MODELS[unit.variant](graph, cfg.features, cfg.classes, cfg)


def signals(unit: Unit, cfg: GrokFormerConfig, data: dict, held_out: bool):
    """(X, Y) of shape (N, images): seeded grid signals and their target-filtered
    versions Y = U diag(h(lambda)) U^T X."""
    import torch

    seed = unit.seed + (HELD_OUT if held_out else 0)
    x = graphs.grid_signals(cfg.grid_side, cfg.filter_images, seed).T
    u = np.asarray(data["evecs"], dtype=np.float64)
    y = u @ (np.asarray(data["target"], dtype=np.float64)[:, None] * (u.T @ x))
    return torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y, dtype=torch.float32)


def _fit_polynomial(model, x, y) -> list[dict]:
    """The polynomial filter's exact optimum: its SSE is a convex quadratic in the hop
    weights gamma, solved by least squares in float64 (the best any optimiser can reach
    for this class on the training signals, a stronger baseline than a fixed Adam budget
    on the ill-conditioned monomial basis)."""
    import torch

    hops = model.prop
    op = hops.op.to_dense().double()
    stack, z = [x.double()], x.double()
    for _ in range(hops.hops):
        z = op @ z
        stack.append(z)
    design = torch.stack([s.reshape(-1) for s in stack], dim=1)
    gamma = torch.linalg.lstsq(design, y.double().reshape(-1, 1), driver="gelsd").solution
    with torch.no_grad():
        hops.gamma.weight.copy_(gamma.T.float())
        sse = float((model(x) - y).pow(2).sum(0).mean())
    return [{"step": 0, "train_sse": sse}]


def _fit_filter(model, unit: Unit, cfg: GrokFormerConfig, data: dict) -> list[dict]:
    import torch

    x, y = signals(unit, cfg, data, held_out=False)
    if unit.variant == "gpr_filter":
        return _fit_polynomial(model, x, y)
    # foreach: bit-identical to the per-tensor default, faster (test_optim_foreach)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.filter_lr, foreach=True)
    history = []
    for step in range(1, cfg.filter_steps + 1):
        opt.zero_grad(set_to_none=True)
        loss = (model(x) - y).pow(2).sum(0).mean()  # SSE per image, mean over images
        loss.backward()
        opt.step()
        if step % cfg.history_every == 0 or step == cfg.filter_steps:
            history.append({"step": step, "train_sse": float(loss.detach())})
    return history


class ValLossPatience:
    """The reference's stopping rule (GGA23/GrokFormer train.py): after every epoch, a
    validation loss below the lowest so far resets the count of epochs without a new
    minimum, any other value (ties included) adds one; stop when the count reaches
    ``patience``, i.e. ``patience`` epochs after the last minimum. The reference starts
    the minimum at 100.0, here at +inf (the same for any loss below 100)."""

    def __init__(self, patience: int) -> None:
        self.patience = patience
        self.min_loss, self.min_epoch, self.since = math.inf, 0, 0

    def update(self, val_loss: float, epoch: int) -> bool:
        """Record ``epoch``'s validation loss; True when training stops after it."""
        if val_loss < self.min_loss:
            self.min_loss, self.min_epoch, self.since = val_loss, epoch, 0
        else:
            self.since += 1
        return self.since >= self.patience


def _fit_node(model, unit: Unit, cfg: GrokFormerConfig, data: dict) -> list[dict]:
    """Full-batch Adam for ``cfg.epochs`` epochs, or until ``cfg.patience`` epochs pass
    without a new minimum of the validation loss (:class:`ValLossPatience`); the model
    ends in the state of the first epoch of the best validation accuracy among the
    epochs run (the reference reports that epoch's test accuracy).

    History: an entry every ``history_every`` epochs and at the last epoch run. With
    ``patience`` set, every entry also has ``val_loss``, and the last one ``stop_epoch``
    (the last epoch run), ``stopped_early`` (1: patience ran out, 0: ``epochs``
    reached), ``best_epoch`` (the state kept) and ``min_val_loss_epoch``. With
    ``patience`` None the history is as before the option existed."""
    import torch
    from torch.nn import functional as F

    x = torch.as_tensor(np.asarray(data["x"]))
    y = torch.as_tensor(np.asarray(data["y"]))
    train, val, _ = graphs.split(len(y), cfg.split, unit.seed)
    opt = torch.optim.Adam(
        model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, foreach=True
    )
    stopper = None if cfg.patience is None else ValLossPatience(cfg.patience)
    best, best_state, best_epoch, history = -1.0, None, 0, []
    for epoch in range(1, cfg.epochs + 1):
        model.train()
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x)[train], y[train])
        loss.backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            out = model(x)
            val_acc = float((out[val].argmax(1) == y[val]).float().mean())
            val_loss = None if stopper is None else float(F.cross_entropy(out[val], y[val]))
        if val_acc > best:
            best, best_state, best_epoch = val_acc, copy.deepcopy(model.state_dict()), epoch
        stop = stopper is not None and stopper.update(val_loss, epoch)
        last = stop or epoch == cfg.epochs
        if epoch % cfg.history_every == 0 or last:
            entry = {"epoch": epoch, "train_loss": float(loss.detach()), "val_acc": val_acc}
            if stopper is not None:
                entry["val_loss"] = val_loss
                if last:
                    entry |= {
                        "stop_epoch": epoch,
                        "stopped_early": float(stop),
                        "best_epoch": best_epoch,
                        "min_val_loss_epoch": stopper.min_epoch,
                    }
            history.append(entry)
        if stop:
            break
    model.load_state_dict(best_state)
    return history


def train_unit(
    run: Run, unit: Unit, data: dict, resume_dir: Path, progress: Callable[[str], None]
) -> TrainedUnit:
    # A unit is a few hundred full-batch steps on a graph of a few hundred nodes (under
    # a second or two; up to 2000 epochs, a few seconds, with the reference's early
    # stopping): no resume points.
    import torch

    torch.set_num_threads(1)  # small dense products: more threads only synchronise
    torch.manual_seed(unit.seed)
    cfg = run.cfg
    model = build(unit, cfg, data)
    if unit.variant in FILTER_VARIANTS:
        history = _fit_filter(model, unit, cfg, data)
    else:
        history = _fit_node(model, unit, cfg, data)
    return TrainedUnit(state=model.state_dict(), history=history)


def restore(run: Run, unit: Unit, data: dict, state: dict) -> torch.nn.Module:
    from reprolab.core.training import restore_module

    return restore_module(build(unit, run.cfg, data), state)


def evaluate_unit(run: Run, model, unit: Unit, data: dict, history: list[dict]) -> dict[str, float]:
    import torch

    cfg = run.cfg
    torch.set_num_threads(1)
    if unit.variant in FILTER_VARIANTS:
        x, y = signals(unit, cfg, data, held_out=True)
        with torch.inference_mode():
            pred = model(x).float().numpy()
        y = y.numpy()
        return {
            "sse": float(((pred - y) ** 2).sum(0).mean()),
            "r2": float(np.mean([graphs.r2(y[:, i], pred[:, i]) for i in range(y.shape[1])])),
        }
    x = torch.as_tensor(np.asarray(data["x"]))
    y = np.asarray(data["y"])
    _, val, test = graphs.split(len(y), cfg.split, unit.seed)
    with torch.inference_mode():
        pred = model(x).float().argmax(1).numpy()
    return {
        "acc": float(np.mean(pred[test] == y[test])),
        "val_acc": float(np.mean(pred[val] == y[val])),
        "realised_homophily": float(np.asarray(data["realised_homophily"])[0]),
        **graph_premise(data),
    }


def graph_premise(data: dict) -> dict[str, float]:
    """The graph's premise metrics, from the generated graph and its labels only (never
    a model's accuracy): ``graph_signal`` (graphs.graph_signal, the realised
    Kesten-Stigum ratio) and ``graph_signal_ok`` (1 when it is at least
    graphs.SIGNAL_THRESHOLD). Graphs prepared before the premise existed: nothing."""
    if "graph_signal" not in data:
        return {}
    signal = float(np.asarray(data["graph_signal"])[0])
    return {
        "graph_signal": signal,
        "graph_signal_ok": float(signal >= graphs.SIGNAL_THRESHOLD),
    }


def example_input(run: Run, unit: Unit, data: dict) -> torch.Tensor:
    if unit.variant in FILTER_VARIANTS:
        return signals(unit, run.cfg, data, held_out=False)[0]
    import torch

    return torch.as_tensor(np.asarray(data["x"]))


def plots(run: Run, table: pd.DataFrame, out_dir: Path, trained: TrainedUnits) -> list[Path]:
    from reprolab.methods.grokformer import plots as figs

    paths = []
    if "homophily" in table.columns and table.homophily.notna().any():
        paths.append(figs.accuracy_vs_homophily(table, out_dir / "accuracy_vs_homophily.png"))
    if "response" in table.columns and table.response.notna().any():
        paths.append(figs.filter_responses(trained, out_dir / "filter_responses.png"))
        paths.append(figs.filter_errors(table, out_dir / "filter_sse.png"))
    return paths
