"""Valid verdicts: the replicate unit, the rules, the size reading, the family of a
method's claims, and held-out blocks, each against an independent reference (scipy,
statsmodels, brute force on a tiny case) and over every committed result."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from reprolab.evidence.judging.claims import (
    VERDICTS,
    Claim,
    Level,
    PairedDifference,
    adjust_family,
    read_size,
)
from reprolab.evidence.judging.stats import median_interval, unit_means

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"


def _pairs(per_seed: list[list[float]]) -> pd.DataFrame:
    """A long metrics table: method - baseline = the given differences, task by task."""
    rows = []
    for seed, diffs in enumerate(per_seed):
        for task, d in enumerate(diffs):
            rows.append((f"t{task}", "m", seed, "fp32", "acc", 0.5 + d))
            rows.append((f"t{task}", "b", seed, "fp32", "acc", 0.5))
    out = pd.DataFrame(rows, columns=["task", "variant", "seed", "precision", "metric", "value"])
    out["seed"] = out["seed"].astype("Int64")
    return out


# ------------------------------------------------------------------------ the unit


def test_paired_difference_counts_seeds_not_pairs():
    rng = np.random.default_rng(0)
    per_seed = [list(0.02 + 0.01 * rng.standard_normal(7)) for _ in range(5)]
    v = PairedDifference("m", "b").evaluate(_pairs(per_seed), "acc", Level(confidence=0.9))
    means = np.array([np.mean(d) for d in per_seed])
    ci = stats.ttest_1samp(means, 0.0).confidence_interval(0.9)
    assert v.measured["n"] == 5  # 35 pairs, 5 independent seeds
    assert (v.measured["ci_low"], v.measured["ci_high"]) == pytest.approx((ci.low, ci.high))


def test_a_declared_pair_unit_counts_pairs():
    per_seed = [[0.01, 0.03], [0.02, 0.04], [0.0, 0.05]]
    v = PairedDifference("m", "b").evaluate(_pairs(per_seed), "acc", Level(unit="pair"))
    assert v.measured["n"] == 6


def test_unit_means_keeps_seed_free_values_apart():
    assert list(unit_means([1.0, 3.0, 5.0, 7.0], [0, 0, None, None])) == [2.0, 5.0, 7.0]


def test_a_claim_with_another_unit_must_say_why():
    with pytest.raises(ValueError, match="unit_reason"):
        Claim(
            id="x",
            statement="",
            paper_value="",
            paper_setting="",
            metric="acc",
            check=PairedDifference("m", "b"),
            effect=0.01,
            effect_basis="margin: x",
            source="card",
            unit="task",
        )


# ------------------------------------------------------------------------ the sign rule


@pytest.mark.parametrize("n", [5, 6, 9, 15, 20])
@pytest.mark.parametrize("confidence", [0.95, 0.99])
def test_median_interval_is_scipys_and_inverts_the_sign_test(n, confidence):
    x = np.random.default_rng(n).lognormal(size=n)
    iv = median_interval(x, confidence)
    alpha = 1 - confidence
    # brute force: the values m that a two-sided exact sign test does not reject
    grid = np.sort(x)
    kept = []
    for m in np.concatenate([grid, (grid[1:] + grid[:-1]) / 2]):
        above, below = int((x > m).sum()), int((x < m).sum())
        p_up = stats.binom.cdf(below, above + below, 0.5)
        p_down = stats.binom.cdf(above, above + below, 0.5)
        if min(p_up, p_down) > alpha / 2:
            kept.append(m)
    if not math.isfinite(iv.low):
        assert len(kept) == 2 * n - 1  # nothing is rejected at this n
        return
    ci = stats.quantile_test(x, q=float(np.median(x)), p=0.5).confidence_interval(confidence)
    assert (iv.low, iv.high) == pytest.approx((ci.low, ci.high))
    inside = [m for m in kept if iv.low <= m <= iv.high]
    assert min(inside) == pytest.approx(iv.low) or min(kept) >= iv.low


# ------------------------------------------------------------------------ the size reading


def _measured(low, high, claimed=">"):
    return {"ci_low": low, "ci_high": high, "bound": 0.0, "claimed": claimed, "value": 0}


@pytest.mark.parametrize(
    ("interval", "verdict", "from_paper", "expected"),
    [
        ((0.01, 0.05), "reproduced", True, "reproduced"),  # holds the paper's 0.03
        ((0.05, 0.09), "reproduced", True, "reproduced"),  # larger than the paper's
        ((0.001, 0.02), "reproduced", True, "reproduced_smaller"),  # excludes 0.03
        ((0.04, 0.09), "reproduced", False, "reproduced"),  # clears 0.03
        ((0.01, 0.05), "reproduced", False, "inconclusive"),  # straddles 0.03
        ((0.001, 0.02), "reproduced", False, "reproduced_smaller"),
        ((-0.02, 0.02), "inconclusive", False, "no_effect"),  # within +-0.03
        ((-0.02, 0.05), "inconclusive", False, "inconclusive"),
        ((-0.05, -0.01), "not_reproduced", True, "not_reproduced"),
    ],
)
def test_size_reading(interval, verdict, from_paper, expected):
    assert read_size(verdict, _measured(*interval), 0.03, from_paper)[0] == expected


def test_size_reading_on_the_lower_side():
    # a claim that the method is *lower*: -0.05 [-0.08, -0.02] against the paper's 0.03
    assert read_size("reproduced", _measured(-0.08, -0.02, "<"), 0.03, True)[0] == "reproduced"
    assert read_size("reproduced", _measured(-0.02, -0.01, "<"), 0.03, True)[0] == (
        "reproduced_smaller"
    )


def test_a_threshold_claim_keeps_its_verdict():
    m = {**_measured(0.2, 0.3), "bound": 0.1}
    assert read_size("reproduced", m, 0.05, False) == ("reproduced", "")


@pytest.mark.parametrize("seed", range(6))
def test_no_effect_is_statsmodels_tost(seed):
    """The interval at confidence 1 - a inside +-margin is TOST at a / 2 per side."""
    from statsmodels.stats.weightstats import DescrStatsW

    rng = np.random.default_rng(seed)
    x = rng.normal(0.002 * seed, 0.01, size=8)
    margin, confidence = 0.012, 0.95
    iv = Level(confidence=confidence).t_interval(x)
    ours = read_size("inconclusive", _measured(iv.low, iv.high), margin, False)[0]
    p = DescrStatsW(x).ttost_mean(-margin, margin)[0]
    assert (ours == "no_effect") == (p < (1 - confidence) / 2)


# ------------------------------------------------------------------------ the family


def _result(cid, p, central=False):
    return {
        "id": cid,
        "precision": "fp32",
        "headline": True,
        "central": central,
        "verdict": "reproduced" if p <= 0.05 else "inconclusive",
        "measured": {"p": p},
    }


def _again(result, alpha):
    verdict = "reproduced" if result["measured"]["p"] <= alpha else "inconclusive"
    return {**result, "verdict": verdict}


@pytest.mark.parametrize("ps", [(0.001, 0.012, 0.02, 0.04), (0.01, 0.013, 0.3), (0.02, 0.04)])
def test_holm_after_the_central_claim_is_statsmodels_holm(ps):
    from statsmodels.stats.multitest import multipletests

    results = [_result("c", 0.001, central=True)] + [_result(f"s{i}", p) for i, p in enumerate(ps)]
    out = adjust_family(results, _again, 0.05)
    reject = multipletests(list(ps), 0.05, "holm")[0]
    assert [r["verdict"] == "reproduced" for r in out[1:]] == list(reject)
    assert out[0]["verdict"] == "reproduced"


def test_an_undecided_central_claim_closes_the_family():
    results = [_result("c", 0.2, central=True), _result("s", 0.0001)]
    out = adjust_family(results, _again, 0.05)
    assert out[1]["verdict"] == "inconclusive"
    assert out[1]["measured"]["check_verdict"] == "reproduced"
    assert "central claim is undecided" in out[1]["measured"]["family"]["note"]


# ------------------------------------------------------------------------ held-out blocks


def test_heterogeneity_from_summaries_is_welchs_test_on_the_values():
    from reprolab.evidence.running.scoreboard import _heterogeneity, _pool

    a, b = np.array([0.05, 0.04, 0.06, 0.03, 0.05]), np.array([0.0, -0.02, 0.01, -0.01, 0.02])

    def summary(x):
        return {"value": x.mean(), "sd": x.std(ddof=1), "n": x.size}

    p = _heterogeneity(summary(a), summary(b))
    assert p == pytest.approx(stats.ttest_ind(a, b, equal_var=False).pvalue)
    mean, low, high, n = _pool(summary(a), summary(b))
    ci = stats.ttest_1samp(np.concatenate([a, b]), 0).confidence_interval(0.95)
    assert (mean, low, high, n) == pytest.approx((np.r_[a, b].mean(), ci.low, ci.high, 10))


# ------------------------------------------------------------------------ committed results


def _committed():
    for path in sorted(RESULTS.glob("**/claims.json")):
        for entry in json.loads(path.read_text()):
            yield path.relative_to(RESULTS), entry


def test_every_committed_claim_names_its_unit_and_rule_and_a_known_verdict():
    seen = 0
    for where, entry in _committed():
        m = entry["measured"]
        assert entry["verdict"] in VERDICTS, (where, entry["id"])
        assert m.get("unit") and m.get("analysis"), (where, entry["id"])
        seen += 1
    assert seen > 300


#: A known defect, on the record in a registered run that is never amended: a claim's
#: ``seeds`` (and so its sequential look) come from the variants the claim names, while
#: ff_graphs' Extreme checks also read the seeded families (random, searched); once the
#: deterministic families' graph metrics were measured on one seed, these two all_of
#: claims list 1 seed for n = 5 and were read at the plan's look for 1 seed (z 4.38, not
#: the registered 1.96): stricter, and both reproduced. See the ff_graphs README.
KNOWN_SEED_LIST_DEFECT = {
    ("ff_graphs/confirm-2026-12-08-7c03fcf2/claims.json", "line_best_fidelity"),
    ("ff_graphs/confirm-2026-12-08-7c03fcf2/claims.json", "line_worst_mixing"),
}


def test_no_committed_interval_counts_more_replicates_than_independent_units():
    checked, defect = 0, set()
    for where, entry in _committed():
        m = entry["measured"]
        if m.get("unit") != "seed" or m.get("test") in ("exact", "exhaustive"):
            continue
        seeds = m.get("seeds") or []
        if isinstance(m.get("n"), int) and seeds:
            if (str(where), entry["id"]) in KNOWN_SEED_LIST_DEFECT:
                defect.add((str(where), entry["id"]))
                assert m["n"] > len(seeds)  # the recorded defect, nothing else
                continue
            assert m["n"] <= len(seeds), (where, entry["id"], m["n"], len(seeds))
            checked += 1
    assert checked > 200
    assert defect == KNOWN_SEED_LIST_DEFECT  # the list names only what is there


def test_committed_claims_are_what_the_current_analysis_gives():
    """``python -m reprolab reread --check``: every claims.json is the re-read of its
    committed metrics (a change of analysis without a re-read fails here)."""
    from reprolab.evidence.running import reread

    stale = []
    for slug in sorted(p.name for p in RESULTS.iterdir() if (p / "claims.json").is_file()):
        for folder in reread.folders(RESULTS, slug):
            if (folder / "claims.json").is_file():
                from reprolab.core.io import json_text

                if (
                    json_text(reread.reread_folder(folder, slug))
                    != (folder / "claims.json").read_text()
                ):
                    stale.append(str(folder.relative_to(RESULTS)))
    assert not stale


def test_verdict_kinds_are_distinct_and_complete():
    assert len(set(VERDICTS)) == len(VERDICTS)
    assert set(itertools.chain(VERDICTS)) >= {"reproduced_smaller", "no_effect"}


# ------------------------------------------------------------------------ premise gate


def _premise_table(selectivity: list[float]) -> pd.DataFrame:
    rows = []
    for seed, sel in enumerate(selectivity):
        rows += [
            ("t", "tuned", seed, "fp32", "sel", sel),
            ("t", "tuned", seed, "fp32", "base_sel", 0.1),
            ("t", "tuned", seed, "fp32", "acc", 0.6),
            ("t", "base", seed, "fp32", "acc", 0.5 + 0.001 * seed),
        ]
    out = pd.DataFrame(rows, columns=["task", "variant", "seed", "precision", "metric", "value"])
    out["seed"] = out["seed"].astype("Int64")
    return out


def _gated() -> Claim:
    from reprolab.evidence.judging.claims import Premise

    return Claim(
        id="gated",
        statement="tuned beats base",
        paper_value="",
        paper_setting="",
        metric="acc",
        check=PairedDifference("tuned", "base"),
        effect=0.01,
        effect_basis="margin: x",
        source="card",
        premise=Premise("selective", "tuned", "sel", 0.5, minus="base_sel"),
    )


def test_a_failed_premise_leaves_the_claim_untested():
    """safety_dims' case: the premise holds on 2 of 5 seeds; the check alone would
    decide, the claim is 'not tested: premise failed' and spends no alpha."""
    result = _gated().evaluate(_premise_table([0.17, 0.0, 0.67, 0.25, 0.75]), "fp32", "paper")
    m = result["measured"]
    assert result["verdict"] == "premise_failed" and m["check_verdict"] == "reproduced"
    assert m["premise"]["failing_seeds"] == [0, 1, 3]
    assert m["premise"]["per_seed"][0] == pytest.approx(0.07)
    held = _gated().evaluate(_premise_table([0.9, 0.8, 0.7, 0.95, 0.6]), "fp32", "paper")
    assert held["verdict"] == "reproduced" and held["measured"]["premise"]["holds"]
    out = adjust_family([{**result, "headline": True}], _again, 0.05)
    assert out[0]["verdict"] == "premise_failed" and "family" not in out[0]["measured"]


def test_a_sign_test_verdict_reads_with_its_counts_not_only_the_mean_interval():
    """A check over tasks decides by the sign test of its tasks; the mean's interval at
    a first look's tiny nominal level can cross the bound under a decisive verdict, so
    the one-line reading (scoreboard, README blocks) leads with what the test counted.
    The p-value against scipy's exact binomial test."""
    from reprolab.evidence.judging.claims import PairedMajority, measured_text

    # 16 tasks, each clearly better on 5 seeds but of very different sizes: the sign
    # test decides at a first look's nominal level while the interval of the mean is wide
    rng = np.random.default_rng(3)
    sizes = np.logspace(-3, 0, 16)
    per_seed = [[s * (1 + 0.01 * rng.standard_normal()) for s in sizes] for _ in range(5)]
    level = Level(confidence=1 - 1e-4, unit="task")
    verdict = PairedMajority("m", "b").evaluate(_pairs(per_seed), "acc", level)
    m = verdict.measured
    assert verdict.verdict == "reproduced" and m["better"] == 16 and m["worse"] == 0
    assert m["ci_low"] < 0  # the mean's interval alone would not clear the bound
    p = stats.binomtest(16, 16, 0.5, alternative="greater").pvalue
    assert m["sign_test_p"] == pytest.approx(p)
    text = measured_text(m)
    assert text.startswith(f"16 of 16 tasks better, 0 worse (sign test p = {p:.2g}); mean ")
    assert text.endswith("]")
    # an interval-decided entry reads as before
    plain = {"value": 0.1, "ci_low": 0.05, "ci_high": 0.15, "test": "t"}
    assert measured_text(plain) == "+0.1 [+0.05, +0.15]"
