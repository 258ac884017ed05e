"""Rotation-fusion hooks for the pipeline stages (see reprolab.contract.MethodHooks).

One trained unit is one *pair* of endpoint ViTs (regime = task, pair index = seed and
the unit parameter ``pair``), trained inside ``train_unit`` and saved as one state dict
(``a.*``, ``b.*``; and ``base.*`` for a fine-tune unit when
``RotationFusionConfig.saves_base``). ``restore`` rebuilds the pair and computes its
fusions (plain average, permutation matching, rotation matching, at every alpha of the
sweep) plus a randomly rotated copy of ``a``: all deterministic functions of the two
endpoints, held in one :class:`FusionBundle`, with the matching's diagnostics
(``fusion.match_stats``) as a plain attribute, reported by the endpoints units. The
quantize stage thus quantizes every endpoint and every fused transformer; the
evaluation-only variants read their member of the bundle.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from reprolab.contract import Run, TrainedUnit, Unit, figures_hook
from reprolab.core import datasets
from reprolab.methods.rotation_fusion.config import RotationFusionConfig

if TYPE_CHECKING:
    import torch

FUSION_VARIANTS = ("average", "perm", "rotation")
#: history entries carry the model they belong to: 0 = a, 1 = b, 2 = the base model
MODEL_CODES = {"a": 0, "b": 1, "base": 2}


def alpha_metric(alpha: float) -> str:
    return f"test_acc_alpha_{round(alpha * 100):03d}"


# ---------------------------------------------------------------- prepare


def task_name(regime: str, pair: int) -> str:
    """One task per (regime, pair slot): unit ids are (task, variant, seed), so each pair
    of one seed needs its own task; the regime and the slot are unit parameters."""
    return f"{regime}-p{pair}"


def prepare(run: Run, raw_dir: Path) -> tuple[dict, dict]:
    """One task per (regime, pair slot), the same arrays. With ``finetune_base_dataset``,
    the fine-tune tasks also carry the base dataset's train and validation parts
    (``x_base_train``, ``y_base_train``, ``x_base_val``, ``y_base_val``; its test part is
    dropped), and ``info["finetune_base"]`` its sizes."""
    cfg = run.cfg
    tasks, info = datasets.image_tasks(
        run.asset("images"), [cfg.dataset], cfg.max_rows, cfg.split, cfg.data_seed
    )
    arrays = tasks[cfg.dataset]
    out = {}
    for regime in cfg.regimes:
        regime_arrays = arrays
        if regime == "finetune" and cfg.finetune_base_dataset is not None:
            base, base_info = datasets.image_tasks(
                run.asset("images"),
                [cfg.finetune_base_dataset],
                cfg.max_rows,
                cfg.split,
                cfg.data_seed,
                parts=("base_train", "base_val", None),
            )
            regime_arrays = {**arrays, **base[cfg.finetune_base_dataset]}
            info = {**info, "finetune_base": base_info}
        for k in range(cfg.pairs_per_seed):
            out[task_name(regime, k)] = regime_arrays
    return out, info


# ---------------------------------------------------------------- train


def units(run: Run, tasks: Sequence[str]) -> list[Unit]:
    """Every task x variant x seed, each carrying its regime and pair slot."""
    cfg = run.cfg
    slots = {task_name(r, k): (r, k) for r in cfg.regimes for k in range(cfg.pairs_per_seed)}
    return [
        Unit(u.task, u.variant, u.seed, {"regime": slots[u.task][0], "pair": slots[u.task][1]})
        for u in run.default_units(tasks)
    ]


def _pair_seed(unit: Unit) -> int:
    """The pair's first seed: ``1000 seed + 10 pair`` (``pair`` < 10, ``seed`` >= 0)."""
    return 1000 * int(unit.seed) + 10 * int(unit.param["pair"])


def model_seeds(unit: Unit) -> dict[str, int]:
    """The seed of each model a unit trains (its initialisation and batch order): in
    the ``seeds`` regime ``a`` and ``b`` get the pair's first seed and the next; in
    ``finetune`` the base gets the first, the fine-tunes the next two. The seeds of two
    pairs (another slot or another run seed) are disjoint, so within a regime no model
    is shared between pairs: each pair is its own two (three) trainings, independent by
    construction on the fixed data."""
    s = _pair_seed(unit)
    if unit.param["regime"] == "seeds":
        return {"a": s, "b": s + 1}
    return {"base": s, "a": s + 1, "b": s + 2}


#: the self-fusion gate passes when the fused model's logits are within this of the
#: model's (the invariance claim's bound: float32 round-off is ~1e-6)
SELF_FUSION_TOL = 1e-4
#: whether the gate's permuted copy permutes the residual stream, per regime: models
#: trained apart share no basis of the residual stream (``seeds``); fine-tunes of one
#: base share its basis (``finetune``), so no residual permutation separates them
GATE_PERMUTES_RESID = {"seeds": True, "finetune": False}


def resid_on(cfg: RotationFusionConfig, regime: str) -> bool:
    """Whether the regime's matched fusions permute the residual stream first."""
    return cfg.resid_match == "permutation" and regime in cfg.resid_regimes


def self_fusion_gate(cfg: RotationFusionConfig, unit: Unit, net, data: dict) -> dict[str, float]:
    """The premise of the fusion claims, blind to every accuracy: ``net`` fused (weight
    ``alpha``) with a randomly permuted copy of itself, by each matched fusion of the
    regime as configured, must give back ``net``'s logits on the first
    ``invariance_rows`` validation inputs (no labels read). ``self_fusion_err``: the max
    absolute logit change (``fusion.self_fusion_err``); ``self_fusion_ok``: 1.0 when it
    is within :data:`SELF_FUSION_TOL`, else 0.0."""
    import torch

    from reprolab.methods.rotation_fusion import fusion

    regime = unit.param["regime"]
    x = datasets.part_tensors(data, "val")[0][: cfg.invariance_rows]
    gen = torch.Generator().manual_seed(_pair_seed(unit) + 11)
    err = fusion.self_fusion_err(
        net, x, gen, GATE_PERMUTES_RESID[regime], resid_on(cfg, regime), cfg.alpha
    )
    return {"self_fusion_err": err, "self_fusion_ok": float(err <= SELF_FUSION_TOL)}


def image_side(data: dict) -> int:
    return int(round(np.sqrt(np.asarray(data["x_train"]).shape[1])))


def build_net(cfg: RotationFusionConfig, side: int):
    from reprolab.core.transformer import vit

    return vit(side, cfg.patch, cfg.dim, cfg.depth, cfg.heads, 10, cfg.mlp_ratio)


def finetune_subsets(
    y: np.ndarray, skew: float, seed: int, rows: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint row subsets A and B of the training part: with ``rows`` > 0, ``rows``
    rows are first drawn at random without replacement (the official
    ``get_random_subset``), else every row is used; then a row of classes 0-4 goes to A
    with probability ``skew`` (else B), a row of classes 5-9 to B with probability
    ``skew``. A and B together are the ``rows`` drawn (sorted indices)."""
    if rows > len(y):
        raise ValueError(f"finetune_rows ({rows}) exceeds the {len(y)} training rows")
    rng = np.random.default_rng(seed)
    pool = np.sort(rng.choice(len(y), rows, replace=False)) if rows else np.arange(len(y))
    low = y[pool] < 5
    to_a = np.where(low, rng.random(len(pool)) < skew, rng.random(len(pool)) >= skew)
    return pool[np.flatnonzero(to_a)], pool[np.flatnonzero(~to_a)]


def _fit(net, x, y, val, lr, epochs, seed, resume_dir, code, batch_size, trainer):
    import torch

    from reprolab.core.training import ClassifierModule, fit_supervised

    torch.manual_seed(seed)
    module = ClassifierModule(net, lr, epochs)
    fit_supervised(module, (x, y), val, batch_size, epochs, seed, resume_dir, trainer=trainer)
    return [{"model": float(code), **h} for h in module.history]


def train_unit(
    run: Run, unit: Unit, data: dict, resume_dir: Path, progress: Callable[[str], None]
) -> TrainedUnit:
    import copy

    import torch

    cfg = run.cfg
    x_tr, y_tr = datasets.part_tensors(data, "train")
    val = datasets.part_tensors(data, "val")
    side, seed, seeds = image_side(data), _pair_seed(unit), model_seeds(unit)
    history: list[dict] = []
    if unit.param["regime"] == "seeds":
        nets = {}
        for name in ("a", "b"):
            torch.manual_seed(seeds[name])  # a different initialisation per endpoint
            nets[name] = build_net(cfg, side)
            history += _fit(
                nets[name],
                x_tr,
                y_tr,
                val,
                cfg.lr,
                cfg.epochs,
                seeds[name],
                resume_dir / name,
                MODEL_CODES[name],
                cfg.batch_size,
                run.trainer,
            )
            progress(f"{name} trained")
    else:
        if cfg.finetune_base_dataset is not None:  # "pretrained" on another dataset
            x_base, y_base = datasets.part_tensors(data, "base_train")
            val_base = datasets.part_tensors(data, "base_val")
        else:
            x_base, y_base, val_base = x_tr, y_tr, val
        torch.manual_seed(seeds["base"])
        base = build_net(cfg, side)
        history += _fit(
            base,
            x_base,
            y_base,
            val_base,
            cfg.lr,
            cfg.epochs,
            seeds["base"],
            resume_dir / "base",
            MODEL_CODES["base"],
            cfg.batch_size,
            run.trainer,
        )
        progress("base trained")
        rows = finetune_subsets(y_tr.numpy(), cfg.finetune_skew, seed, cfg.finetune_rows)
        batch = cfg.finetune_batch_size or cfg.batch_size
        nets = {}
        for name, idx in zip(("a", "b"), rows, strict=True):
            nets[name] = copy.deepcopy(base)
            idx_t = torch.from_numpy(idx)
            history += _fit(
                nets[name],
                x_tr[idx_t],
                y_tr[idx_t],
                val,
                cfg.finetune_lr,
                cfg.finetune_epochs,
                seeds[name],
                resume_dir / name,
                MODEL_CODES[name],
                batch,
                run.trainer,
            )
            progress(f"fine-tune {name} trained")
        if cfg.saves_base:  # measured against in restore (dist_a_base_rel, ...)
            nets["base"] = base
    state = {
        f"{n}.{k}": v.detach().clone()
        for n, net in nets.items()
        for k, v in net.state_dict().items()
    }
    # how far apart the endpoints ended (and, with a base, how far each moved from it):
    # a property of the weights, which a probe reads before any evaluation
    nets = {n: net.eval() for n, net in nets.items()}
    signals = {
        **matching_stats(cfg, nets, unit.param["regime"]),
        **self_fusion_gate(cfg, unit, nets["a"], data),
    }
    return TrainedUnit(state=state, history=history, signals=signals)


# ---------------------------------------------------------------- restore: the bundle


def _bundle_class():
    import torch
    from torch import nn

    class FusionBundle(nn.Module):
        """Endpoints ``a``, ``b``, a randomly rotated ``a_rot`` and every fusion
        ``<how>_<i>`` (alpha = ``alphas[i]``); forward runs them all (stacked logits).
        ``stats``: the matching's diagnostics, measured on the fp32 endpoints; a plain
        attribute, so it is not in the state dict (sizes and quantized files unchanged)
        and a quantized copy keeps the fp32 values."""

        def __init__(
            self, members: dict[str, nn.Module], alphas: list[float], stats: dict[str, float]
        ) -> None:
            super().__init__()
            self.members = nn.ModuleDict(members)
            self.alphas = list(alphas)
            self.stats = dict(stats)

        def fused(self, how: str, alpha: float) -> nn.Module:
            return self.members[f"{how}_{self.alphas.index(alpha)}"]

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.stack([m(x) for m in self.members.values()])

    return FusionBundle


def sweep_alphas(cfg: RotationFusionConfig) -> list[float]:
    return sorted({*cfg.alphas, cfg.alpha})


def endpoints(cfg: RotationFusionConfig, data: dict, state: dict, base: bool = False) -> dict:
    """The saved models ``a`` and ``b`` (and ``base``, when asked and saved)."""
    from reprolab.core.training import restore_module

    side = image_side(data)
    names = ["a", "b"]
    if base and any(k.startswith("base.") for k in state):
        names.append("base")
    return {n: restore_module(build_net(cfg, side), state, prefix=f"{n}.") for n in names}


def matching_stats(cfg: RotationFusionConfig, nets: dict, regime: str) -> dict[str, float]:
    """``fusion.match_stats`` of ``b`` matched to ``a`` (``MATCH_METRICS`` of the spec, and
    ``resid_fixed_frac`` where the regime's fusions match the residual stream,
    :func:`resid_on`); with a saved base, how far each fine-tune moved from it:
    ``dist_a_base_rel``, ``dist_b_base_rel`` (weight distance over the base's weight
    norm; the fine-tunes share the base's basis, so no matching)."""
    from reprolab.methods.rotation_fusion import fusion

    stats = fusion.match_stats(nets["a"], nets["b"], resid=resid_on(cfg, regime))
    if "base" in nets:
        norm = fusion.weight_norm(nets["base"])
        for n in ("a", "b"):
            stats[f"dist_{n}_base_rel"] = fusion.weight_distance(nets[n], nets["base"]) / norm
    return stats


def restore(run: Run, unit: Unit, data: dict, state: dict):
    import torch

    from reprolab.methods.rotation_fusion import fusion

    cfg = run.cfg
    regime = unit.param["regime"]
    nets = {n: net.eval() for n, net in endpoints(cfg, data, state, base=True).items()}
    stats = {
        **matching_stats(cfg, nets, regime),
        **self_fusion_gate(cfg, unit, nets["a"], data),
    }
    nets.pop("base", None)
    alphas = sweep_alphas(cfg)
    members = dict(nets)
    gen = torch.Generator().manual_seed(_pair_seed(unit) + 7)
    members["a_rot"] = fusion.random_symmetry(nets["a"], gen).eval()
    for how in FUSION_VARIANTS:
        # the residual permutation (where on) is the same for both matched fusions
        aligned = fusion.aligned(nets["a"], nets["b"], how, resid_on(cfg, regime))
        for i, alpha in enumerate(alphas):
            members[f"{how}_{i}"] = fusion.interpolate(nets["a"], aligned, alpha).eval()
    return _bundle_class()(members, alphas, stats).eval()


# ---------------------------------------------------------------- evaluate


def _accuracy(net, x, y) -> float:
    import torch

    with torch.no_grad():
        return float((net(x).argmax(-1) == y).float().mean())


def evaluate_unit(run: Run, model, unit: Unit, data: dict, history: list[dict]):
    import torch

    cfg = run.cfg
    x_va, y_va = datasets.part_tensors(data, "val")
    x_te, y_te = datasets.part_tensors(data, "test")
    m = model.members
    if unit.variant == "endpoints":
        val = {n: _accuracy(m[n], x_va, y_va) for n in ("a", "b")}
        test = {n: _accuracy(m[n], x_te, y_te) for n in ("a", "b")}
        best = max(("a", "b"), key=lambda n: val[n])  # picked on validation, never test
        x = x_te[: cfg.invariance_rows]
        with torch.no_grad():
            err = float((m["a"](x) - m["a_rot"](x)).abs().max())
        return {
            "test_acc": test[best],
            "val_acc": val[best],
            "test_acc_a": test["a"],
            "test_acc_b": test["b"],
            "invariance_err": err,
            **model.stats,  # the matching, on the fp32 weights at every precision
        }
    out = {
        "test_acc": _accuracy(model.fused(unit.variant, cfg.alpha), x_te, y_te),
        "val_acc": _accuracy(model.fused(unit.variant, cfg.alpha), x_va, y_va),
    }
    for alpha in sweep_alphas(cfg):
        out[alpha_metric(alpha)] = _accuracy(model.fused(unit.variant, alpha), x_te, y_te)
    return out


example_input = datasets.example_rows(64)
calibration_inputs = datasets.calibration_rows(256)


plots = figures_hook()
