"""Intervals and paired comparisons over independent replicates.

Two rules turn replicates into an interval, each named by the claim that uses it:

- ``t``: the Student-t interval of the mean (for replicates whose mean is near normal at
  the counts used; ``bench/bench_sequential.py`` shows where that holds);
- ``sign``: the distribution-free interval of the *median* from order statistics (the
  interval a two-sided sign test inverts: it excludes a value exactly when the sign test
  of that value rejects), for skewed, bimodal or bounded metrics whose mean a t-interval
  misstates at a few replicates.

The replicate is the independent unit, usually the seed: :func:`unit_means` averages the
values a unit holds (several tasks, pairs or configurations of one seed) before either
rule sees them, so the degrees of freedom count units, never pairs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float
    n: int
    confidence: float
    #: standard deviation of one replicate (nan where there is none to estimate)
    sd: float = math.nan

    def as_dict(self) -> dict[str, float]:
        return {"mean": self.mean, "ci_low": self.low, "ci_high": self.high, "n": self.n}


def t_interval(values: Sequence[float], confidence: float = 0.95) -> Interval:
    """Student-t confidence interval of the mean (two-sided).

    With one value the interval is unbounded: a single seed cannot support a verdict.
    """
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("t_interval needs at least one value")
    mean = float(x.mean())
    if x.size == 1:
        return Interval(mean, -math.inf, math.inf, 1, confidence)
    from scipy import stats  # lazy: method specs import this module and must stay cheap

    sd = float(x.std(ddof=1))
    half = float(stats.t.ppf(0.5 + confidence / 2, df=x.size - 1)) * sd / math.sqrt(x.size)
    return Interval(mean, mean - half, mean + half, int(x.size), confidence, sd)


def exact(value: float) -> Interval:
    """The 'interval' of a deterministic quantity (a seed-free unit): the value itself.
    It is not an estimate, so a verdict compares the value with the bound directly."""
    return Interval(float(value), float(value), float(value), 1, 1.0)


def interval(values: Sequence[float], seed_free: bool, confidence: float = 0.95) -> Interval:
    """A t-interval over replicates, or, for one seed-free value, the value itself.

    Seed-free values are never copied to fake replicates: with several of them (one per
    task) the interval is over tasks, which is what they are."""
    x = np.asarray(values, dtype=float)
    if seed_free and x.size == 1:
        return exact(float(x[0]))
    return t_interval(x, confidence)


#: the rules that turn a claim's replicates into an interval (see the module docstring)
RULES = ("t", "sign")


def median_interval(values: Sequence[float], confidence: float = 0.95) -> Interval:
    """The distribution-free interval of the median: ``[x_(k), x_(n+1-k)]`` with the
    largest k such that ``P(Bin(n, 1/2) <= k - 1) <= (1 - confidence) / 2`` (two-sided,
    exact, conservative for a discrete count). Unbounded when even the extreme order
    statistics do not reach the confidence (n too small for it: n < 6 at 95%)."""
    x = np.sort(np.asarray(values, dtype=float))
    if x.size == 0:
        raise ValueError("median_interval needs at least one value")
    median = float(np.median(x))
    from scipy import stats

    tail = (1.0 - confidence) / 2.0
    # k - 1 = the largest count whose lower tail stays within the level
    k = int(stats.binom.ppf(tail, x.size, 0.5))
    if stats.binom.cdf(k, x.size, 0.5) > tail + 1e-12:
        k -= 1
    k += 1  # order statistics are 1-based
    if k < 1:
        return Interval(median, -math.inf, math.inf, int(x.size), confidence, _sd(x))
    return Interval(median, float(x[k - 1]), float(x[x.size - k]), int(x.size), confidence, _sd(x))


def _sd(x: np.ndarray) -> float:
    return float(x.std(ddof=1)) if x.size > 1 else math.nan


def rule_interval(values: Sequence[float], rule: str, confidence: float = 0.95) -> Interval:
    """The interval of ``rule`` (:data:`RULES`) over independent replicates."""
    if rule == "t":
        return t_interval(values, confidence)
    if rule == "sign":
        return median_interval(values, confidence)
    raise ValueError(f"unknown rule {rule!r}; rules: {', '.join(RULES)}")


def ratio_of_means(num: Sequence[float], den: Sequence[float]) -> tuple[float, float]:
    """R = mean(num) / mean(den) of paired values (one pair per replicate) and its
    delta-method standard error, sd(num_i - R den_i) / (sqrt(n) mean(den)); the error is
    infinite below two pairs."""
    x, y = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    ratio = float(x.mean() / y.mean())
    if x.size < 2:
        return ratio, math.inf
    return ratio, float(np.std(x - ratio * y, ddof=1) / (math.sqrt(x.size) * y.mean()))


def unit_means(values: Sequence[float], units: Sequence[object]) -> np.ndarray:
    """One value per independent unit: the mean of the values each unit holds, in the
    order the units first appear. A unit that is missing (None or NaN: a seed-free
    value) is a unit of its own."""
    x = np.asarray(values, dtype=float)
    if len(units) != x.size:
        raise ValueError(f"{x.size} values but {len(units)} unit labels")
    order: dict[object, list[float]] = {}
    for i, (v, u) in enumerate(zip(x, units, strict=True)):
        key = ("free", i) if u is None or (isinstance(u, float) and math.isnan(u)) else u
        order.setdefault(key, []).append(float(v))
    return np.asarray([sum(v) / len(v) for v in order.values()], dtype=float)


def classify(interval: Interval, margin: float = 0.0) -> str:
    """'better' / 'worse' when the interval clears +-margin, else 'tie'."""
    if interval.low > margin:
        return "better"
    if interval.high < -margin:
        return "worse"
    return "tie"


def sign_test(wins: int, losses: int) -> float:
    """One-sided sign test: the probability of at least ``wins`` successes in
    ``wins + losses`` fair coin flips (ties are dropped before calling). 1.0 when there
    is nothing to test."""
    n = wins + losses
    if n == 0:
        return 1.0
    return float(sum(math.comb(n, k) for k in range(wins, n + 1)) / 2**n)
