"""lift_gs (issue 46): the labelled fine-tuning scene drawn per seed, and the central
claim's smallest effect as the paper's relative gain over the from-scratch 3D IoU."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from reprolab import config
from reprolab.methods.lift_gs.claims import (
    CLAIMS,
    FROM_SCRATCH_MIOU,
    PAPER_RELATIVE_GAIN,
    relative_effect,
)
from reprolab.methods.lift_gs.config import FINETUNE
from reprolab.methods.lift_gs.method import finetune_plan, labelled_scenes

ROOT = Path(__file__).resolve().parents[2]
CENTRAL = next(c for c in CLAIMS if c.id == "pretraining_helps_finetuning")


def _cfg(**over):
    base = {"n_train": 32, "pretrain_scenes": 8, "finetune_scenes": 1, "finetune_epochs": 10}
    return config.method_config("lift_gs", "smoke", {**base, **over}, "test")


# ------------------------------------------------------------ the per-seed scene draw


def test_same_seed_draws_the_same_scenes_and_other_seeds_other_ones():
    cfg = _cfg(finetune_draw="per_seed")
    seeds = range(10)
    first = {s: labelled_scenes(cfg, s).tolist() for s in seeds}
    again = {s: labelled_scenes(cfg, s).tolist() for s in seeds}
    assert first == again  # the same seed: the same labelled scenes
    labelled = [first[s][0] for s in seeds]
    # ten seeds from 16 candidate scenes: not one scene for all (as with a fixed draw)
    assert len(set(labelled)) >= 5
    assert labelled_scenes(cfg, 0)[0] != labelled_scenes(cfg, 1)[0]
    # the plan's labelled scene is the draw's, for the scratch and pretrained arms alike
    for s in seeds:
        plans = {v: finetune_plan(v, cfg, s) for v in FINETUNE}
        for v in ("ft_scratch", "ft_pre1x", "ft_pre2x"):
            assert plans[v]["finetune"].tolist() == [first[s][0]]
        assert plans["ft_scratch_2lab"]["finetune"].tolist() == sorted(first[s])


def test_drawn_scenes_are_distinct_outside_every_pretraining_set_and_nested():
    cfg = _cfg(finetune_draw="per_seed", finetune_scenes=3)
    pretrain = set(range(2 * cfg.pretrain_scenes))  # the 2N arm's set holds the N arm's
    for s in range(200):
        drawn = labelled_scenes(cfg, s)
        assert len(drawn) == len(set(drawn.tolist())) == 6
        assert all(16 <= i < 32 for i in drawn)
        assert not pretrain & set(drawn.tolist())
        one = set(finetune_plan("ft_scratch", cfg, s)["finetune"].tolist())
        two = set(finetune_plan("ft_scratch_2lab", cfg, s)["finetune"].tolist())
        assert len(one) == 3 and len(two) == 6 and one < two  # 2n = the n and n more


def test_labelled_scene_is_uniform_over_the_scenes_no_pretraining_set_holds():
    """Brute force over 3,200 seeds: every one of the 16 candidate scenes is drawn, at
    frequencies a chi-square goodness-of-fit test (scipy) does not reject as uniform."""
    cfg = _cfg(finetune_draw="per_seed")
    labelled = np.array([labelled_scenes(cfg, s)[0] for s in range(3200)])
    counts = np.bincount(labelled - 16, minlength=16)
    assert counts.size == 16 and (counts > 0).all()
    assert stats.chisquare(counts).pvalue > 1e-3


def test_last_draw_keeps_the_results_on_file_and_per_seed_needs_a_seed():
    cfg = _cfg()  # finetune_draw: last (the default, the committed run's setting)
    for s in (0, 7):
        assert finetune_plan("ft_scratch", cfg, s)["finetune"].tolist() == [31]
        assert finetune_plan("ft_scratch_2lab", cfg, s)["finetune"].tolist() == [30, 31]
    with pytest.raises(ValueError, match="needs the unit's seed"):
        finetune_plan("ft_scratch", _cfg(finetune_draw="per_seed"))


def test_paper_profile_draws_per_seed():
    import yaml

    over = yaml.safe_load((ROOT / "params.yaml").read_text())["methods"]["lift_gs"]["paper"]
    cfg = config.method_config("lift_gs", "paper", over, "test")
    assert cfg.finetune_draw == "per_seed"
    assert len({int(labelled_scenes(cfg, s)[0]) for s in range(10)}) > 1


# ------------------------------------------------------ the relative smallest effect


#: the commit of the exploratory run of 2026-12-06 whose ft_scratch level claims.py records
RECORD_COMMIT = "7310e18"


def test_smallest_effect_is_the_papers_relative_gain_of_the_level_on_record():
    # the level on record, read back from the metrics committed by the run it names (an
    # independent reading; later runs replaced docs/results/lift_gs/metrics.csv)
    import io
    import subprocess

    recorded = subprocess.run(
        ["git", "show", f"{RECORD_COMMIT}:docs/results/lift_gs/metrics.csv"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    table = pd.read_csv(io.StringIO(recorded))
    rows = table[
        (table.variant == "ft_scratch") & (table.metric == "miou") & (table.precision == "fp32")
    ]
    assert sorted(rows.seed.astype(int)) == list(range(10))
    assert pytest.approx(rows.value.mean(), abs=5e-5) == FROM_SCRATCH_MIOU
    assert PAPER_RELATIVE_GAIN == 0.10  # the low end of the abstract's 10-30%
    assert CENTRAL.effect == relative_effect() == pytest.approx(0.0485, abs=1e-4)
    assert CENTRAL.effect == pytest.approx(0.10 * rows.value.mean(), abs=1e-4)
    assert CENTRAL.effect_from_paper and "relative" in CENTRAL.effect_basis


def _table(diffs: list[float]) -> pd.DataFrame:
    """ft_scratch at 0.48 + a seed wobble and ft_pre1x that much higher, per seed."""
    rows = []
    for seed, d in enumerate(diffs):
        base = 0.48 + 0.01 * ((seed * 7) % 5 - 2)
        for variant, v in (("ft_scratch", base), ("ft_pre1x", base + d)):
            rows.append(
                {
                    "task": "scenes_n32",
                    "variant": variant,
                    "seed": seed,
                    "n_labeled": 1.0,
                    "scenes": "procedural",
                    "precision": "fp32",
                    "metric": "miou",
                    "value": v,
                }
            )
    return pd.DataFrame(rows)


def _reference(diffs: list[float], effect: float) -> str:
    """The definition, decided from scipy's 95% t-interval of the paired differences:
    above 0 and reaching the effect: reproduced; above 0, wholly below it: reproduced
    (smaller); holding 0 inside +-effect: no effect; else inconclusive / not reproduced."""
    d = np.asarray(diffs)
    lo, hi = stats.t.interval(0.95, d.size - 1, loc=d.mean(), scale=stats.sem(d))
    if lo > 0:
        return "reproduced" if hi >= effect else "reproduced_smaller"
    if hi < 0:
        return "not_reproduced"
    return "no_effect" if -effect < lo and hi < effect else "inconclusive"


@pytest.mark.parametrize(
    ("diffs", "expected"),
    [
        # +0.019-like gain (the committed run's size): clears 0, wholly below 0.0485
        ([0.015, 0.022, 0.018, 0.025, 0.012, 0.021, 0.019, 0.017], "reproduced_smaller"),
        # a gain whose interval reaches 10% of the from-scratch level
        ([0.04, 0.06, 0.05, 0.03, 0.07, 0.055, 0.045, 0.05], "reproduced"),
        # no gain: the interval holds 0 and lies within +-0.0485 (equivalence)
        ([0.01, -0.012, 0.005, -0.004, 0.008, -0.009, 0.002, -0.001], "no_effect"),
    ],
)
def test_central_claim_decides_against_the_relative_effect(diffs, expected):
    got = CENTRAL.evaluate(_table(diffs), "fp32", "paper")
    assert _reference(diffs, CENTRAL.effect) == expected
    assert got["verdict"] == expected
    m = got["measured"]
    d = np.asarray(diffs)
    lo, hi = stats.t.interval(0.95, d.size - 1, loc=d.mean(), scale=stats.sem(d))
    assert (m["ci_low"], m["ci_high"]) == pytest.approx((lo, hi), abs=1e-9)


def test_the_committed_size_of_gain_reads_differently_under_the_old_effect():
    """The same +0.019 table: compatible with an effect of 0.02 (the old assumption, a
    from-scratch IoU of 0.2), smaller than 10% of the measured level (0.0485)."""
    diffs = [0.015, 0.022, 0.018, 0.025, 0.012, 0.021, 0.019, 0.017]
    assert _reference(diffs, 0.02) == "reproduced"
    assert _reference(diffs, CENTRAL.effect) == "reproduced_smaller"
    assert CENTRAL.evaluate(_table(diffs), "fp32", "paper")["verdict"] == "reproduced_smaller"
