"""Intervals and paired comparisons over seeds."""

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
