"""(epsilon, delta) of k-fold compositions: this method's own accountant, closed forms,
and the independent reference (Google's ``dp-accounting`` PLD accountant).

Own accountant (privacy-loss distribution, PLD): for neighbouring output distributions
(P, Q) the privacy loss is L = log P(Y)/Q(Y), Y ~ P; for k independent uses the loss is
the sum of k independent copies, and

    delta(eps) = E[(1 - exp(eps - L_k))_+] + P(L_k = +inf)                  (hockey stick)

Losses are put on a grid of width ``h``: rounded up (pessimistic: an upper bound on
delta, hence on eps) or down (optimistic: a lower bound), the k-fold sum is one FFT
power, and eps(delta) is inverted exactly on the resulting atoms. Loss mass beyond the
range that holds all but ``tail`` of it is moved to +inf (pessimistic) or dropped to the
range's end (optimistic), the way ``dp-accounting`` truncates too.

Sensitivity is 1 throughout (sigma means sigma/s).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import log_ndtr, ndtr


@dataclass(frozen=True)
class Pld:
    """Losses ``(offset + j) * h`` with masses ``pmf[j]``, plus mass at +inf."""

    offset: int
    pmf: np.ndarray
    h: float
    inf_mass: float = 0.0

    @property
    def losses(self) -> np.ndarray:
        return (self.offset + np.arange(self.pmf.size)) * self.h


# ------------------------------------------------------------------ building PLDs


def _bucket(losses, masses, h, pessimistic, tail) -> Pld:
    """Round atoms (finite losses) onto the grid, truncating the extreme tails."""
    losses = np.asarray(losses, float)
    masses = np.asarray(masses, float)
    keep = masses > 0
    losses, masses = losses[keep], masses[keep]
    order = np.argsort(losses)
    losses, masses = losses[order], masses[order]
    cum = np.cumsum(masses)
    total = cum[-1]
    # the range holding all but `tail` of the mass (split between the two ends)
    lo = losses[np.searchsorted(cum, tail / 2, side="right").clip(max=losses.size - 1)]
    hi_index = np.searchsorted(cum, total - tail / 2, side="left").clip(max=losses.size - 1)
    hi = losses[hi_index]
    inf_mass = 0.0
    if pessimistic:
        above = losses > hi
        inf_mass = float(masses[above].sum())  # upper tail: treat as infinite loss
        losses, masses = np.maximum(losses[~above], lo), masses[~above]  # raise the lower
        idx = np.ceil(losses / h - 1e-9).astype(np.int64)
    else:
        losses = np.clip(losses, lo, hi)  # optimistic: pull both tails inwards
        idx = np.floor(losses / h + 1e-9).astype(np.int64)
    offset = int(idx.min())
    pmf = np.bincount(idx - offset, weights=masses)
    return Pld(offset, pmf, h, inf_mass)


def pld_from_pmfs(
    upper: np.ndarray, lower: np.ndarray, h: float, pessimistic: bool = True, tail: float = 1e-15
) -> Pld:
    """PLD of the pair (P, Q) = (upper, lower) given on the same outcomes."""
    upper = np.asarray(upper, float)
    lower = np.asarray(lower, float)
    finite = (upper > 0) & (lower > 0)
    inf_mass = float(upper[(upper > 0) & (lower <= 0)].sum())  # Q = 0 < P: infinite loss
    losses = np.log(upper[finite]) - np.log(lower[finite])
    pld = _bucket(losses, upper[finite], h, pessimistic, tail)
    return Pld(pld.offset, pld.pmf, h, pld.inf_mass + inf_mass)


def pld_laplace(scale: float, h: float, pessimistic: bool = True, tail: float = 1e-15) -> Pld:
    """Exact PLD of the Laplace mechanism, P = Lap(0, b), Q = Lap(1, b), on a grid.

    L(x) = (|x - 1| - |x|) / b: +1/b for x <= 0 (mass 1/2), -1/b for x >= 1 (mass
    exp(-1/b)/2), and (1 - 2x)/b in between, where P(L > l) = F((1 - b l)/2) with F the
    Laplace CDF; every grid cell gets its exact mass from F.
    """
    b = scale
    eps0 = 1.0 / b
    n = int(math.ceil(eps0 / h))
    edges = np.arange(-n, n + 1) * h  # loss cell (edges[j], edges[j+1]]
    edges = np.clip(edges, -eps0, eps0)
    x = (1.0 - b * edges) / 2.0  # L > edge  <=>  X < x (X in (0, 1))
    cdf = 0.5 + 0.5 * (1.0 - np.exp(-x / b))  # F(x) for x >= 0
    cell = cdf[:-1] - cdf[1:]  # mass of L in (edges[j], edges[j+1]]
    mids = (edges[:-1] + edges[1:]) / 2.0
    cont = cell > 0
    losses = np.concatenate([mids[cont], [eps0, -eps0]])
    masses = np.concatenate([cell[cont], [0.5, 0.5 * math.exp(-eps0)]])
    # a cell's mass sits anywhere in it: round the cell's ends, not its midpoint
    if pessimistic:
        losses[: cont.sum()] = edges[1:][cont]
    else:
        losses[: cont.sum()] = edges[:-1][cont]
    return _bucket(losses, masses, h, pessimistic, tail)


def pld_gaussian(sigma: float, h: float, pessimistic: bool = True, tail: float = 1e-15) -> Pld:
    """The Gaussian mechanism's PLD, L ~ N(mu^2/2, mu^2) with mu = 1/sigma, on a grid
    (only used to test the FFT composition against the closed form)."""
    mu = 1.0 / sigma
    half = 12.0 * mu + mu**2
    n = int(math.ceil(half / h))
    edges = np.arange(-n, n + 1) * h  # loss cells (edges[j], edges[j+1]] on the grid
    cdf = ndtr((edges - mu**2 / 2) / mu)
    cell = np.diff(cdf)
    ends = edges[1:] if pessimistic else edges[:-1]
    pld = _bucket(ends, cell, h, pessimistic, tail)
    beyond = float(ndtr(-(edges[-1] - mu**2 / 2) / mu))  # above the grid (~1e-33)
    return Pld(pld.offset, pld.pmf, h, pld.inf_mass + beyond) if pessimistic else pld


# ------------------------------------------------------------------ composing, inverting


def _truncate(pld: Pld, tail: float, pessimistic: bool) -> Pld:
    """Cut the grid to the range holding all but ``tail`` of the mass: pessimistic moves
    the upper tail to +inf and the lower tail up onto the first kept loss; optimistic
    moves the upper tail down onto the last kept loss and drops the lower tail."""
    cum = np.cumsum(pld.pmf)
    total = cum[-1]
    first = int(np.searchsorted(cum, tail / 2, side="right"))
    last = int(np.searchsorted(cum, total - tail / 2, side="left"))
    first, last = min(first, pld.pmf.size - 1), min(max(last, first), pld.pmf.size - 1)
    pmf = pld.pmf[first : last + 1].copy()
    below = cum[first - 1] if first > 0 else 0.0
    above = total - cum[last]
    inf_mass = pld.inf_mass
    if pessimistic:
        pmf[0] += below
        inf_mass += above
    else:
        pmf[-1] += above
    return Pld(pld.offset + first, pmf, pld.h, inf_mass)


def _convolve(a: Pld, b: Pld, tail: float, pessimistic: bool) -> Pld:
    size = a.pmf.size + b.pmf.size - 1
    n = 1 << (size - 1).bit_length()
    pmf = np.fft.irfft(np.fft.rfft(a.pmf, n) * np.fft.rfft(b.pmf, n), n)[:size]
    pmf = np.clip(pmf, 0.0, None)  # FFT round-off (~1e-16) below zero
    inf_mass = 1.0 - (1.0 - a.inf_mass) * (1.0 - b.inf_mass)
    return _truncate(Pld(a.offset + b.offset, pmf, a.h, inf_mass), tail, pessimistic)


def compose(pld: Pld, k: int, tail: float = 1e-15, pessimistic: bool = True) -> Pld:
    """The PLD of k independent uses: the k-fold convolution by repeated squaring (FFT),
    each product cut to the range holding all but ``tail`` of its mass (on the side of
    the bound: see _truncate), so the grid grows like sqrt(k), not k."""
    result = None
    base = pld
    while k:
        if k & 1:
            result = base if result is None else _convolve(result, base, tail, pessimistic)
        k >>= 1
        if k:
            base = _convolve(base, base, tail, pessimistic)
    return result


def delta_for_eps(pld: Pld, eps: float) -> float:
    losses = pld.losses
    above = losses > eps
    return float(np.sum(pld.pmf[above] * -np.expm1(eps - losses[above])) + pld.inf_mass)


def eps_for_delta(pld: Pld, delta: float) -> float:
    """Smallest eps >= 0 with delta(eps) <= delta (inf if the +inf mass exceeds delta).

    On (l_{j-1}, l_j] delta(eps) = S1_j - e^eps S2_j with suffix sums S1_j of the masses
    and S2_j of mass * e^-loss over losses >= l_j: find the cell, then solve exactly.
    """
    if pld.inf_mass > delta:
        return math.inf
    losses, pmf = pld.losses, pld.pmf
    pos = losses > 0
    losses, pmf = losses[pos], pmf[pos]
    if losses.size == 0:
        return 0.0
    s1 = np.cumsum(pmf[::-1])[::-1] + pld.inf_mass
    s2 = np.cumsum((pmf * np.exp(-losses))[::-1])[::-1]
    # delta at each grid loss l_j (eps = l_j): the sums over losses > l_j
    with np.errstate(divide="ignore"):
        log_s2_next = np.log(np.append(s2[1:], 0.0))
    at_atoms = np.append(s1[1:], pld.inf_mass) - np.exp(losses + log_s2_next)
    if s1[0] - s2[0] <= delta:  # already below delta at eps = 0
        return 0.0
    j = int(np.argmax(at_atoms <= delta))  # first atom where delta(l_j) <= delta
    # eps lies in (l_{j-1}, l_j], where the sum runs over losses >= l_j
    eps = math.log((s1[j] - delta) / s2[j])
    low = losses[j - 1] if j > 0 else 0.0
    return float(min(max(eps, low), losses[j]))


def eps_pld(pld: Pld, k: int, delta: float, pessimistic: bool = True) -> float:
    return eps_for_delta(compose(pld, k, pessimistic=pessimistic), delta)


# ------------------------------------------------------------------ closed forms


def gaussian_delta(eps: float, sigma: float, k: int) -> float:
    """delta(eps) of k Gaussian mechanisms (Balle & Wang 2018, Thm. 8), mu = sqrt(k)/sigma:
    Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)."""
    mu = math.sqrt(k) / sigma
    a = log_ndtr(-eps / mu + mu / 2)
    b = eps + log_ndtr(-eps / mu - mu / 2)
    return float(math.exp(a) * -math.expm1(b - a))


def gaussian_eps(sigma: float, k: int, delta: float) -> float:
    """eps(delta) of k Gaussian mechanisms from the closed form, by bracketing + brentq."""
    from scipy.optimize import brentq

    if gaussian_delta(0.0, sigma, k) <= delta:
        return 0.0
    hi = 1.0
    while gaussian_delta(hi, sigma, k) > delta:
        hi *= 2.0
    return float(brentq(lambda e: gaussian_delta(e, sigma, k) - delta, 0.0, hi, xtol=1e-12))


def gaussian_rdp(alpha: float, sigma: float) -> float:
    """Renyi DP of the Gaussian mechanism, alpha / (2 sigma^2) (Mironov 2017)."""
    return alpha / (2 * sigma**2)


def laplace_rdp(alpha: float, scale: float) -> float:
    """Renyi DP of the Laplace mechanism with scale b, alpha > 1 (Mironov 2017, Table II)."""
    lam = scale
    log_terms = np.logaddexp(
        math.log(alpha / (2 * alpha - 1)) + (alpha - 1) / lam,
        math.log((alpha - 1) / (2 * alpha - 1)) - alpha / lam,
    )
    return float(log_terms) / (alpha - 1)


def moments_eps(rdp, k: int, delta: float) -> float:
    """min over alpha > 1 of k * rdp(alpha) + log(1/delta) / (alpha - 1) (Eq. 7)."""
    from scipy.optimize import minimize_scalar

    res = minimize_scalar(
        lambda a: k * rdp(a) + math.log(1 / delta) / (a - 1),
        bounds=(1.0 + 1e-3, 400.0),
        method="bounded",
    )
    return float(res.fun)


# ------------------------------------------------------------------ independent reference


def reference_eps_pmfs(upper, lower, k: int, delta: float, h: float) -> float:
    """dp-accounting: PLD from the two pmfs, self-composed k times, eps for delta."""
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    def logs(v):
        return {i: math.log(x) for i, x in enumerate(v) if x > 0}

    pld = pld_lib.from_two_probability_mass_functions(
        logs(upper), logs(lower), pessimistic_estimate=True, value_discretization_interval=h
    )
    return float(pld.self_compose(k).get_epsilon_for_delta(delta))


def reference_eps_gaussian(sigma: float, k: int, delta: float, h: float) -> float:
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    pld = pld_lib.from_gaussian_mechanism(sigma, sensitivity=1.0, value_discretization_interval=h)
    return float(pld.self_compose(k).get_epsilon_for_delta(delta))


def reference_eps_laplace(scale: float, k: int, delta: float, h: float) -> float:
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    pld = pld_lib.from_laplace_mechanism(scale, sensitivity=1.0, value_discretization_interval=h)
    return float(pld.self_compose(k).get_epsilon_for_delta(delta))
