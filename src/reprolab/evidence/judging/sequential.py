"""Sequential replication: the rule that lets a paper run look at its claims after every
round of seeds and stop when they are decided, at its stated error rate.

A paper run adds seeds in rounds (``Plan``: ``first`` seeds, then ``step`` more per round,
up to ``max_seeds``). After each round every claim is checked again; a claim that is
decided gets no more seeds. Looking after every round and stopping when decided inflates
the error of a fixed-n interval (a 95% t-interval checked at 5, 10, 15 and 20 seeds
crosses a true bound about 12% of the time, not 5%). The rule here keeps it at ``alpha``:

**Group-sequential plan with alpha spending** (Lan & DeMets 1983; Jennison & Turnbull,
*Group Sequential Methods*, 2000, ch. 7 and 9). The looks are fixed in advance (the plan's
seed counts); at look k the two-sided error spent so far is ``alpha(t_k)``, with
``t_k = seeds_k / max_seeds`` the information fraction and ``alpha(t)`` the spending
function:

- O'Brien-Fleming type: ``alpha(t) = 2 (1 - Phi(z_{1 - alpha/2} / sqrt(t)))`` (spends
  little early, nearly the full alpha at the last look);
- Pocock type: ``alpha(t) = alpha log(1 + (e - 1) t)`` (spends evenly).

The critical values c_k of the standardised statistic solve
``P(|Z_1| < c_1, ..., |Z_{k-1}| < c_{k-1}, |Z_k| >= c_k) = alpha(t_k) - alpha(t_{k-1})``
for the Brownian-motion correlation ``corr(Z_i, Z_j) = sqrt(t_i / t_j)``; they are
computed by recursive numerical integration of the continuation density (Armitage,
McPherson & Rowe 1969; J&T sec. 19.2). A look's interval is the *repeated confidence
interval* (J&T ch. 9): mean +- t_{n-1}(1 - p_k / 2) sd / sqrt(n), with
``p_k = 2 (1 - Phi(c_k))`` the look's nominal level carried over to the t distribution
of n - 1 degrees of freedom (J&T sec. 3.8). Sign tests use the same nominal level, half
per direction. ``tests/unit/test_sequential.py`` checks the boundaries against
published values and against scipy's multivariate normal, and simulates the error at
the bound and the power at the claim's effect; ``bench/bench_sequential.py`` compares
the rules (the O'Brien-Fleming plan was chosen: more power at the same error).

The comparison also has an anytime-valid **asymptotic confidence sequence**
(Waudby-Smith, Arnold, Wu, Wang & Ramdas 2024, "Time-uniform central limit theory and
asymptotic confidence sequences", Ann. Statist., eq. 2.6), valid at every n with no
plan: :func:`asymptotic_cs_halfwidth`. (The ``confseq`` package implements the exact
sub-Gaussian boundaries in C++; its last release, 0.0.11, pins pybind11 2.6, which does
not build on Python 3.11, so the closed form is written out here.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

SPENDING = ("obrien_fleming", "pocock")
#: the share of alpha a plan of several looks spends on its boundaries. The boundaries are
#: those of a normal statistic, carried to the t distribution of each look through its
#: nominal level (J&T sec. 3.8); with the variance estimated from 5-20 seeds that spends a
#: little more than alpha over the looks (1,000,000 simulated runs of the 5/10/15/20 plan
#: at the bound: 0.0524 at alpha 0.05; 5/10: 0.0515; one look: 0.0499, exact). Computing
#: the boundaries at 0.95 alpha keeps the plan's error at or below alpha in every cell of
#: ``bench/results/sequential_grid.md``; a one-look plan spends its alpha exactly.
T_LOOKS_SHARE = 0.95
#: power the "needs ~N seeds" estimate of an undecided claim aims for
TARGET_POWER = 0.8


def _norm():
    from scipy import stats  # lazy: method specs import the claims module cheaply

    return stats.norm


def spent(t: float, alpha: float, spending: str) -> float:
    """The two-sided error spent by information fraction ``t`` (0 < t <= 1)."""
    t = min(max(t, 0.0), 1.0)
    if t == 0.0:
        return 0.0
    if spending == "obrien_fleming":
        norm = _norm()
        return float(2.0 * (1.0 - norm.cdf(norm.ppf(1.0 - alpha / 2.0) / math.sqrt(t))))
    if spending == "pocock":
        return float(alpha * math.log(1.0 + (math.e - 1.0) * t))
    raise ValueError(f"unknown spending function {spending!r}; known: {', '.join(SPENDING)}")


@lru_cache(maxsize=256)
def boundaries(
    fractions: tuple[float, ...], alpha: float, spending: str, grid: int = 1601
) -> tuple[float, ...]:
    """Two-sided critical values c_1..c_K of the standardised statistic at information
    fractions ``fractions`` (increasing, in (0, 1]), by recursive integration.

    The score process S(t) = Z(t) sqrt(t) is Brownian motion; its density on the
    continuation region is carried from look to look on a grid of ``grid`` points
    (Simpson weights) and convolved with the normal increment."""
    norm = _norm()
    ts = np.asarray(fractions, dtype=float)
    if ts.size == 0 or np.any(np.diff(ts) <= 0) or ts[0] <= 0 or ts[-1] > 1 + 1e-12:
        raise ValueError(f"information fractions must increase within (0, 1]: {fractions}")
    cs: list[float] = []
    state = None  # (grid, Simpson weights, continuation density) of the score process
    previous = 0.0
    for k, t in enumerate(ts):
        target = spent(float(t), alpha, spending) - previous
        sd = math.sqrt(t - (ts[k - 1] if k else 0.0))
        # nothing to spend at this look: it cannot stop
        c = 40.0 if target <= 1e-15 else _solve(_exit_probability, target, (t, sd, state))
        cs.append(c)
        previous += _exit_probability(c, (t, sd, state))  # what the look really spends
        b = c * math.sqrt(t)  # the boundary on the score scale
        xs = np.linspace(-b, b, grid)
        if state is None:
            dens = norm.pdf(xs / sd) / sd
        else:
            old_xs, old_ws, old_dens = state
            kernel = norm.pdf((xs[:, None] - old_xs[None, :]) / sd) / sd
            dens = kernel @ (old_ws * old_dens)
        state = (xs, _simpson_weights(xs), dens)
    return tuple(float(c) for c in cs)


def _exit_probability(c: float, args: tuple) -> float:
    """P(not stopped before, |Z| >= c at this look): the continuation density carried
    one increment of variance sd^2 and integrated over both tails."""
    t, sd, state = args
    norm = _norm()
    b = c * math.sqrt(t)
    if state is None:
        return float(2.0 * norm.sf(b / sd))
    xs, ws, dens = state
    tails = norm.sf((b - xs) / sd) + norm.cdf((-b - xs) / sd)
    return float(np.sum(ws * dens * tails))


def _simpson_weights(xs: np.ndarray) -> np.ndarray:
    n = xs.size
    if n % 2 == 0:
        raise ValueError("Simpson's rule needs an odd number of points")
    h = (xs[-1] - xs[0]) / (n - 1)
    w = np.ones(n)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return w * h / 3.0


def _solve(exit_probability, target: float, args: tuple) -> float:
    """The critical value whose exit probability is ``target`` (it falls as c grows)."""
    from scipy.optimize import brentq

    def f(c: float) -> float:
        return exit_probability(c, args) - target

    if f(40.0) > 0:
        return 40.0
    if f(0.0) < 0:
        return 0.0
    return float(brentq(f, 0.0, 40.0, xtol=1e-10))


@dataclass(frozen=True)
class Look:
    """One look of a plan: the seeds it has, its critical value and nominal level."""

    index: int  # 1-based
    seeds: int
    looks: tuple[int, ...]  # the seed counts of every look up to and including this one
    critical: float  # two-sided critical value of the standardised statistic
    alpha: float  # overall two-sided error of the plan
    spending: str
    max_seeds: int

    @property
    def nominal(self) -> float:
        """The look's two-sided nominal level p_k = 2 (1 - Phi(c_k))."""
        return float(2.0 * _norm().sf(self.critical))

    @property
    def confidence(self) -> float:
        """The confidence of the look's repeated confidence interval."""
        return 1.0 - self.nominal

    @property
    def final(self) -> bool:
        return self.seeds >= self.max_seeds

    def t_critical(self, n: int) -> float:
        """The look's critical value for a t statistic over ``n`` replicates."""
        if n < 2:
            return math.inf
        from scipy import stats

        return float(stats.t.isf(self.nominal / 2.0, n - 1))

    def describe(self) -> str:
        name = "O'Brien-Fleming" if self.spending == "obrien_fleming" else "Pocock"
        return (
            f"{name} alpha spending (alpha {self.alpha:g}), look {self.index} of the plan "
            f"{'/'.join(map(str, self.looks))}{'' if self.final else '/...'} seeds "
            f"(max {self.max_seeds}): nominal level {self.nominal:.3g}"
        )

    def as_dict(self) -> dict:
        return {
            "rule": f"group-sequential, {self.spending} spending",
            "alpha": self.alpha,
            "look": self.index,
            "looks": list(self.looks),
            "max_seeds": self.max_seeds,
            "seeds": self.seeds,
            "critical_z": self.critical,
            "nominal_level": self.nominal,
        }


@dataclass(frozen=True)
class Plan:
    """Seeds per look: ``first``, then ``first + step``, ... up to ``max_seeds`` (the last
    look is ``max_seeds`` even off the step), two-sided error ``alpha`` spent by
    ``spending``."""

    first: int
    step: int
    max_seeds: int
    alpha: float = 0.05
    spending: str = "obrien_fleming"

    def __post_init__(self) -> None:
        if self.first < 1 or self.step < 1 or self.max_seeds < self.first:
            raise ValueError(
                f"evidence plan: need 1 <= first <= max_seeds and step >= 1 "
                f"(first {self.first}, step {self.step}, max_seeds {self.max_seeds})"
            )
        if not 0 < self.alpha < 1:
            raise ValueError(f"evidence plan: alpha must be in (0, 1), got {self.alpha}")
        if self.spending not in SPENDING:
            raise ValueError(f"evidence plan: spending {self.spending!r}; known: {SPENDING}")

    @property
    def looks(self) -> tuple[int, ...]:
        out = list(range(self.first, self.max_seeds, self.step))
        return (*out, self.max_seeds)

    def look(self, seeds: int) -> Look:
        """The look at ``seeds`` seeds: the planned looks below it, then it. A count off
        the plan (a user's own seed list) is a look of its own; one past ``max_seeds``
        is the last look (the whole alpha is spent there)."""
        seeds = max(int(seeds), 1)
        looks = (*(s for s in self.looks if s < min(seeds, self.max_seeds)), seeds)
        fractions = tuple(min(s / self.max_seeds, 1.0) for s in looks)
        cs = boundaries(fractions, self.spent_alpha, self.spending)
        return Look(
            index=len(looks),
            seeds=seeds,
            looks=tuple(looks),
            critical=cs[-1],
            alpha=self.alpha,
            spending=self.spending,
            max_seeds=self.max_seeds,
        )

    @property
    def spent_alpha(self) -> float:
        """The alpha the boundaries are computed at (:data:`T_LOOKS_SHARE`)."""
        return self.alpha * (T_LOOKS_SHARE if len(self.looks) > 1 else 1.0)

    def next_seeds(self, seeds: int) -> int | None:
        """The seed count of the look after ``seeds`` (None: the plan is exhausted)."""
        later = [s for s in self.looks if s > seeds]
        return later[0] if later else None

    def seeds_needed(self, sd: float, effect: float, per_seed: float) -> int | None:
        """Seeds at which the last look would decide an effect of ``effect`` with
        :data:`TARGET_POWER`, for replicates of standard deviation ``sd`` and
        ``per_seed`` replicates per seed (None when there is nothing to estimate).

        The power is the two-sided one-sample t test's (noncentral t) at the last
        look's nominal level, with the degrees of freedom of the replicates it would
        have: a normal approximation asks for too few where the t of 4-10 replicates is
        much wider than the normal (lift_gs: 5 seeds where 8 are due)."""
        if not (sd > 0 and effect > 0 and per_seed > 0):
            return None
        nominal = self.look(self.max_seeds).nominal
        units = _t_test_units(effect / sd, nominal, TARGET_POWER)
        return max(2, math.ceil(units / per_seed))


def _t_test_units(d: float, level: float, power: float, most: int = 10**7) -> int:
    """The fewest replicates (at least 2) at which the two-sided one-sample t test at
    ``level`` has ``power`` against a standardized effect ``d`` (power from the
    noncentral t; it grows with n, so doubling then bisection finds the edge)."""
    from scipy import stats

    def enough(n: int) -> bool:
        c = stats.t.isf(level / 2.0, n - 1)
        nc = d * math.sqrt(n)
        return float(stats.nct.sf(c, n - 1, nc) + stats.nct.cdf(-c, n - 1, nc)) >= power

    low, high = 1, 2  # enough(low) is false by convention (one replicate has no t)
    while not enough(high):
        if high >= most:
            return most
        low, high = high, min(2 * high, most)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if enough(mid) else (mid, high)
    return high


def plan_for(evidence, profile_seeds) -> Plan:
    """The sequential plan of a method's evidence settings
    (:class:`reprolab.contract.EvidenceConfig`) for a profile's seeds: looks from the
    first look's seed count in steps of ``step`` up to ``max_seeds`` (at least the first
    look: one look, a fixed-n analysis, when it is not set)."""
    first = len(evidence.base_seeds(profile_seeds))
    return Plan(
        first=first,
        step=evidence.step,
        max_seeds=max(evidence.max_seeds or first, first),
        alpha=evidence.alpha,
        spending=evidence.spending,
    )


def asymptotic_cs_halfwidth(
    n: np.ndarray | int, sd: np.ndarray | float, alpha: float, n_opt: int
) -> np.ndarray:
    """Half-width of the two-sided asymptotic confidence sequence for a mean
    (Waudby-Smith et al. 2024, eq. 2.6: Robbins' normal mixture with the sample standard
    deviation plugged in), tuned to be tightest at ``n_opt`` replicates:
    ``sd * sqrt(2 (n r^2 + 1) / (n^2 r^2) * log(sqrt(n r^2 + 1) / alpha))`` with
    ``r^2 = (-2 log alpha + log(-2 log alpha + 1)) / n_opt``."""
    n = np.asarray(n, dtype=float)
    r2 = (-2.0 * math.log(alpha) + math.log(-2.0 * math.log(alpha) + 1.0)) / n_opt
    return np.asarray(sd) * np.sqrt(
        2.0 * (n * r2 + 1.0) / (n**2 * r2) * np.log(np.sqrt(n * r2 + 1.0) / alpha)
    )


#: the rules the simulation compares: the two spending plans, the asymptotic confidence
#: sequence, and (for reference only: it does not keep its error) a fixed-n t-interval
#: read at every look
RULES = ("obrien_fleming", "pocock", "asymptotic_cs", "naive_t")


def halfwidths(rule: str, plan: Plan, n: int, sd: np.ndarray, per_seed: int = 1) -> np.ndarray:
    """Half-widths of ``rule``'s interval at the look with ``n // per_seed`` seeds for
    replicates of sample standard deviation ``sd`` (an array over simulated runs)."""
    from scipy import stats

    seeds = n // per_seed
    if rule in SPENDING:
        look = Plan(plan.first, plan.step, plan.max_seeds, plan.alpha, rule).look(seeds)
        return look.t_critical(n) * sd / math.sqrt(n)
    if rule == "asymptotic_cs":
        return asymptotic_cs_halfwidth(n, sd, plan.alpha, n_opt=plan.max_seeds * per_seed)
    if rule == "naive_t":
        return float(stats.t.isf(plan.alpha / 2, n - 1)) * sd / math.sqrt(n)
    raise ValueError(f"unknown rule {rule!r}; known: {', '.join(RULES)}")


@dataclass(frozen=True)
class SimulationResult:
    rule: str
    runs: int
    mean: float  # the true mean (the bound is 0)
    reproduced: float  # share of runs that ended 'reproduced' (interval above 0)
    not_reproduced: float  # ... 'not reproduced' (interval below 0)
    mean_seeds: float  # seeds used, averaged over runs

    @property
    def decided(self) -> float:
        return self.reproduced + self.not_reproduced


def simulate(
    rule: str,
    plan: Plan,
    mean: float,
    runs: int,
    rng: np.random.Generator,
    per_seed: int = 1,
    noise: str = "normal",
) -> SimulationResult:
    """``runs`` sequential paper runs of a claim whose replicates have mean ``mean`` and
    standard deviation 1 (``noise``: ``normal``, or ``t3`` rescaled to unit variance, a
    heavy tail), ``per_seed`` replicates per seed, against the bound 0: each run looks at
    every planned seed count and stops at the first interval that excludes 0."""
    if noise == "normal":
        x = rng.standard_normal((runs, plan.max_seeds * per_seed))
    elif noise == "t3":
        x = rng.standard_t(3, (runs, plan.max_seeds * per_seed)) / math.sqrt(3.0)
    else:
        raise ValueError(f"unknown noise {noise!r}")
    x = x + mean
    open_ = np.ones(runs, dtype=bool)
    up = np.zeros(runs, dtype=bool)
    down = np.zeros(runs, dtype=bool)
    used = np.full(runs, plan.max_seeds, dtype=float)
    for seeds in plan.looks:
        n = seeds * per_seed
        head = x[:, :n]
        m = head.mean(axis=1)
        sd = head.std(axis=1, ddof=1)
        half = halfwidths(rule, plan, n, sd, per_seed)
        hit_up = open_ & (m - half > 0)
        hit_down = open_ & (m + half < 0)
        up |= hit_up
        down |= hit_down
        used[hit_up | hit_down] = seeds
        open_ &= ~(hit_up | hit_down)
    return SimulationResult(
        rule=rule,
        runs=runs,
        mean=mean,
        reproduced=float(up.mean()),
        not_reproduced=float(down.mean()),
        mean_seeds=float(used.mean()),
    )
