"""hyper_attention hooks for the pipeline stages (see reprolab.contract.MethodHooks).

prepare draws, per task family and seed, the interaction functions; the samples
(training and validation sets at ``l_train``, a test set at ``l_train`` and at every size
of ``l_test``) are a seeded function of them. A unit (family, variant, seed, scale) trains one network on its
seed's training set with Adam (minibatches, cosine decay) on the mean squared error
against the noisy targets, and is evaluated against the clean targets at every size.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from reprolab.contract import Run, TrainedUnit, Unit, figures_hook
from reprolab.methods.hyper_attention.config import FAMILY_VARIANTS, HyperAttentionConfig
from reprolab.methods.hyper_attention.tasks import (
    FAMILIES,
    Interaction,
    make_task,
    one_hot,
    sample,
)

if TYPE_CHECKING:
    import torch


def _family_index(family: str) -> int:
    return FAMILIES.index(family)


def task_name(family: str, scale: float) -> str:
    """A readable task name (never parsed: family and scale are unit parameters)."""
    return family if scale == 1.0 else f"{family}-x{scale:g}"


def _draw(cfg: HyperAttentionConfig, family: str, seed: int) -> tuple[Interaction, float]:
    """The seed's interaction functions and its target scale (the clean target's std at
    l_train, on a probe sample)."""
    rng = np.random.default_rng([cfg.data_seed, _family_index(family), seed])
    task = make_task(
        family,
        rng,
        cfg.n_types,
        cfg.threeway_rank,
        cfg.coupled_a,
        cfg.coupled_b,
        cfg.grid,
        cfg.radius,
    )
    probe = task.target(task.draw(rng, 500, cfg.l_train))
    return task, float(probe.std()) or 1.0


def prepare(run: Run, raw_dir: Path) -> tuple[dict, dict]:
    """Per task (family, budget scale) and seed: the drawn interaction functions and the
    target scale. The samples are a pure function of them (:func:`splits`), regenerated
    where needed, so the budgets of one family share them without copies."""
    cfg, seeds = run.cfg, run.seeds
    datasets: dict[str, dict[str, np.ndarray]] = {}
    meta: dict = {"sizes": {}, "scale": {}}
    for family in cfg.families:
        arrays: dict[str, np.ndarray] = {}
        for seed in seeds:
            task, scale = _draw(cfg, family, seed)
            for key, value in task.params.items():
                arrays[f"s{seed}_{key}"] = np.asarray(value)
            arrays[f"s{seed}_scale"] = np.array([scale])
            meta["scale"][f"{family}/s{seed}"] = scale
        arrays["cards"] = np.array(task.cards, dtype=np.int64)
        arrays["noise"] = np.array([cfg.noise_of(family)])
        arrays["family"] = np.array([_family_index(family)], dtype=np.int64)
        for budget in cfg.scales:
            datasets[task_name(family, budget)] = arrays
            meta["sizes"][task_name(family, budget)] = cfg.n_train
    return datasets, meta


#: the last :func:`splits` result: evaluate asks for the same test sets once per precision
_LAST_SPLITS: dict[tuple, dict] = {}


def splits(
    cfg: HyperAttentionConfig, data: dict, seed: int, parts: Sequence[str] | None = None
) -> dict[str, dict[str, np.ndarray]]:
    """The seed's samples: ``train`` and ``val`` at l_train, ``test_L<n>`` at l_train and
    every size of l_test (or only ``parts``). Each part has its own random stream, seeded
    by (data_seed, family, seed, part), so it is identical on every call."""
    family = FAMILIES[int(np.asarray(data["family"])[0])]
    prefix = f"s{seed}_"
    params = {k[len(prefix) :]: np.asarray(v) for k, v in data.items() if k.startswith(prefix)}
    scale = float(params.pop("scale")[0])
    key = (cfg.model_dump_json(), family, seed, scale, None if parts is None else tuple(parts))
    if key in _LAST_SPLITS:
        return _LAST_SPLITS[key]
    cards = tuple(int(c) for c in np.asarray(data["cards"]))
    task = Interaction(family, cards, params)
    noise = float(np.asarray(data["noise"])[0])
    sizes = {
        "train": (cfg.n_train, cfg.l_train),
        "val": (cfg.n_val, cfg.l_train),
        **{f"test_L{n}": (cfg.n_test, n) for n in (cfg.l_train, *cfg.l_test)},
    }
    out = {}
    for index, (part, (n, length)) in enumerate(sizes.items()):
        if parts is None or part in parts:
            rng = np.random.default_rng([cfg.data_seed, _family_index(family), seed, index])
            out[part] = sample(task, rng, n, length, scale, noise)
    _LAST_SPLITS.clear()
    _LAST_SPLITS[key] = out
    return out


def units(run: Run, tasks: Sequence[str]) -> list[Unit]:
    """Per family and budget scale: the selected baselines at every seed, and the
    family's reference module at scale 1 (sorted by :meth:`Unit.sort_key`)."""
    cfg, seeds = run.cfg, run.seeds
    selected = set(run.variants)
    out = []
    for family in cfg.families:
        reference, *baselines = FAMILY_VARIANTS[family]
        for budget in cfg.scales:
            name = task_name(family, budget)
            if name not in tasks:
                continue
            params = {"family": family, "l_train": cfg.l_train, "scale": budget}
            variants = [v for v in baselines if v in selected]
            if budget == 1.0 and reference in selected:
                variants.insert(0, reference)
            out += [Unit(name, v, seed, params) for seed in seeds for v in variants]
    return sorted(out, key=Unit.sort_key)


def _codes(data: dict, ents: np.ndarray) -> torch.Tensor:
    import torch

    cards = tuple(int(c) for c in np.asarray(data["cards"]))
    return torch.as_tensor(one_hot(ents, cards))


def _dim(data: dict) -> int:
    return int(np.asarray(data["cards"]).sum())


def _reference_size(family: str, cfg: HyperAttentionConfig, d: int) -> int:
    """The method's size on a family: rank d for the pairwise modules (Thm 3.1's d = N),
    ``ha3_rank`` for order-3 HyperAttention."""
    return cfg.ha3_rank if FAMILY_VARIANTS[family][0] == "ha3" else d


def size_of(unit: Unit, cfg: HyperAttentionConfig, d: int) -> int:
    """The unit's rank or width: the method's own size, or the baseline's size matched to
    ``scale`` times the method's parameter count on the same task."""
    from reprolab.methods.hyper_attention.net import count, matched_size

    family = unit.param["family"]
    reference = FAMILY_VARIANTS[family][0]
    own = _reference_size(family, cfg, d)
    if unit.variant == reference:
        return own
    budget = float(unit.param["scale"]) * count(reference, d, own)
    return matched_size(unit.variant, d, budget, cfg.sa_heads, cfg.sa_mlp_ratio)


def _network(unit: Unit, cfg: HyperAttentionConfig, data: dict) -> torch.nn.Module:
    from reprolab.methods.hyper_attention.net import build

    d = _dim(data)
    return build(unit.variant, d, size_of(unit, cfg, d), cfg.sa_heads, cfg.sa_mlp_ratio)


def _nmse(pred: torch.Tensor, clean: torch.Tensor) -> float:
    return float(((pred - clean) ** 2).mean() / clean.var())


def train_unit(
    run: Run, unit: Unit, data: dict, resume_dir: Path, progress: Callable[[str], None]
) -> TrainedUnit:
    # A unit is a few hundred small steps (seconds): no resume points.
    import torch

    from reprolab.methods.hyper_attention.net import LINEAR

    torch.set_num_threads(1)  # tiny matrices: extra threads only synchronise
    cfg = run.cfg
    seed = unit.seed
    parts = splits(cfg, data, seed, ("train", "val"))
    x = _codes(data, parts["train"]["ents"])
    y = torch.as_tensor(parts["train"]["y"])
    x_val = _codes(data, parts["val"]["ents"])
    clean_val = torch.as_tensor(parts["val"]["clean"])
    torch.manual_seed(1000 * seed + _family_index(unit.param["family"]))
    model = _network(unit, cfg, data)
    lr = cfg.lr_linear if unit.variant in LINEAR else cfg.lr_softmax
    opt = torch.optim.Adam(model.parameters(), lr=lr, fused=True)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, cfg.steps)
    gen = torch.Generator().manual_seed(seed)
    history, running = [], []
    for step in range(1, cfg.steps + 1):
        rows = torch.randint(len(x), (cfg.batch,), generator=gen)
        loss = ((model(x[rows]) - y[rows]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        running.append(float(loss.detach()))
        if step % cfg.history_every == 0 or step == cfg.steps:
            with torch.no_grad():
                val = _nmse(model(x_val), clean_val)
            history.append({"step": step, "train_mse": float(np.mean(running)), "val_nmse": val})
            running = []
    progress(f"{unit.id}: val nmse {history[-1]['val_nmse']:.3g}")
    return TrainedUnit(state=model.state_dict(), history=history)


def restore(run: Run, unit: Unit, data: dict, state: dict) -> torch.nn.Module:
    from reprolab.core.training import restore_module

    return restore_module(_network(unit, run.cfg, data), state)


def evaluate_unit(run: Run, model, unit: Unit, data: dict, history: list[dict]) -> dict[str, float]:
    """Per population size n: ``nmse_L<n>`` = MSE against the clean targets / their
    variance, ``excess_L<n>`` = that MSE / noise variance (so the test MSE against noisy
    targets is (1 + excess) times the noise floor). Headlines: the values at l_train
    (``*_id``) and the worst over the other sizes (``*_ood``)."""
    import torch

    from reprolab.core.transformer import n_params

    cfg = run.cfg
    noise = float(np.asarray(data["noise"])[0])
    tests = [f"test_L{n}" for n in (cfg.l_train, *cfg.l_test)]
    parts = splits(cfg, data, unit.seed, tests)
    out: dict[str, float] = {}
    for n in (cfg.l_train, *cfg.l_test):
        x = _codes(data, parts[f"test_L{n}"]["ents"])
        clean = torch.as_tensor(parts[f"test_L{n}"]["clean"])
        with torch.inference_mode():
            pred = model(x).float()
        mse = float(((pred - clean) ** 2).mean())
        out[f"nmse_L{n}"] = mse / float(clean.var())
        out[f"excess_L{n}"] = mse / noise**2
    out["nmse_id"] = out[f"nmse_L{cfg.l_train}"]
    out["excess_id"] = out[f"excess_L{cfg.l_train}"]
    out["nmse_ood"] = max(out[f"nmse_L{n}"] for n in cfg.l_test)
    out["excess_ood"] = max(out[f"excess_L{n}"] for n in cfg.l_test)
    fp = _network(unit, cfg, data)  # the count of the fp32 architecture, at any precision
    out["n_params"] = float(n_params(fp))
    out["train_mse"] = float(history[-1]["train_mse"]) if history else float("nan")
    return out


def example_input(run: Run, unit: Unit, data: dict) -> torch.Tensor:
    cfg = run.cfg
    part = f"test_L{cfg.l_train}"
    return _codes(data, splits(cfg, data, unit.seed, (part,))[part]["ents"])[:64]


plots = figures_hook()
