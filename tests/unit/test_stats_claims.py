"""Intervals against scipy, and verdicts computed from synthetic metric tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from reprolab.evidence.judging.claims import Claim, PairedMajority
from reprolab.evidence.judging.stats import classify, t_interval


def mk(id, statement, paper, setting, metric, check, effect=0.0, **kw) -> Claim:
    """A claim with the fields every claim must state (effect, its basis, the source)."""
    return Claim(id, statement, paper, setting, metric, check, effect, "test", "card", **kw)


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
    return mk("c", "m beats b", "41/4/0", "paper", "acc", check)


def test_reproduced_when_the_sign_test_over_tasks_says_so():
    # 6 better, 0 worse: p = 1/64 <= 0.025 (half the two-sided 0.05 per direction)
    effects = {f"t{i}": 0.05 for i in range(6)}
    res = claim().evaluate(table(effects), "fp32", "paper")
    assert res["verdict"] == "reproduced"
    m = res["measured"]
    assert (m["better"], m["tie"], m["worse"]) == (6, 0, 0)
    assert m["sign_test_p"] == pytest.approx(stats.binomtest(6, 6, 0.5, "greater").pvalue)
    # 5 of 5 is p = 1/32 > 0.025: not enough at the two-sided level
    five = claim().evaluate(table({f"t{i}": 0.05 for i in range(5)}), "fp32", "paper")
    assert five["verdict"] == "inconclusive"
    assert m["value"] == pytest.approx(0.05, abs=0.003)


def test_two_better_one_tie_is_not_enough():
    # the old rule (more better than worse, not worse on a majority) said reproduced here
    res = claim().evaluate(table({"t1": 0.05, "t2": 0.04, "t3": 0.0}), "fp32", "paper")
    m = res["measured"]
    assert (m["better"], m["tie"], m["worse"]) == (2, 1, 0)
    assert res["verdict"] == "inconclusive" and m["sign_test_p"] == pytest.approx(0.25)


def test_ties_do_not_carry_a_majority_against_the_pooled_mean():
    # the example: 3 better / 12 tie / 2 worse with a negative pooled mean
    effects = {f"b{i}": 0.01 for i in range(3)} | {f"w{i}": -0.08 for i in range(2)}
    effects |= {f"t{i}": 0.0 for i in range(12)}
    res = claim().evaluate(table(effects), "fp32", "paper")
    m = res["measured"]
    assert (m["better"], m["tie"], m["worse"]) == (3, 12, 2)
    assert m["value"] < 0 and res["verdict"] == "inconclusive"


def test_not_reproduced_when_worse_on_most_tasks():
    effects = {f"t{i}": -0.05 for i in range(6)} | {"t9": 0.0}
    res = claim().evaluate(table(effects), "fp32", "paper")
    assert res["verdict"] == "not_reproduced"
    assert res["measured"]["worse"] == 6
    # 6 worse against 1 better is p = 8/128 > 0.025: not enough to say not reproduced
    res = claim().evaluate(table(effects | {"t9": 0.05}), "fp32", "paper")
    assert res["verdict"] == "inconclusive" and res["measured"]["better"] == 1


def test_inconclusive_when_all_ties():
    res = claim().evaluate(table({"t1": 0.0, "t2": 0.0}, noise=0.05), "fp32", "smoke")
    assert res["verdict"] == "inconclusive"
    assert res["level"].startswith("smoke-level")


def test_lower_is_better_flips_the_sign():
    check = PairedMajority(method="m", baseline="b", higher_is_better=False)
    v = check.evaluate(table({f"t{i}": 0.05 for i in range(6)}), "acc")
    assert v.verdict == "not_reproduced" and v.measured["worse"] == 6


@pytest.mark.parametrize("wins,losses", [(0, 0), (3, 0), (5, 0), (7, 2), (2, 7), (10, 10)])
def test_sign_test_matches_scipy_binomtest(wins, losses):
    from reprolab.evidence.judging.stats import sign_test

    expected = 1.0 if wins + losses == 0 else stats.binomtest(wins, wins + losses).pvalue
    if wins + losses:
        expected = stats.binomtest(wins, wins + losses, 0.5, alternative="greater").pvalue
    assert sign_test(wins, losses) == pytest.approx(expected)


# ---------------------------------------------------------------- evidence rules


def _threshold_claim(bound=0.5, effect=None) -> Claim:
    from reprolab.evidence.judging.claims import Threshold

    return mk("c", "m > bound", "0.9", "paper", "acc", Threshold("m", bound), effect or 0.0)


def test_two_seeds_never_give_a_decisive_verdict():
    t = table({"t1": 0.1}, seeds=range(2))
    res = _threshold_claim().evaluate(t, "fp32", "smoke")
    m = res["measured"]
    assert res["verdict"] == "inconclusive"
    assert m["check_verdict"] == "reproduced" and m["rule"].startswith("n < 3")
    res3 = _threshold_claim().evaluate(table({"t1": 0.1}, seeds=range(3)), "fp32", "smoke")
    assert res3["verdict"] == "reproduced" and "rule" not in res3["measured"]


def test_identical_replicates_are_flagged_not_decisive():
    t = table({"t1": 0.1}, seeds=range(4))
    t.loc[t.variant == "m", "value"] = 0.9  # four seeds, one value: the seed did nothing
    res = _threshold_claim().evaluate(t, "fp32", "paper")
    assert res["verdict"] == "inconclusive"
    assert res["measured"]["flags"] == ["identical_replicates"]
    assert res["measured"]["detectable"] == 0.0


def _rules(verdict: str, measured: dict):
    from reprolab.evidence.judging.claims import Verdict, apply_evidence_rules

    out = apply_evidence_rules(Verdict(verdict, {"summary": "", **measured}))
    return out.verdict, out.measured


def test_one_seed_free_value_is_compared_exactly():
    verdict, m = _rules(
        "reproduced", {"value": 2.0, "ci_low": 2.0, "ci_high": 2.0, "n": 1, "seed_free": True}
    )
    assert verdict == "reproduced" and "rule" not in m
    verdict, m = _rules("reproduced", {"value": 2.0, "ci_low": 1, "ci_high": 3})
    assert verdict == "inconclusive" and "no replicate count" in m["rule"]
    verdict, m = _rules(
        "not_reproduced", {"value": 0.0, "ci_low": -math.inf, "ci_high": math.inf, "n": 5}
    )
    assert verdict == "inconclusive" and m["rule"] == "unbounded interval"


def test_underpowered_when_the_detectable_effect_exceeds_the_papers():
    t = table({"t1": 0.0}, seeds=range(4), noise=0.05)
    res = _threshold_claim(bound=0.8, effect=0.001).evaluate(t, "fp32", "paper")
    m = res["measured"]
    assert res["verdict"] != "reproduced"
    assert m["detectable"] == pytest.approx((m["ci_high"] - m["ci_low"]) / 2)
    assert "underpowered" in m["flags"] and res["effect"] == 0.001
    res = _threshold_claim(bound=0.8, effect=10.0).evaluate(t, "fp32", "paper")
    assert "underpowered" not in res["measured"].get("flags", [])


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
    from reprolab.evidence.judging.claims import Threshold

    t = table({"t1": 0.1, "t2": 0.1}, noise=0.0)
    v = Threshold("m", bound=0.5).evaluate(t[t.precision == "fp32"], "acc")
    assert v.verdict == "reproduced" and v.measured["ci_low"] > 0.5
    assert Threshold("m", bound=0.99).evaluate(t, "acc").verdict == "not_reproduced"
    lower = Threshold("m", bound=0.99, higher_is_better=False).evaluate(t, "acc")
    assert lower.verdict == "reproduced"


def test_paired_difference_averages_tasks_within_a_seed():
    from reprolab.evidence.judging.claims import PairedDifference

    t = table({"t1": 0.05, "t2": 0.03})
    v = PairedDifference("m", "b").evaluate(t, "acc")
    # 8 pairs from 4 seeds: the seed is the replicate
    assert v.verdict == "reproduced" and v.measured["n"] == 4
    assert v.measured["value"] == pytest.approx(0.04, abs=0.002)
    assert PairedDifference("b", "m").evaluate(t, "acc").verdict == "not_reproduced"
    within = PairedDifference("m", "b", margin=0.04, higher_is_better=False).evaluate(t, "acc")
    assert within.verdict == "inconclusive"


# ---------------------------------------------------------------- Where, Trend, paired


def _long(rows, params=()) -> pd.DataFrame:
    cols = ["task", "variant", "seed", *params, "precision", "metric", "value"]
    out = pd.DataFrame(rows, columns=cols)
    out["seed"] = out["seed"].astype("Int64")
    return out


def test_paired_fills_a_seed_free_baseline_on_every_seed():
    from reprolab.evidence.judging.claims import PairedDifference, paired

    # method m seeded (seeds 0, 1, 2); baseline b seed-free (one exact value, 1.0)
    rows = [("t", "m", s, 5.0, "fp32", "eps", v) for s, v in ((0, 0.9), (1, 0.85), (2, 0.8))]
    rows += [("t", "b", None, 5.0, "fp32", "eps", 1.0)]
    table = _long(rows, ["sigma"])
    pivot = paired(table, "eps")
    assert len(pivot) == 3 and list(pivot["b"]) == [1.0, 1.0, 1.0]
    v = PairedDifference("m", "b", higher_is_better=False).evaluate(table, "eps")
    verdict, measured = v.verdict, v.measured
    # differences -0.1, -0.15, -0.2: mean -0.15, sd 0.05, t(0.975, 2) = 4.3027
    half = 4.302652729911275 * 0.05 / math.sqrt(3)
    assert measured["value"] == pytest.approx(-0.15)
    assert (measured["ci_low"], measured["ci_high"]) == pytest.approx((-0.15 - half, -0.15 + half))
    assert measured["ci_high"] == pytest.approx(-0.0258, abs=1e-4)
    assert measured["n"] == 3 and not measured["seed_free"]
    assert verdict == "reproduced"


def test_paired_is_wide_without_mixed_keys():
    from reprolab.evidence.judging.claims import paired, wide

    rows = [("t", v, s, "fp32", "acc", 0.1 * s) for v in ("m", "b") for s in (0, 1)]
    table = _long(rows)
    pd.testing.assert_frame_equal(paired(table, "acc"), wide(table, "acc"))
    free = _long([("t", v, None, "fp32", "acc", 0.5) for v in ("m", "b")])
    pd.testing.assert_frame_equal(paired(free, "acc"), wide(free, "acc"))


def test_where_restricts_to_parameter_values():
    from reprolab.evidence.judging.claims import Threshold, Where

    rows = [
        ("a", "m", 0, "quad", "fp32", "x", 1.0),
        ("a", "m", 1, "quad", "fp32", "x", 1.2),
        ("b", "m", 0, "strat", "fp32", "x", -5.0),
        ("b", "m", 1, "strat", "fp32", "x", -5.0),
    ]
    table = _long(rows, ["family"])
    v = Where(Threshold("m", 0.0), family="quad").evaluate(table, "x")
    verdict, measured = v.verdict, v.measured
    # 1.0, 1.2: mean 1.1, half-width 12.706 * 0.1414 / sqrt 2 = 1.2706 -> [-0.17, 2.37]
    assert measured["value"] == pytest.approx(1.1)
    assert measured["ci_low"] == pytest.approx(1.1 - 12.706204736 * 0.1)
    assert verdict == "inconclusive" and measured["summary"].startswith("[family=quad]")
    v = Where(Threshold("m", 0.0), family=("quad", "strat")).evaluate(table, "x")
    assert v.measured["value"] == pytest.approx((1.0 + 1.2 - 10.0) / 4)
    v = Where(Threshold("m", 0.0), family="none").evaluate(table, "x")
    assert v.verdict == "inconclusive" and v.measured["summary"].startswith("not tested")
    assert Where(Threshold("m", 0.0), family="quad").variants() == ("m",)


def test_trend_spearman_within_settings():
    from reprolab.evidence.judging.claims import Trend

    # two settings (c = 1, 2) x two seeds; within each, the metric over beta = 0, 1, 2
    curves = {(1.0, 0): (0.1, 0.2, 0.3), (1.0, 1): (0.1, 0.3, 0.2), (2.0, 0): (0.0, 0.1, 0.5)}
    rows = [
        (f"c{c}b{b}", "m", seed, float(b), c, "fp32", "plateau", v)
        for (c, seed), values in curves.items()
        for b, v in enumerate(values)
    ]
    table = _long(rows, ["beta", "c"])
    v = Trend("m", "beta").evaluate(table, "plateau")
    verdict, measured = v.verdict, v.measured
    # rank correlations: seed 0 has 1 (c=1) and 1 (c=2), seed 1 has 0.5: the seed is the
    # replicate, so the units are 1 and 0.5 -> mean 0.75, sd 0.3536, t(0.975, 1) = 12.706
    half = 12.706204736174696 * math.sqrt(0.125) / math.sqrt(2)
    assert measured["value"] == pytest.approx(0.75)
    assert measured["ci_low"] == pytest.approx(0.75 - half)
    assert measured["mean_gap_largest_minus_smallest"] == pytest.approx((0.2 + 0.1 + 0.5) / 3)
    # the verdict is the sign test over seeds: 2 of 2 positive is p = 1/4, not enough
    assert measured["n"] == 2 and measured["sign_test_p"] == pytest.approx(1 / 4)
    assert verdict == "inconclusive"


def test_trend_saturated_rank_correlations_decide_by_sign():
    from reprolab.evidence.judging.claims import Trend

    # six seeds, each a perfectly monotone curve: every rho is exactly 1 (zero width)
    rows = [
        (f"b{b}", "m", seed, float(b), "fp32", "plateau", 0.1 * b + 0.01 * seed)
        for seed in range(6)
        for b in range(3)
    ]
    table = _long(rows, ["beta"])
    claim = mk("t", "grows", "-", "-", "plateau", Trend("m", "beta"))
    res = claim.evaluate(table, "fp32", "paper")
    m = res["measured"]
    assert m["ci_low"] == m["ci_high"] == 1.0 and m["sign_test_p"] == pytest.approx(1 / 64)
    assert res["verdict"] == "reproduced" and "rule" not in m
    wrong = mk("t", "falls", "-", "-", "plateau", Trend("m", "beta", increasing=False))
    assert wrong.evaluate(table, "fp32", "paper")["verdict"] == "not_reproduced"


def test_a_deterministic_threshold_compares_one_value():
    from reprolab.evidence.judging.claims import Threshold

    rows = [("t", "m", seed, "fp32", "bytes_ratio", 3.1) for seed in range(4)]
    claim = mk("mem", "smaller", "2.8x", "-", "bytes_ratio", Threshold("m", 2.8))
    assert claim.evaluate(_long(rows), "fp32", "paper")["verdict"] == "inconclusive"
    exact = mk("mem", "smaller", "2.8x", "-", "bytes_ratio", Threshold("m", 2.8, True, True))
    res = exact.evaluate(_long(rows), "fp32", "paper")
    assert res["verdict"] == "reproduced" and res["measured"]["n"] == 1
    # tasks may differ (two model sizes): each task's value is compared exactly
    two = rows + [("u", "m", seed, "fp32", "bytes_ratio", 2.5) for seed in range(4)]
    res = exact.evaluate(_long(two), "fp32", "paper")
    assert res["verdict"] == "inconclusive" and res["measured"]["n"] == 2  # one each side
    assert (res["measured"]["ci_low"], res["measured"]["ci_high"]) == (2.5, 3.1)
    high = rows + [("u", "m", seed, "fp32", "bytes_ratio", 2.9) for seed in range(4)]
    assert exact.evaluate(_long(high), "fp32", "paper")["verdict"] == "reproduced"
    rows[0] = ("t", "m", 0, "fp32", "bytes_ratio", 3.2)  # not deterministic after all
    with pytest.raises(ValueError, match="declared deterministic"):
        exact.evaluate(_long(rows), "fp32", "paper")


def test_trend_one_seed_free_group_is_exact():
    from reprolab.evidence.judging.claims import Trend

    rows = [(f"k{k}", "m", None, k, "fp32", "gap", 1.0 / k) for k in (1, 2, 4)]
    v = Trend("m", "k", increasing=False).evaluate(_long(rows, ["k"]), "gap")
    assert v.measured["value"] == -1.0 and v.measured["ci_low"] == v.measured["ci_high"] == -1.0
    assert v.verdict == "reproduced"


def test_a_deterministic_paired_difference_compares_one_value():
    from reprolab.evidence.judging.claims import PairedDifference

    rows = [
        (t, v, seed, "fp32", "saved_mb", value)
        for t in ("a", "b")
        for seed in range(3)
        for v, value in (("m", 1.0), ("b", 4.0))
    ]
    plain = mk("mem", "less", "-", "-", "saved_mb", PairedDifference("m", "b", False))
    assert plain.evaluate(_long(rows), "fp32", "paper")["verdict"] == "inconclusive"
    exact = mk(
        "mem", "less", "-", "-", "saved_mb", PairedDifference("m", "b", False, deterministic=True)
    )
    res = exact.evaluate(_long(rows), "fp32", "paper")
    assert res["verdict"] == "reproduced" and res["measured"]["value"] == -3.0
    rows[0] = ("a", "m", 0, "fp32", "saved_mb", 2.0)
    with pytest.raises(ValueError, match="declared deterministic"):
        exact.evaluate(_long(rows), "fp32", "paper")


def test_exhaustive_counts_need_three_units_but_no_interval():
    zero = {"value": 0.0, "ci_low": 0.0, "ci_high": 0.0, "test": "exhaustive"}
    assert _rules("reproduced", {**zero, "n": 5})[0] == "reproduced"
    verdict, m = _rules("reproduced", {**zero, "n": 2})
    assert verdict == "inconclusive" and m["rule"].startswith("n < 3")


@pytest.mark.parametrize(
    ("lo", "hi", "bound", "effect", "expected"),
    [
        (-0.0108, 0.0033, 0.0, 0.0095, False),  # bdia's accuracy: -0.0108 is past -0.0095
        (-0.0090, 0.0033, 0.0, 0.0095, True),  # within +-0.0095 of 0 both ways
        (0.05, 0.15, 0.10, 0.06, True),  # around a non-zero bound
        (0.03, 0.15, 0.10, 0.06, False),  # 0.03 < 0.10 - 0.06
        (-0.001, 0.001, 0.0, 0.0, False),  # no effect that matters: nothing to rule out
        (-0.001, math.inf, 0.0, 0.01, False),  # unbounded
    ],
)
def test_rules_out_effect_by_hand(lo, hi, bound, effect, expected):
    from reprolab.evidence.judging.claims import equivalence_text, rules_out_effect

    measured = {"ci_low": lo, "ci_high": hi, "bound": bound}
    assert rules_out_effect(measured, effect) is expected
    assert "0.0095" in equivalence_text(0.0095)


@pytest.mark.parametrize(
    ("lo", "hi", "bound", "claimed", "effect", "expected"),
    [
        # bdia's accuracy: a gain of 0.0095 or more is excluded, a loss is not
        (-0.0108, 0.0033, 0.0, ">", 0.0095, "claimed"),
        (-0.0090, 0.0033, 0.0, ">", 0.0095, "both"),  # both ways: the two-sided reading
        (-0.0108, 0.0100, 0.0, ">", 0.0095, ""),  # 0.0100 > 0.0095: a gain that size fits
        (-0.05, 0.2, 0.0, "<", 0.1, "claimed"),  # claimed below: -0.05 > -0.1 excludes it
        (-0.05, 0.2, 0.0, "<", 0.04, ""),  # ...but not an effect of 0.04 (-0.05 < -0.04)
        (-0.2, 0.3, 0.1, ">", 0.25, "claimed"),  # a non-zero bound: 0.3 < 0.1 + 0.25
        (-0.0108, 0.0033, 0.0, "", 0.0095, ""),  # no claimed side (a test over tasks)
        (-0.0108, 0.0033, 0.0, ">", 0.0, ""),  # no effect that matters
        (-0.0108, math.nan, 0.0, ">", 0.0095, ""),  # no interval
    ],
)
def test_undecided_reading_by_hand(lo, hi, bound, claimed, effect, expected):
    from reprolab.evidence.judging.claims import undecided_reading

    measured = {"ci_low": lo, "ci_high": hi, "bound": bound, "claimed": claimed}
    text = undecided_reading(measured, effect)
    if expected == "both":
        assert "ruled out either way" in text
    elif expected == "claimed":
        end = hi if claimed == ">" else lo
        assert "on the claimed side is ruled out" in text and f"{end:+.3g}" in text
        assert f"{effect:g}" in text
    else:
        assert text == ""


def test_a_metric_never_measured_is_not_tested_and_out_of_reach_stays_so():
    """A profile that leaves a benchmark out (cot_order's HumanEval at n_humaneval 0)
    records NaN for its metrics: its claims say so instead of crashing the stage."""
    from reprolab.evidence.judging.claims import OutOfReach, PairedDifference

    rows = [
        {"task": "t", "variant": v, "seed": s, "precision": "fp32", "metric": m, "value": x}
        for v in ("m", "b")
        for s in range(3)
        for m, x in (("acc", 0.5 + 0.1 * (v == "m") + 0.01 * s), ("he", float("nan")))
    ]
    t = pd.DataFrame(rows)
    check = PairedDifference("m", "b")
    plain = mk("c", "s", "p", "set", "he", check).evaluate(t, "fp32", "paper")
    assert plain["verdict"] == "inconclusive" and "no he value" in plain["measured"]["summary"]
    reach = OutOfReach(reason="too small", would_test="a bigger model")
    far = mk("d", "s", "p", "set", "he", check, out_of_reach=reach).evaluate(t, "fp32", "paper")
    assert far["verdict"] == "out_of_reach"
    measured = mk("e", "s", "p", "set", "acc", check).evaluate(t, "fp32", "paper")
    assert "not_tested" not in measured["measured"]  # the measured metric is tested
    assert measured["measured"]["value"] == pytest.approx(0.1)


def test_ratio_of_means_is_the_delta_method_of_the_covariance_matrix():
    """R = mean(x) / mean(y) and its standard error equal the general delta method,
    sqrt(g' S g / n) with g = (1 / my, -mx / my^2) and S the sample covariance of (x, y)."""
    from reprolab.evidence.judging.stats import ratio_of_means

    rng = np.random.default_rng(3)
    x = rng.normal(0.3, 0.05, 12)
    y = 0.5 * x + rng.normal(0.2, 0.03, 12)
    ratio, se = ratio_of_means(x, y)
    mx, my = x.mean(), y.mean()
    g = np.array([1 / my, -mx / my**2])
    assert ratio == pytest.approx(mx / my, rel=1e-12)
    assert se == pytest.approx(np.sqrt(g @ np.cov(x, y) @ g / x.size), rel=1e-10)
    assert ratio_of_means([0.4], [0.2]) == (pytest.approx(2.0), float("inf"))
