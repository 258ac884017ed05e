"""Intervals against scipy, and verdicts computed from synthetic metric tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from reprolab.core.claims import Claim, PairedMajority
from reprolab.core.stats import classify, t_interval


def test_t_interval_matches_scipy():
    x = np.array([0.1, 0.4, -0.2, 0.3, 0.25])
    ours = t_interval(x, 0.9)
    ref = stats.ttest_1samp(x, 0.0).confidence_interval(0.9)
    assert ours.mean == pytest.approx(x.mean())
    assert (ours.low, ours.high) == pytest.approx((ref.low, ref.high))


def test_single_value_has_no_finite_interval():
    iv = t_interval([0.3])
    assert math.isinf(iv.low) and math.isinf(iv.high)
    assert classify(iv) == "tie"


def test_classify():
    assert classify(t_interval([0.1, 0.11, 0.12])) == "better"
    assert classify(t_interval([-0.1, -0.11, -0.12])) == "worse"
    assert classify(t_interval([-0.1, 0.1, 0.0])) == "tie"
    assert classify(t_interval([0.01, 0.011, 0.012]), margin=0.05) == "tie"


def table(effects: dict[str, float], seeds=range(4), noise=0.001, val_bonus=None) -> pd.DataFrame:
    """Long table where method = base + effect[task]; baseline 'b' = base."""
    rng = np.random.default_rng(0)
    rows = []
    for task, effect in effects.items():
        for seed in seeds:
            base = 0.8 + rng.normal(0, 0.02)
            for variant, value in (("m", base + effect), ("b", base), ("c", base - 0.05)):
                value += rng.normal(0, noise)
                rows.append((task, variant, seed, "fp32", "acc", value))
                val = value + (val_bonus or {}).get(variant, 0.0)
                rows.append((task, variant, seed, "fp32", "val", val))
    return pd.DataFrame(rows, columns=["task", "variant", "seed", "precision", "metric", "value"])


def claim(**kw) -> Claim:
    check = PairedMajority(method="m", baseline=kw.pop("baseline", "b"), **kw)
    return Claim("c", "m beats b", "41/4/0", "paper", "acc", check)


def test_reproduced_when_better_on_most_tasks():
    res = claim().evaluate(table({"t1": 0.05, "t2": 0.04, "t3": 0.0}), "fp32", "paper")
    assert res["verdict"] == "reproduced"
    assert (res["measured"]["better"], res["measured"]["tie"], res["measured"]["worse"]) == (
        2,
        1,
        0,
    )
    assert res["measured"]["value"] == pytest.approx(0.03, abs=0.003)


def test_not_reproduced_when_worse():
    res = claim().evaluate(table({"t1": -0.05, "t2": -0.04, "t3": 0.05}), "fp32", "paper")
    assert res["verdict"] == "not_reproduced"
    assert res["measured"]["worse"] == 2


def test_inconclusive_when_all_ties():
    res = claim().evaluate(table({"t1": 0.0, "t2": 0.0}, noise=0.05), "fp32", "smoke")
    assert res["verdict"] == "inconclusive"
    assert res["level"].startswith("smoke-level")


def test_lower_is_better_flips_the_sign():
    check = PairedMajority(method="m", baseline="b", higher_is_better=False)
    verdict, measured = check.evaluate(table({"t1": 0.05, "t2": 0.05}), "acc")
    assert verdict == "not_reproduced" and measured["worse"] == 2


def test_best_baseline_is_chosen_on_the_validation_metric():
    # 'c' is worse on acc but made best on val: the check must pick 'c', so m looks better.
    t = table({"t1": 0.0, "t2": 0.0}, val_bonus={"c": 0.5})
    res = claim(baseline="best", baselines=("b", "c"), select_metric="val").evaluate(
        t, "fp32", "paper"
    )
    assert {p["baseline"] for p in res["measured"]["per_task"]} == {"c"}
    assert res["measured"]["better"] == 2


def test_missing_variant_is_reported_not_crashed():
    t = table({"t1": 0.05})
    res = claim(baseline="zzz").evaluate(t, "fp32", "paper")
    assert res["verdict"] == "inconclusive" and "zzz" in res["measured"]["summary"]


def test_threshold_against_closed_form_interval():
    from reprolab.core.claims import Threshold

    t = table({"t1": 0.1, "t2": 0.1}, noise=0.0)
    verdict, measured = Threshold("m", bound=0.5).evaluate(t[t.precision == "fp32"], "acc")
    assert verdict == "reproduced" and measured["ci_low"] > 0.5
    verdict, _ = Threshold("m", bound=0.99).evaluate(t, "acc")
    assert verdict == "not_reproduced"
    verdict, _ = Threshold("m", bound=0.99, higher_is_better=False).evaluate(t, "acc")
    assert verdict == "reproduced"


def test_paired_difference_pools_tasks_and_seeds():
    from reprolab.core.claims import PairedDifference

    t = table({"t1": 0.05, "t2": 0.03})
    verdict, measured = PairedDifference("m", "b").evaluate(t, "acc")
    assert verdict == "reproduced" and measured["n"] == 8
    assert measured["value"] == pytest.approx(0.04, abs=0.002)
    assert PairedDifference("b", "m").evaluate(t, "acc")[0] == "not_reproduced"
    assert PairedDifference("m", "b", margin=0.04, higher_is_better=False).evaluate(t, "acc")[
        0
    ] == ("inconclusive")
