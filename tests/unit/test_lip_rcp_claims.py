"""lip_rcp's set-size claims on hand-made metrics tables: the central claim compares
lip_rcp with RSCP+ per task and is reproduced only where every task's interval says so
(one task on the other side: not reproduced), whatever the pooled interval says."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from reprolab.evidence.judging.claims import PairedDifference
from reprolab.methods.lip_rcp.claims import CLAIMS, SmallerOnEveryTask

BY_ID = {c.id: c for c in CLAIMS}
TASKS = ("fashion_mnist", "mnist")


def _table(sizes: dict[str, dict[str, float]], seeds=range(6), sd=0.02, seed=0) -> pd.DataFrame:
    """set_size per (task, variant, seed): the given mean per task and variant, plus
    seeded noise of ``sd`` (so intervals have width)."""
    rng = np.random.default_rng(seed)
    rows = []
    for task, by_variant in sizes.items():
        for variant, mean in by_variant.items():
            for s in seeds:
                value = mean + sd * rng.standard_normal()
                rows.append((task, variant, s, "fp32", "set_size", value))
    return pd.DataFrame(rows, columns=["task", "variant", "seed", "precision", "metric", "value"])


def _central(table: pd.DataFrame) -> dict:
    return BY_ID["smaller_sets"].evaluate(table, "fp32", "paper")


def test_central_claim_is_per_task_against_rscp_plus_and_keeps_the_card_fields():
    claim = BY_ID["smaller_sets"]
    assert claim.central and [c.id for c in CLAIMS if c.central] == ["smaller_sets"]
    assert claim.check == SmallerOnEveryTask(method="lip_rcp", baseline="rscp_plus")
    assert claim.paper_value == "set size ~1.72 (lip-rcp); RSCP and successors larger"
    assert claim.source == "card" and claim.effect == 0.1
    assert claim.effect_basis.startswith("margin")
    assert "every task" in claim.statement and "RSCP+" in claim.statement


def test_smaller_on_every_task_is_reproduced():
    table = _table(
        {
            "fashion_mnist": {"lip_rcp": 1.95, "rscp_plus": 3.10},
            "mnist": {"lip_rcp": 1.16, "rscp_plus": 1.90},
        }
    )
    result = _central(table)
    assert result["verdict"] == "reproduced"
    per_task = result["measured"]["per_task"]
    assert [p["task"] for p in per_task] == list(TASKS)
    assert all(p["verdict"] == "reproduced" and p["ci_high"] < 0 for p in per_task)
    assert result["measured"]["test"] == "all_of" and result["measured"]["n"] == 6


def test_one_task_on_the_other_side_is_not_reproduced_though_the_pooled_interval_is():
    """The committed run's pattern: larger on Fashion-MNIST (1.95 vs 1.83), smaller on
    MNIST (1.16 vs 1.60 here, a larger gain): pooled, lip_rcp - baseline is below 0; per
    task, Fashion-MNIST's interval lies above 0, so the claim is not reproduced."""
    table = _table(
        {
            "fashion_mnist": {"lip_rcp": 1.95, "rscp_plus": 1.83},
            "mnist": {"lip_rcp": 1.16, "rscp_plus": 1.60},
        }
    )
    pooled = PairedDifference("lip_rcp", "rscp_plus", higher_is_better=False).evaluate(
        table, "set_size"
    )
    assert pooled.verdict == "reproduced"  # what pooling the tasks would have said
    result = _central(table)
    assert result["verdict"] == "not_reproduced"
    verdicts = {p["task"]: p["verdict"] for p in result["measured"]["per_task"]}
    assert verdicts == {"fashion_mnist": "not_reproduced", "mnist": "reproduced"}
    assert result["measured"]["value"] < 0  # the pooled mean is reported, not used


def test_one_undecided_task_leaves_the_claim_inconclusive():
    table = _table(
        {
            "fashion_mnist": {"lip_rcp": 1.90, "rscp_plus": 1.90},
            "mnist": {"lip_rcp": 1.16, "rscp_plus": 1.90},
        },
        sd=0.2,
    )
    result = _central(table)
    assert result["verdict"] == "inconclusive"
    verdicts = {p["task"]: p["verdict"] for p in result["measured"]["per_task"]}
    assert verdicts["fashion_mnist"] == "inconclusive" and verdicts["mnist"] == "reproduced"


def test_a_task_from_two_seeds_decides_nothing():
    """Each task's interval passes the evidence rules first: two seeds are too few."""
    table = _table(
        {
            "fashion_mnist": {"lip_rcp": 1.0, "rscp_plus": 3.0},
            "mnist": {"lip_rcp": 1.0, "rscp_plus": 3.0},
        },
        seeds=range(2),
    )
    assert _central(table)["verdict"] == "inconclusive"


@pytest.mark.parametrize("baseline", ["rscp_plus", "rscp"])
def test_the_check_reads_its_own_baseline(baseline):
    """Against RSCP+ the sets are smaller on both tasks, against uncorrected RSCP larger
    on one (the committed run's pattern): the same rule reproduces the first and not the
    second; the central claim reads RSCP+."""
    table = _table(
        {
            "fashion_mnist": {"lip_rcp": 1.95, "rscp": 1.83, "rscp_plus": 3.0},
            "mnist": {"lip_rcp": 1.16, "rscp": 1.31, "rscp_plus": 2.0},
        }
    )
    verdict = SmallerOnEveryTask("lip_rcp", baseline).evaluate(table, "set_size")
    expected = {"rscp_plus": "reproduced", "rscp": "not_reproduced"}
    assert verdict.verdict == expected[baseline]
    assert _central(table)["verdict"] == "reproduced"


def test_missing_baseline_is_not_tested():
    table = _table({"mnist": {"lip_rcp": 1.0, "rscp": 2.0}})
    result = _central(table)
    assert result["verdict"] == "inconclusive"
    assert result["measured"]["summary"].startswith("not tested")
