"""ff_graphs hooks for the pipeline stages (see reprolab.contract.MethodHooks).

Two kinds of units:
- ``Unit("graph_n<n>", family, seed_or_None, params={"n": n})``: the exact graph metrics
  (seed-free for the deterministic families; one per seed for random and searched);
- ``Unit(task, family, seed)``: a masked-attention model on the family's graph, trained
  at ``train_len`` and tested at ``test_lens``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from reprolab.contract import Run, TrainedUnit, Unit, figures_hook
from reprolab.methods.ff_graphs import graphs
from reprolab.methods.ff_graphs.config import FFGraphsConfig
from reprolab.methods.ff_graphs.graphs import is_metric_task, metric_task

if TYPE_CHECKING:
    import torch


# ---------------------------------------------------------------- prepare


def prepare(run: Run, raw_dir: Path) -> tuple[dict, dict]:
    from reprolab.core.transformer import sequence_task

    cfg = run.cfg
    out: dict[str, dict[str, np.ndarray]] = {
        metric_task(n): {"n": np.array([n])} for n in cfg.sizes
    }
    for k, task in enumerate(cfg.tasks):
        base = cfg.data_seed * 1000 + 100 * k
        arrays = {}
        x, y = sequence_task(task, cfg.n_train, cfg.train_len, cfg.vocab, base)
        arrays |= {"x_train": x, "y_train": y}
        x, y = sequence_task(task, cfg.n_test, cfg.train_len, cfg.vocab, base + 1)
        arrays |= {"x_test": x, "y_test": y}
        # validation sequences at the training length (a training signal: the probe
        # reads them to tell learning from memorising; no claim does)
        x, y = sequence_task(task, cfg.n_test, cfg.train_len, cfg.vocab, base + 50)
        arrays |= {"x_val": x, "y_val": y}
        for j, length in enumerate(cfg.test_lens):
            x, y = sequence_task(task, cfg.n_test, length, cfg.vocab, base + 2 + j)
            arrays |= {f"x_len{length}": x, f"y_len{length}": y}
        out[task] = arrays
    return out, {"tasks": list(cfg.tasks), "train_len": cfg.train_len}


# ---------------------------------------------------------------- graphs


@lru_cache(maxsize=64)
def searched_fractions(
    seed: int, k: int, trials: int, sizes: tuple[int, ...], eps: float
) -> tuple[float, ...]:
    return tuple(graphs.search(sizes, k, trials, seed, eps))


def graph(
    cfg: FFGraphsConfig, family: str, n: int, seed: int | None, g: int | None = None
) -> np.ndarray:
    """The graph of ``family`` on n nodes; ``g``: a graph variant's parameter
    (``graphs.PARAMETER``; the searched family's number of offsets), None: the default."""
    fr = ()
    if family == "searched":
        k = cfg.search_offsets if g is None else int(g)
        fr = searched_fractions(seed, k, cfg.search_trials, tuple(cfg.search_sizes), cfg.eps)
        g = None
    return graphs.build(family, n, seed=seed, w=cfg.window, searched=fr, g=g)


def unit_g(unit: Unit) -> int | None:
    """A trained unit's graph-variant parameter (None: its family's default graph)."""
    g = unit.param.get("g")
    return None if g is None else int(g)


def train_seeds(run: Run) -> list[int]:
    """The seeds the models are trained on: the run's first ``cfg.train_seeds`` (all of
    them when None); the metric units use every seed."""
    seeds = list(run.seeds)
    return seeds if run.cfg.train_seeds is None else seeds[: run.cfg.train_seeds]


def units(run: Run, tasks: Sequence[str]) -> list[Unit]:
    """The metric units of every family and size (one per seed for the seeded
    families, else seed-free), then the models of the trained families on every task: the
    family's default graph and each graph variant of ``cfg.graph_params`` (unit parameter
    ``g``), on the training seeds (:func:`train_seeds`)."""
    cfg, seeds, families = run.cfg, run.seeds, run.variants
    out = []
    for fam in families:
        for n in cfg.sizes:
            if fam in graphs.SEEDED:
                out += [Unit(metric_task(n), fam, s, {"n": n}) for s in seeds]
            else:
                out.append(Unit(metric_task(n), fam, None, {"n": n}))
    trained = train_seeds(run)
    for task in sorted(t for t in tasks if not is_metric_task(t)):
        for fam in families:
            if fam in cfg.train_families:
                out += [Unit(task, fam, s) for s in trained]
                for g in cfg.graph_params.get(fam, []):
                    out += [Unit(task, fam, s, {"g": g}) for s in trained]
    return out


# ---------------------------------------------------------------- models


def _build_model(cfg: FFGraphsConfig, unit: Unit):
    from torch import nn

    from reprolab.core.transformer import Encoder, TokenEmbedding, dag_mask

    max_len = max([cfg.train_len, *cfg.test_lens])

    class GraphModel(nn.Module):
        """Masked-attention encoder on the family's graph, read out at the sink; the
        graph is rebuilt for each sequence length (same rule, same seed)."""

        def __init__(self) -> None:
            super().__init__()
            self.encoder = Encoder(
                TokenEmbedding(cfg.vocab, cfg.dim, max_len=max_len),
                cfg.dim,
                cfg.depth,
                cfg.vocab,
                heads=cfg.heads,
                pool="last",
            )
            self._masks: dict[int, torch.Tensor] = {}

        def mask(self, length: int) -> torch.Tensor:
            if length not in self._masks:
                self._masks[length] = dag_mask(
                    graph(cfg, unit.variant, length, unit.seed, unit_g(unit))
                )
            return self._masks[length]

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            return self.encoder(ids, self.mask(ids.shape[1]))

    return GraphModel()


def _metric_holder(values: dict[str, float] | None = None):
    import torch
    from torch import nn

    class GraphMetrics(nn.Module):
        """The exact metrics of one graph (no network: nothing to quantize)."""

        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("values", torch.zeros(len(METRIC_NAMES), dtype=torch.float64))
            if values is not None:
                self.values.copy_(torch.tensor([values[k] for k in METRIC_NAMES]))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x

    return GraphMetrics()


METRIC_NAMES = ("mixing_time", "fidelity", "hitting_time", "fidelity_raw", "edges", "max_in_degree")


def train_unit(
    run: Run, unit: Unit, data: dict, resume_dir: Path, progress: Callable[[str], None]
) -> TrainedUnit:
    import torch

    cfg = run.cfg
    if is_metric_task(unit.task):
        m = graphs.metrics(graph(cfg, unit.variant, int(unit.param["n"]), unit.seed), cfg.eps)
        return TrainedUnit(state=_metric_holder(m).state_dict(), history=[])
    torch.manual_seed(unit.seed)
    model = _build_model(cfg, unit)
    x = torch.as_tensor(np.asarray(data["x_train"]))
    y = torch.as_tensor(np.asarray(data["y_train"]))
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.01)
    gen = torch.Generator().manual_seed(unit.seed)
    steps = cfg.epochs * max(1, len(x) // cfg.batch_size)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, cfg.lr, total_steps=steps)
    history = []
    for epoch in range(cfg.epochs):
        model.train()
        order = torch.randperm(len(x), generator=gen)
        losses = []
        for b in range(max(1, len(x) // cfg.batch_size)):
            idx = order[b * cfg.batch_size : (b + 1) * cfg.batch_size]
            loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            losses.append(float(loss.detach()))
        model.eval()
        entry = {"epoch": epoch, "train_loss": float(np.mean(losses))}
        if "x_val" in data:
            entry["val_acc"] = _accuracy(model, data["x_val"], data["y_val"])
        history.append(entry)
        progress(
            f"epoch {epoch + 1}/{cfg.epochs} loss {entry['train_loss']:.3f}"
            + (f" val acc {entry['val_acc']:.3f}" if "val_acc" in entry else "")
        )
    # the last training accuracy (first 1,000 training sequences), beside the validation
    # accuracy: the two tell a (task, family) that learns from one that memorises
    history[-1]["train_acc"] = _accuracy(model, x[:1000], y[:1000])
    return TrainedUnit(state=model.state_dict(), history=history)


def restore(run: Run, unit: Unit, data: dict, state: dict):
    from reprolab.core.training import restore_module

    if is_metric_task(unit.task):
        return restore_module(_metric_holder(), state)
    return restore_module(_build_model(run.cfg, unit), state)


# ---------------------------------------------------------------- evaluate


def _accuracy(model, x, y) -> float:
    import torch

    with torch.inference_mode():
        pred = model(torch.as_tensor(np.asarray(x))).argmax(-1).numpy()
    return float((pred == np.asarray(y)).mean())


def evaluate_unit(run: Run, model, unit: Unit, data: dict, history: list[dict]) -> dict[str, float]:
    if is_metric_task(unit.task):
        return {k: float(v) for k, v in zip(METRIC_NAMES, model.values.tolist(), strict=True)}
    cfg = run.cfg
    # the metrics of the graph the model runs on out of distribution (largest test length)
    big = max(cfg.test_lens)
    out = graphs.metrics(graph(cfg, unit.variant, big, unit.seed, unit_g(unit)), cfg.eps)
    out["id_acc"] = _accuracy(model, data["x_test"], data["y_test"])
    ood = []
    for length in cfg.test_lens:
        acc = _accuracy(model, data[f"x_len{length}"], data[f"y_len{length}"])
        out[f"acc_len{length}"] = acc
        ood.append(acc)
    out["ood_acc"] = float(np.mean(ood))
    return out


def example_input(run: Run, unit: Unit, data: dict):
    import torch

    if is_metric_task(unit.task):
        return torch.zeros(1, 1)
    return torch.as_tensor(np.asarray(data["x_test"])[:64])


def calibration_inputs(run: Run, unit: Unit, data: dict, model) -> list:
    """Training sequences (never test ones) calibrate activation thresholds."""
    import torch

    if is_metric_task(unit.task):
        return [torch.zeros(1, 1)]
    return [torch.as_tensor(np.asarray(data["x_train"])[:256])]


plots = figures_hook()
