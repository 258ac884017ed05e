"""Optimized noise distributions for Renyi DP (Gilani et al., Sec. 3-4), as pure functions.

Units: the query sensitivity is s = 1. Every privacy quantity of an additive mechanism
depends on sigma/s only (paper Remark 3.7), so ``sigma`` below *is* sigma/s. Bins have
width ``Delta = 1/m`` with ``m = s/Delta`` an integer, so the shifts of the inner
maximisation are ``t in {1, ..., m}`` bins (Theorem 3.6).

The family (Definition 3.3, symmetric piecewise-constant density): bin ``i`` covers
``((i - 1/2) Delta, (i + 1/2) Delta)`` and carries probability

    P(i) = p_|i|                   for |i| <  N
    P(i) = p_N r^(|i| - N)         for |i| >= N          (geometric tails)

so the optimisation variable is ``p = (p_0, ..., p_N)``, with two linear constraints
``A p = b``: normalisation (Eq. 16) ``p_0 + 2 sum_{0<j<N} p_j + 2 p_N / (1 - r) = 1``
and the variance, held at sigma^2 (Eq. 21)
``Delta^2/12 + 2 Delta^2 sum_{0<i<N} p_i i^2 + 2 p_N Delta^2 S2 = sigma^2`` with
``S2 = sum_{i>=N} r^(i-N) i^2`` in closed form (Eq. 50).

For a shift by a whole number of bins the density ratio is constant on every bin, so
the Renyi divergence (and the privacy loss) of the density equals that of the bin
probabilities: the continuous problem is the discrete one on bins (Theorem 3.6).

The objective (Eqs. 12, 13, 23) is ``g_alpha(p) = max_t sum_i P(i)^alpha P(i-t)^(1-alpha)``,
convex in ``p``; the geometric tails are summed in closed form, so nothing is truncated.
It is minimised by the preconditioned gradient descent of Algorithm 3: gradient at the
worst shift, preconditioner ``M = diag(p)^-1`` (a multiplicative step, so ``p`` stays
strictly positive), projection onto the null space of ``A diag(p)``, a step chosen
among ``mu_ub, mu_ub/2, ..., mu_ub/2^10`` and a Newton step on alpha every ``T``
iterations to minimise the moments-accountant bound (Eq. 25).

The paper starts Algorithm 3 from a Gaussian of the target variance (Algorithm 2,
``initial_pmf``); ``initial_pmf(start="laplace")`` starts it from the equal-variance
Laplace instead (the variant ``optimized_from_laplace``, see the README).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from scipy.special import ndtr

DTYPE = torch.float64


@dataclass(frozen=True)
class Family:
    """The grid of Definition 3.3: ``N`` free bins, tail ratio ``r``, ``m`` bins per s."""

    N: int
    r: float
    m: int

    @property
    def delta(self) -> float:
        return 1.0 / self.m


# ------------------------------------------------------------------ constraints


def tail_second_moment(N: int, r: float) -> float:
    """S2 = sum_{i >= N} r^(i-N) i^2 (Eq. 50)."""
    return (r**2 * (N - 1) ** 2 + N**2 * (1 - 2 * r) + r * (2 * N + 1)) / (1 - r) ** 3


def norm_row(fam: Family) -> torch.Tensor:
    """Weights of p in the total probability (Eq. 16)."""
    w = torch.full((fam.N + 1,), 2.0, dtype=DTYPE)
    w[0] = 1.0
    w[fam.N] = 2.0 / (1.0 - fam.r)
    return w


def cost_row(fam: Family) -> torch.Tensor:
    """Weights of p in the variance minus its constant Delta^2/12 (Eq. 21)."""
    i = torch.arange(fam.N + 1, dtype=DTYPE)
    c = 2.0 * fam.delta**2 * i**2
    c[fam.N] = 2.0 * fam.delta**2 * tail_second_moment(fam.N, fam.r)
    return c


def total_mass(p: torch.Tensor, fam: Family) -> torch.Tensor:
    return p @ norm_row(fam)


def variance(p: torch.Tensor, fam: Family) -> torch.Tensor:
    """Var Z of the piecewise-constant density (Eq. 21; p normalised)."""
    return fam.delta**2 / 12.0 + p @ cost_row(fam)


# ------------------------------------------------------------------ the pmf on bins


def log_window(logp: torch.Tensor, fam: Family, pad: int) -> torch.Tensor:
    """log P(i) for i = -(N+pad) .. N+pad (last axis), from log p (last axis N+1)."""
    a = torch.arange(-(fam.N + pad), fam.N + pad + 1).abs()
    tail = (a - fam.N).clamp(min=0).to(DTYPE) * math.log(fam.r)
    return logp[..., a.clamp(max=fam.N)] + tail


def pmf_pair(p: np.ndarray, fam: Family, t: int) -> tuple[np.ndarray, np.ndarray]:
    """The mechanism's output distributions for neighbours whose queries differ by s*t/m:
    upper P and lower T_t P on the same outcomes, as exact finite vectors.

    Outcomes: the bins i = -N+1 .. N+t-1 one by one, then two aggregated outcomes, the
    left tail {i <= -N} and the right tail {i >= N+t}, on each of which the likelihood
    ratio P(i)/P(i-t) is constant (r^-t and r^t), so aggregating them is exact.
    """
    logp = torch.log(torch.as_tensor(p, dtype=DTYPE))
    win = log_window(logp, fam, fam.m).numpy()  # index of bin i: i + N + m
    i = np.arange(-fam.N + 1, fam.N + t)
    upper = np.exp(win[i + fam.N + fam.m])
    lower = np.exp(win[i - t + fam.N + fam.m])
    pn, r = float(p[fam.N]), fam.r
    left = (pn / (1 - r), pn * r**t / (1 - r))
    right = (pn * r**t / (1 - r), pn / (1 - r))
    return (
        np.concatenate([upper, [left[0], right[0]]]),
        np.concatenate([lower, [left[1], right[1]]]),
    )


# ------------------------------------------------------------------ Renyi objective


def log_g(logp: torch.Tensor, fam: Family, alpha: torch.Tensor | float) -> torch.Tensor:
    """log g_alpha(p, t) for t = 1..m (last axis), batched over leading axes of logp.

    g_alpha(p, t) = sum_i P(i)^alpha P(i-t)^(1-alpha) (Eqs. 12, 23): the middle bins
    -N < i < N+t explicitly, the two tails {i <= -N} and {i >= N+t} in closed form
    p_N r^((1-alpha) t) / (1-r) and p_N r^(alpha t) / (1-r). Computed in log space.
    """
    N, m = fam.N, fam.m
    win = log_window(logp, fam, m)
    i = torch.arange(-N + 1, N + m)  # every middle bin of the largest shift
    t = torch.arange(1, m + 1)
    here = win[..., i + N + m]  # (..., L)
    there = win[..., (i[None, :] - t[:, None]) + N + m]  # (..., m, L)
    terms = alpha * here[..., None, :] + (1 - alpha) * there
    valid = i[None, :] < N + t[:, None]
    terms = torch.where(valid, terms, torch.tensor(-math.inf, dtype=DTYPE))
    log_r = math.log(fam.r)
    base = logp[..., N : N + 1] - math.log(1 - fam.r)
    tf = t.to(DTYPE)
    left = base + (1 - alpha) * tf * log_r
    right = base + alpha * tf * log_r
    stacked = torch.cat([terms, left[..., :, None], right[..., :, None]], dim=-1)
    out = torch.logsumexp(stacked, dim=-1)
    return torch.nan_to_num(out, nan=math.inf)  # a zero p_i: infinite divergence


def renyi_dp(p: torch.Tensor, fam: Family, alpha: float) -> float:
    """gamma(alpha) = max_t D_alpha(P || T_t P) of one use of the mechanism (Eq. 4)."""
    with torch.no_grad():
        return float(log_g(torch.log(p), fam, alpha).max()) / (alpha - 1)


def moments_bound(log_g_max: torch.Tensor, alpha, k: int, delta: float):
    """The moments-accountant epsilon for k compositions at order alpha (Eqs. 7, 25)."""
    return (k * log_g_max + math.log(1 / delta)) / (alpha - 1)


def eps_moments(p: torch.Tensor, fam: Family, k: int, delta: float) -> tuple[float, float]:
    """min over alpha > 1 of the moments-accountant bound: (epsilon, alpha)."""
    from scipy.optimize import minimize_scalar

    logp = torch.log(p)

    def bound(a: float) -> float:
        with torch.no_grad():
            return float(moments_bound(log_g(logp, fam, a).max(), a, k, delta))

    res = minimize_scalar(bound, bounds=(1.0 + 1e-3, 400.0), method="bounded")
    return float(res.fun), float(res.x)


# ------------------------------------------------------------------ Algorithm 2


def _bin_masses(upper: np.ndarray, fam: Family) -> np.ndarray:
    """p_0..p_N of a symmetric density from its upper tail at the bin edges,
    ``upper[i] = P(X > (i + 1/2) Delta)``; the mass beyond bin N-1 is made geometric
    (ratio r) with p_N chosen so the tail keeps it (Algorithm 2, lines 5-8)."""
    p = np.empty(fam.N + 1)
    p[0] = 1.0 - 2.0 * upper[0]
    p[1 : fam.N] = upper[: fam.N - 1] - upper[1 : fam.N]
    p[fam.N] = (1.0 - fam.r) * upper[fam.N - 1]
    return p


def gaussian_like(sigma_hat: float, fam: Family) -> np.ndarray:
    """Bin masses of N(0, sigma_hat^2) with the tail beyond bin N-1 made geometric
    (Algorithm 2, lines 5-8)."""
    edges = (np.arange(fam.N + 1) + 0.5) * fam.delta / sigma_hat
    return _bin_masses(ndtr(-edges), fam)  # P(Z > (i + 1/2) Delta), accurate far out


def laplace_like(sigma_hat: float, fam: Family) -> np.ndarray:
    """Bin masses of the Laplace distribution of standard deviation ``sigma_hat`` (scale
    b = sigma_hat / sqrt(2)), the tail beyond bin N-1 made geometric as for the
    Gaussian: the other baseline, as a starting point of Algorithm 3."""
    b = sigma_hat / math.sqrt(2.0)
    upper = 0.5 * np.exp(-(np.arange(fam.N + 1) + 0.5) * fam.delta / b)  # P(X > edge)
    return _bin_masses(upper, fam)


#: the shapes Algorithm 3 may start from
STARTS = {"gaussian": gaussian_like, "laplace": laplace_like}


def initial_pmf(
    sigma: float, fam: Family, jitter: float = 0.0, seed: int = 0, start: str = "gaussian"
) -> np.ndarray:
    """Algorithm 2: a Gaussian-like p (or, with ``start="laplace"``, a Laplace-like one)
    whose variance (Eq. 21) is sigma^2, found by bisection on the shape's standard
    deviation. ``jitter`` > 0 multiplies p by exp(jitter * z), z ~ N(0, 1) drawn from
    ``seed``, before the bisection (the only thing a seed changes: the optimiser is
    deterministic, so the spread over seeds measures how far from converged it stops)."""
    if start not in STARTS:
        raise ValueError(f"unknown start {start!r}: {', '.join(STARTS)}")
    shape = STARTS[start]
    noise = np.exp(jitter * np.random.default_rng(seed).standard_normal(fam.N + 1))
    w, c = norm_row(fam).numpy(), cost_row(fam).numpy()

    def build(sigma_hat: float) -> tuple[np.ndarray, float]:
        p = shape(sigma_hat, fam) * noise
        p /= p @ w
        return p, fam.delta**2 / 12.0 + p @ c

    lo, hi = 1e-3 * sigma, 2.0 * sigma
    if build(hi)[1] < sigma**2:
        raise ValueError("cannot reach the variance: widen the grid (N * Delta)")
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if build(mid)[1] < sigma**2:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-15 * sigma:
            break
    p, _ = build(lo)  # the side with Var <= sigma^2: the cost constraint holds
    if not np.all(p > 0):
        raise ValueError("the initial pmf underflows: N * Delta is too many sigmas")
    return p


# ------------------------------------------------------------------ Algorithm 3


@dataclass
class Optimized:
    p: torch.Tensor
    alpha: float
    history: list[dict[str, float]]
    iterations: int


def _newton_alpha(
    logp: torch.Tensor, fam: Family, alpha: float, k: int, delta: float, alpha_max: float
) -> float:
    """A Newton step on alpha of the moments-accountant bound gamma(alpha) at the current
    p (Alg. 3, line 21), kept in (1, alpha_max]. Safeguarded: the step is halved until
    gamma does not increase (at most 10 times), so every update of Algorithm 3 is a
    descent step on the same bound."""
    logp = logp.detach()
    a = torch.tensor(alpha, dtype=DTYPE, requires_grad=True)
    gamma = moments_bound(log_g(logp, fam, a).max(), a, k, delta)
    (d1,) = torch.autograd.grad(gamma, a, create_graph=True)
    (d2,) = torch.autograd.grad(d1, a)
    if not torch.isfinite(d2) or d2 <= 0:  # not locally convex: keep alpha
        return alpha
    step = -float(d1.detach()) / float(d2)
    with torch.no_grad():
        for _ in range(10):
            new = min(alpha_max, max(1.0 + 1e-3, alpha + step))
            if moments_bound(log_g(logp, fam, new).max(), new, k, delta) <= gamma:
                return new
            step /= 2
    return alpha


def _project(g: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """g - B+ B g: the part of g in the null space of B (Alg. 3, lines 8-9)."""
    return g - B.T @ torch.linalg.solve(B @ B.T, B @ g)


def _min_norm(G: torch.Tensor) -> torch.Tensor:
    """The shortest vector in the convex hull of the rows of G (a tiny QP on the simplex
    weights, solved by SLSQP): along it every row's function decreases."""
    from scipy.optimize import minimize

    K = (G @ G.T).numpy()
    n = K.shape[0]
    scale = float(np.abs(K).max()) or 1.0
    res = minimize(
        lambda lam: lam @ K @ lam / scale,
        np.full(n, 1.0 / n),
        jac=lambda lam: 2 * K @ lam / scale,
        bounds=[(0.0, 1.0)] * n,
        constraints=[{"type": "eq", "fun": lambda lam: lam.sum() - 1.0}],
        method="SLSQP",
        options={"ftol": 1e-15, "maxiter": 200},
    )
    lam = torch.as_tensor(np.clip(res.x, 0.0, None), dtype=DTYPE)
    return (lam / lam.sum()) @ G


def _line_search(p, direction, obj, fam, alpha, mus, max_halvings):
    """Lines 10-19: q = 1 - mu d with mu in mu_ub * {1, 1/2, ..., 1/2^10}, the one with
    the lowest objective if it is below the current one. Near the optimum none of these
    may decrease (the curvature outgrows mu_ub); the next batch of halvings is then tried,
    up to ``max_halvings`` (the authors' notebook shifts its powers later for this reason).
    Returns (p, objective) or None."""
    positive = direction > 0
    if not positive.any():
        return None
    mu_ub = 1.0 / float(direction[positive].max())  # keeps q = 1 - mu d >= 0 (line 10)
    for first in range(0, max_halvings + 1, mus.numel()):
        mu = mu_ub * mus * 0.5**first
        candidates = p * (1.0 - mu[:, None] * direction)  # p = M^-1 q (line 14)
        with torch.no_grad():
            values = log_g(torch.log(candidates.clamp(min=0)), fam, alpha).amax(dim=-1)
        best = int(values.argmin())
        if values[best] < obj:
            return candidates[best], values[best]
    return None


def optimize(
    p0: np.ndarray,
    fam: Family,
    sigma: float,
    k: int,
    delta: float,
    iterations: int,
    alpha_every: int,
    halvings: int = 10,
    max_halvings: int = 54,
    alpha_max: float = 256.0,
    tie_tol: float = 1e-3,
    log_every: int = 10,
    progress: Callable[[str], None] | None = None,
    alpha0: float | None = None,
) -> Optimized:
    """Preconditioned gradient descent of Algorithm 3 from ``p0``.

    One deviation, used only where the paper's step fails: the objective is a maximum
    over shifts, and where two shifts tie (the optimum is staircase-like, so shifts
    t and t' < t often do) the gradient of the single worst shift is not a descent
    direction of the maximum; the descent would stall short of the optimum. When the
    line search along it finds no decrease, the step is retried along the min-norm
    convex combination of the projected gradients of every shift within ``tie_tol`` of
    the worst (a descent direction for all of them). When that fails too and alpha does
    not move, the run has converged and stops early.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # vectors of ~10^3 entries: threads only add overhead
    try:
        p = torch.as_tensor(p0, dtype=DTYPE).clone()
        if alpha0 is None:  # Alg. 3 line 1 (s = 1): the best order for Gaussian noise
            alpha0 = math.sqrt(2 * math.log(1 / delta) / k) * sigma + 1
        alpha = min(alpha0, alpha_max)
        A = torch.stack([cost_row(fam), norm_row(fam)])
        mus = 0.5 ** torch.arange(halvings + 1, dtype=DTYPE)
        history: list[dict[str, float]] = []

        def record(step: int, obj: float) -> None:
            history.append(
                {
                    "step": step,
                    "rdp": obj / (alpha - 1),
                    "alpha": alpha,
                    "eps_moments": float(moments_bound(torch.tensor(obj), alpha, k, delta)),
                }
            )

        step = 0
        for step in range(1, iterations + 1):
            logp = torch.log(p).requires_grad_(True)
            per_shift = log_g(logp, fam, alpha)
            t_star = int(per_shift.argmax())  # worst shift (line 4)
            obj = per_shift[t_star].detach()
            if step == 1:
                record(0, float(obj))
            B = A * p  # A M^-1 (line 7)
            B = B / B.norm(dim=1, keepdim=True)  # row scaling leaves the null space as is
            # gradient in log p = the preconditioned gradient M^-1 grad_p = p * grad_p: in
            # the basis q = M p the current point is the all-ones vector (lines 5-6)
            (grad,) = torch.autograd.grad(per_shift[t_star], logp, retain_graph=True)
            moved = _line_search(p, _project(grad, B), obj, fam, alpha, mus, max_halvings)
            if moved is None:
                ties = (per_shift.detach() >= obj - tie_tol).nonzero().flatten().tolist()
                if len(ties) > 1:
                    rows = [
                        _project(torch.autograd.grad(per_shift[t], logp, retain_graph=True)[0], B)
                        for t in ties
                    ]
                    direction = _min_norm(torch.stack(rows))
                    moved = _line_search(p, direction, obj, fam, alpha, mus, max_halvings)
            if moved is not None:
                p, obj = moved
            new_alpha = alpha
            if step % alpha_every == 0 or moved is None:  # lines 20-21
                new_alpha = _newton_alpha(torch.log(p), fam, alpha, k, delta, alpha_max)
            converged = moved is None and new_alpha == alpha
            if new_alpha != alpha:
                alpha = new_alpha
                with torch.no_grad():
                    obj = log_g(torch.log(p), fam, alpha).max()
            if step % log_every == 0 or step == iterations or converged:
                record(step, float(obj))
                if progress is not None and step % (log_every * 20) == 0:
                    progress(f"step {step}: alpha {alpha:.3f}, rdp {history[-1]['rdp']:.6g}")
            if converged:
                break
        return Optimized(p=p.detach(), alpha=alpha, history=history, iterations=step)
    finally:
        torch.set_num_threads(threads)
