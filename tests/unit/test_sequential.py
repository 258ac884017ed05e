"""The sequential rule (judging.sequential): boundaries against an independent reference,
and simulated paper runs: the error at the bound and the power at a claim's effect."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from reprolab.evidence.judging.sequential import (
    Plan,
    asymptotic_cs_halfwidth,
    boundaries,
    simulate,
    spent,
)

ALPHA = 0.05
#: >= 2,000 simulated paper runs per case (the issue's floor); Monte Carlo standard
#: error of an error rate near 0.05 at 4,000 runs: 0.0034
RUNS = 4000


def _mc_se(p: float, runs: int) -> float:
    return math.sqrt(p * (1 - p) / runs)


@pytest.mark.parametrize("spending", ["obrien_fleming", "pocock"])
def test_boundaries_spend_exactly_the_planned_error(spending):
    """P(cross by look k) for Brownian motion, from scipy's multivariate normal (an
    independent integration), equals the spending function at each look."""
    fractions = (0.25, 0.5, 1.0)
    cs = boundaries(fractions, ALPHA, spending)
    t = np.asarray(fractions)
    cov = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
    for k in range(1, len(t) + 1):
        mvn = stats.multivariate_normal(mean=np.zeros(k), cov=cov[:k, :k])
        inside = mvn.cdf(np.asarray(cs[:k]), lower_limit=-np.asarray(cs[:k]))
        assert 1 - inside == pytest.approx(spent(t[k - 1], ALPHA, spending), abs=2e-4)


def test_one_look_is_the_fixed_n_test_and_the_first_look_is_closed_form():
    assert boundaries((1.0,), ALPHA, "obrien_fleming")[0] == pytest.approx(stats.norm.isf(0.025))
    # at the first look the whole spent error is one two-sided tail
    c1 = boundaries((0.25, 1.0), ALPHA, "pocock")[0]
    assert 2 * stats.norm.sf(c1) == pytest.approx(spent(0.25, ALPHA, "pocock"), rel=1e-6)
    # O'Brien-Fleming type: c_1 = z_{1 - alpha/2} / sqrt(t_1)
    c1 = boundaries((0.25, 1.0), ALPHA, "obrien_fleming")[0]
    assert c1 == pytest.approx(stats.norm.isf(0.025) / 0.5, rel=1e-6)


def test_plan_looks_off_plan_counts_and_errors():
    plan = Plan(first=5, step=5, max_seeds=20)
    assert plan.looks == (5, 10, 15, 20)
    assert plan.look(10).looks == (5, 10) and plan.look(10).index == 2
    assert plan.look(7).looks == (5, 7)  # a seed count off the plan is a look of its own
    assert plan.look(25).critical == pytest.approx(plan.look(20).critical)  # all spent
    assert plan.next_seeds(10) == 15 and plan.next_seeds(20) is None
    assert Plan(3, 5, 12).looks == (3, 8, 12)
    # a look's repeated interval is wider than the fixed-n one until the last look
    assert plan.look(5).t_critical(5) > stats.t.isf(0.025, 4)
    assert plan.look(20).confidence > 0.95
    with pytest.raises(ValueError, match="first <= max_seeds"):
        Plan(first=5, step=5, max_seeds=4)
    with pytest.raises(ValueError, match="spending"):
        Plan(5, 5, 20, spending="haybittle")


def _t_power(n, d, level):
    """The two-sided one-sample t test's power over ``n`` replicates (statsmodels)."""
    from statsmodels.stats.power import TTestPower

    return float(TTestPower().power(effect_size=d, nobs=n, alpha=level))


@pytest.mark.parametrize("sd, effect", [(1.0, 0.5), (0.038, 0.0485), (1.0, 1.5), (0.2, 0.05)])
def test_seeds_needed_is_the_smallest_n_with_80_percent_t_power(sd, effect):
    plan = Plan(5, 5, 20)
    level = plan.look(20).nominal
    n = plan.seeds_needed(sd, effect, 1.0)
    assert _t_power(n, effect / sd, level) >= 0.8 - 1e-6
    if n > 2:
        assert _t_power(n - 1, effect / sd, level) < 0.8
    # the normal approximation asks for fewer where the t of few replicates is wider
    z = stats.norm
    approx = ((z.isf(level / 2) + z.ppf(0.8)) * sd / effect) ** 2
    assert n >= math.ceil(approx)
    # replicates per seed divide the seeds
    assert plan.seeds_needed(sd, effect, 4.0) == max(2, math.ceil(n / 4))
    assert plan.seeds_needed(0.0, effect, 1.0) is None


@pytest.mark.parametrize("noise", ["normal", "t3"])
def test_the_chosen_rule_keeps_its_error_at_the_bound(noise):
    """With the true effect exactly at the bound, at most alpha of the runs end decisive
    (plus Monte Carlo error), although every run looks after every round."""
    plan = Plan(5, 5, 20)
    result = simulate("obrien_fleming", plan, 0.0, RUNS, np.random.default_rng(11), noise=noise)
    assert result.decided <= ALPHA + 3 * _mc_se(ALPHA, RUNS)
    # the fixed-n interval read at every look does not keep it: the reason for the rule
    naive = simulate("naive_t", plan, 0.0, RUNS, np.random.default_rng(11), noise=noise)
    assert naive.decided > ALPHA + 3 * _mc_se(ALPHA, RUNS)


def test_the_chosen_rule_has_the_most_power_at_equal_error():
    """At the claim's effect (here 0.5 sd of one replicate), the O'Brien-Fleming plan
    decides more runs within the budget than the Pocock plan and the asymptotic
    confidence sequence, whose errors at the bound are no larger."""
    plan = Plan(5, 5, 20)
    power, error = {}, {}
    for rule in ("obrien_fleming", "pocock", "asymptotic_cs"):
        power[rule] = simulate(rule, plan, 0.5, RUNS, np.random.default_rng(5)).reproduced
        error[rule] = simulate(rule, plan, 0.0, RUNS, np.random.default_rng(6)).decided
        assert error[rule] <= ALPHA + 3 * _mc_se(ALPHA, RUNS)
    assert power["obrien_fleming"] > power["pocock"] > power["asymptotic_cs"]
    assert power["obrien_fleming"] > 0.5


def test_asymptotic_cs_is_tightest_near_its_target():
    n = np.arange(2, 200)
    width = asymptotic_cs_halfwidth(n, 1.0, ALPHA, n_opt=20) * np.sqrt(n)
    assert 10 <= int(n[np.argmin(width)]) <= 40
    # wider than the fixed-n normal interval everywhere: the price of any-time validity
    assert (width > stats.norm.isf(0.025)).all()


def _sign_rule(diffs: np.ndarray, plan: Plan, seeds: int) -> str:
    """PairedMajority's decision at a look, vectorised over tasks: per-task repeated
    t-intervals, 'better' / 'worse' counts, a sign test at half the look's alpha per
    direction agreeing with the pooled mean."""
    from reprolab.evidence.judging.stats import sign_test

    look = plan.look(seeds)
    x = diffs[:, :seeds]
    half = look.t_critical(seeds) * x.std(axis=1, ddof=1) / math.sqrt(seeds)
    mean = x.mean(axis=1)
    better, worse = int((mean - half > 0).sum()), int((mean + half < 0).sum())
    pooled = mean.mean()
    if sign_test(better, worse) <= look.nominal / 2 and pooled > 0:
        return "reproduced"
    if sign_test(worse, better) <= look.nominal / 2 and pooled < 0:
        return "not_reproduced"
    return "inconclusive"


def _as_table(diffs: np.ndarray, seeds: int) -> pd.DataFrame:
    rows = [
        (f"t{t}", v, s, "fp32", "acc", diffs[t, s] if v == "m" else 0.0)
        for t in range(diffs.shape[0])
        for s in range(seeds)
        for v in ("m", "b")
    ]
    return pd.DataFrame(rows, columns=["task", "variant", "seed", "precision", "metric", "value"])


def test_sequential_sign_test_over_tasks_keeps_its_error():
    """PairedMajority's sequential form: per-task repeated intervals and a sign test at
    the look's level. Under no effect on any of 8 tasks, over the plan's looks, at most
    alpha of 2,000 simulated runs end decisive. (The simulation re-states the check's
    rule in numpy; it is checked against PairedMajority itself on runs with effects.)"""
    from reprolab.evidence.judging.claims import Level, PairedMajority

    plan = Plan(5, 5, 20)
    rng = np.random.default_rng(3)
    runs, tasks = 2000, 8
    decisive = 0
    for _ in range(runs):
        diffs = rng.standard_normal((tasks, plan.max_seeds))
        if any(_sign_rule(diffs, plan, s) != "inconclusive" for s in plan.looks):
            decisive += 1
    assert decisive / runs <= ALPHA + 3 * _mc_se(ALPHA, runs)
    check = PairedMajority("m", "b")
    for i in range(12):
        diffs = rng.standard_normal((tasks, plan.max_seeds)) + (i % 3 - 1) * 1.5
        for seeds in plan.looks:
            ours = check.evaluate(_as_table(diffs, seeds), "acc", Level.at(plan.look(seeds)))
            assert ours.verdict == _sign_rule(diffs, plan, seeds)
