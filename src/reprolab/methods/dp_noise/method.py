"""dp_noise hooks for the pipeline stages (see reprolab.contract.MethodHooks).

A task is one (sigma/s, k) setting; there is no dataset. Training a unit is: for the
``optimized`` variant, Algorithms 2-3 of the paper (noise.py) designing the noise for
that k from the discretised Gaussian; for ``optimized_from_laplace``, Algorithm 3 from
the equal-variance Laplace instead (this reproduction's variant, at the k of
``from_laplace_compositions``); for ``gaussian`` and ``laplace`` (equal variance
sigma^2, Laplace scale sigma/sqrt(2)), recording their parameter. Evaluation computes
epsilon at delta for k compositions with this method's accountant and with
dp-accounting's, plus the moments-accountant bound, and re-measures the optimized pmf
stored in low precision.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from reprolab.contract import Run, TrainedUnit, Unit, figures_hook
from reprolab.methods.dp_noise.config import DPNoiseConfig

if TYPE_CHECKING:
    pass


def prepare(run: Run, raw_dir: Path) -> tuple[dict, dict]:
    """No data: one 'dataset' per (sigma/s, k) task holding its parameters."""
    cfg = run.cfg
    tasks = {
        name: {
            "sigma": np.array([float(setting["sigma"])]),
            "k": np.array([setting["k"]], dtype=np.int64),
            "delta": np.array([cfg.delta]),
        }
        for name, setting in cfg.tasks().items()
    }
    return tasks, {"sizes": {}, "delta": cfg.delta, "sensitivity": 1.0}


#: closed-form or numerically accounted noise with no random part: seed-free
SEED_FREE = ("gaussian", "laplace")

#: the optimised variants and the shape Algorithm 3 starts from (noise.initial_pmf): the
#: paper's discretised Gaussian (Algorithm 2), or the equal-variance Laplace
STARTS = {"optimized": "gaussian", "optimized_from_laplace": "laplace"}


def seeded(variant: str, cfg: DPNoiseConfig) -> bool:
    """Whether a variant's result depends on the seed: only the optimised noise does, and
    only through the jitter of its starting point (``init_jitter > 0``)."""
    return variant not in SEED_FREE and cfg.init_jitter > 0


def units(run: Run, tasks: Sequence[str]) -> list[Unit]:
    """Per (sigma, k) task: the Gaussian and Laplace baselines once (seed-free: their
    epsilon is a closed form or a deterministic PLD computation), the optimised noise once
    per seed (the seed jitters its starting point); the Laplace-started variant only at
    the k of ``from_laplace_compositions``."""
    cfg = run.cfg
    settings = cfg.tasks()
    out = []
    for task in sorted(tasks):
        for variant in run.variants:
            if variant == "optimized_from_laplace" and not cfg.from_laplace(settings[task]["k"]):
                continue
            for seed in run.seeds if seeded(variant, cfg) else (None,):
                out.append(Unit(task, variant, seed, settings[task]))
    return out


def _setting(data: dict) -> tuple[float, int, float]:
    return float(data["sigma"][0]), int(data["k"][0]), float(data["delta"][0])


def _family(cfg: DPNoiseConfig):
    from reprolab.methods.dp_noise.noise import Family

    return Family(N=cfg.n_bins, r=cfg.tail_ratio, m=cfg.bins_per_sensitivity)


def train_unit(
    run: Run, unit: Unit, data: dict, resume_dir: Path, progress: Callable[[str], None]
) -> TrainedUnit:
    # An optimisation takes seconds, so an interrupted unit simply starts over.
    sigma, k, delta = _setting(data)
    if unit.variant == "gaussian":
        return TrainedUnit(state={"sigma": sigma}, history=[])
    if unit.variant == "laplace":  # equal variance: 2 b^2 = sigma^2
        return TrainedUnit(state={"scale": sigma / math.sqrt(2.0)}, history=[])

    import torch

    from reprolab.methods.dp_noise import noise

    cfg = run.cfg
    fam = _family(cfg)
    start = STARTS[unit.variant]
    p0 = noise.initial_pmf(sigma, fam, cfg.init_jitter, seed=unit.seed or 0, start=start)
    result = noise.optimize(
        p0,
        fam,
        sigma,
        k,
        delta,
        iterations=cfg.iterations,
        alpha_every=cfg.alpha_every,
        alpha_max=cfg.alpha_max,
        log_every=cfg.history_every,
        progress=progress,
    )
    progress(f"start {start}: moments bound {result.history[-1]['eps_moments']:.5g}")
    state = {
        "p": result.p.to(torch.float64),
        "alpha": float(result.alpha),
        "iterations": int(result.iterations),
    }
    return TrainedUnit(state=state, history=result.history)


@dataclass(frozen=True)
class Mechanism:
    """A trained unit: the noise and the setting it is evaluated in."""

    kind: str
    sigma: float
    k: int
    delta: float
    p: np.ndarray | None = None  # optimized: (p_0..p_N), float64
    alpha: float = math.nan
    scale: float = math.nan  # laplace


def restore(run: Run, unit: Unit, data: dict, state: dict) -> Mechanism:
    sigma, k, delta = _setting(data)
    if unit.variant in STARTS:
        p = np.asarray(state["p"].double().numpy())
        return Mechanism("optimized", sigma, k, delta, p=p, alpha=float(state["alpha"]))
    if unit.variant == "laplace":
        return Mechanism("laplace", sigma, k, delta, scale=float(state["scale"]))
    return Mechanism("gaussian", float(state["sigma"]), k, delta)


# ---------------------------------------------------------------- evaluate


def _eps_of_pmf(p: np.ndarray, fam, k: int, delta: float, h: float, t: int | None = None):
    """(pessimistic eps, mass at +inf after k uses) of the pmf p for a shift of t bins."""
    from reprolab.methods.dp_noise import accounting as acc
    from reprolab.methods.dp_noise.noise import pmf_pair

    upper, lower = pmf_pair(p, fam, fam.m if t is None else t)
    pld = acc.pld_from_pmfs(upper, lower, h)
    composed = acc.compose(pld, k)
    return acc.eps_for_delta(composed, delta), composed.inf_mass


def _renormalised(p: np.ndarray, fam) -> np.ndarray:
    import torch

    from reprolab.methods.dp_noise.noise import total_mass

    return p / float(total_mass(torch.as_tensor(p), fam))


def _low_precision(p: np.ndarray, fam, k: int, delta: float, h: float) -> dict[str, float]:
    """The pmf as it would be stored in 16 bits, renormalised, re-measured.

    bfloat16 keeps float32's exponent, so even 1e-20 survives with 8 bits of mantissa.
    float16 flushes probabilities below ~6e-8 to zero: the stored noise then has bounded
    support, and outputs only the shifted distribution can produce have infinite
    privacy loss; ``delta_inf_fp16`` is that mass after k uses (eps is infinite when it
    exceeds delta). ``eps_fp16_log`` stores log-probabilities in float16 instead.
    """
    import torch

    from reprolab.methods.dp_noise.noise import variance

    t = torch.as_tensor(p)
    bf16 = _renormalised(t.to(torch.bfloat16).double().numpy(), fam)
    fp16 = _renormalised(t.to(torch.float16).double().numpy(), fam)
    log16 = _renormalised(torch.exp(torch.log(t).to(torch.float16).double()).numpy(), fam)
    eps_bf16, _ = _eps_of_pmf(bf16, fam, k, delta, h)
    eps_log16, _ = _eps_of_pmf(log16, fam, k, delta, h)
    from reprolab.methods.dp_noise.accounting import pld_from_pmfs
    from reprolab.methods.dp_noise.noise import pmf_pair

    upper, lower = pmf_pair(fp16, fam, fam.m)
    inf_one = pld_from_pmfs(upper, lower, h).inf_mass
    zero = fp16 == 0
    weights = np.where(np.arange(p.size) == 0, 1.0, 2.0)
    weights[-1] = 2.0 / (1.0 - fam.r)
    return {
        "eps_bf16": eps_bf16,
        "eps_fp16_log": eps_log16,
        "var_bf16": float(variance(torch.as_tensor(bf16), fam)),
        "fp16_zero_bins": float(zero.sum()),
        "fp16_underflow_mass": float((p * weights)[zero].sum()),
        "delta_inf_fp16": 1.0 - (1.0 - inf_one) ** k,
    }


def evaluate_unit(
    run: Run, model: Mechanism, unit: Unit, data: dict, history: list[dict]
) -> dict[str, float]:
    from reprolab.methods.dp_noise import accounting as acc

    cfg = run.cfg
    h, k, delta, sigma = cfg.loss_grid, model.k, model.delta, model.sigma
    if model.kind == "gaussian":
        eps = acc.gaussian_eps(sigma, k, delta)  # closed form: no discretisation
        return {
            "eps": eps,
            "eps_low": eps,
            "eps_ref": acc.reference_eps_gaussian(sigma, k, delta, h),
            "eps_pld": acc.eps_pld(acc.pld_gaussian(sigma, h), k, delta),
            "eps_moments": acc.moments_eps(lambda a: acc.gaussian_rdp(a, sigma), k, delta),
            "variance": sigma**2,
        }
    if model.kind == "laplace":
        b = model.scale
        return {
            "eps": acc.eps_pld(acc.pld_laplace(b, h), k, delta),
            "eps_low": acc.eps_pld(
                acc.pld_laplace(b, h, pessimistic=False), k, delta, pessimistic=False
            ),
            "eps_ref": acc.reference_eps_laplace(b, k, delta, h),
            "eps_moments": acc.moments_eps(lambda a: acc.laplace_rdp(a, b), k, delta),
            "variance": 2 * b**2,
        }

    import torch

    from reprolab.methods.dp_noise import noise

    fam = _family(cfg)
    p = model.p
    pt = torch.as_tensor(p)
    upper, lower = noise.pmf_pair(p, fam, fam.m)
    eps, _ = _eps_of_pmf(p, fam, k, delta, h)
    eps_low = acc.eps_pld(
        acc.pld_from_pmfs(upper, lower, h, pessimistic=False), k, delta, pessimistic=False
    )
    # the paper accounts for the shift by s; a smaller shift t < m bins could be worse
    per_shift = [
        eps if t == fam.m else _eps_of_pmf(p, fam, k, delta, h, t)[0] for t in range(1, fam.m + 1)
    ]
    eps_moments, alpha_best = noise.eps_moments(pt, fam, k, delta)
    return {
        "eps": eps,
        "eps_low": eps_low,
        "eps_ref": acc.reference_eps_pmfs(upper, lower, k, delta, h),
        "eps_moments": eps_moments,
        "eps_maxshift": max(per_shift),
        "worst_shift_bins": float(int(np.argmax(per_shift)) + 1),
        "alpha": model.alpha,
        "alpha_best": alpha_best,
        "rdp_at_alpha": noise.renyi_dp(pt, fam, model.alpha),
        "variance": float(noise.variance(pt, fam)),
        "mass_error": abs(float(noise.total_mass(pt, fam)) - 1.0),
        **_low_precision(p, fam, k, delta, h),
    }


plots = figures_hook()
