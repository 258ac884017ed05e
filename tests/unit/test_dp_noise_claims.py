"""dp_noise verdict rules on synthetic metric tables (rules fixed before any run)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from reprolab.methods.dp_noise.claims import (
    CLAIMS,
    AtTask,
    BeatsBetterBaseline,
    GapShrinks,
    gains,
    parse_task,
)
from reprolab.methods.dp_noise.config import DPNoiseConfig, task_name


def table(eps: dict[tuple[int, str], float], seeds=range(3), spread=1e-4) -> pd.DataFrame:
    """eps_ref per (k, variant) at sigma/s = 5, with a little seed noise on 'optimized'."""
    rng = np.random.default_rng(0)
    rows = []
    for (k, variant), value in eps.items():
        for seed in seeds:
            noise = spread * rng.standard_normal() if variant == "optimized" else 0.0
            rows.append((task_name(5.0, k), variant, seed, "fp32", "eps_ref", value + noise))
    return pd.DataFrame(rows, columns=["task", "variant", "seed", "precision", "metric", "value"])


PAPER_LIKE = {
    (3, "optimized"): 0.85,
    (3, "gaussian"): 1.51,
    (3, "laplace"): 0.85,
    (10, "optimized"): 2.66,
    (10, "gaussian"): 2.92,
    (10, "laplace"): 2.83,
    (40, "optimized"): 6.30,
    (40, "gaussian"): 6.40,
    (40, "laplace"): 8.49,
    (200, "optimized"): 16.85,
    (200, "gaussian"): 16.86,
    (200, "laplace"): 24.3,
}


def test_task_names_round_trip():
    assert parse_task(task_name(5.0, 10)) == (5.0, 10)
    assert parse_task(task_name(2.5, 200)) == (2.5, 200)
    assert [t for t, _, _ in DPNoiseConfig(compositions=[40, 10]).tasks()] == [
        "sigma5_k10",
        "sigma5_k40",
    ]


def test_gain_is_relative_to_the_better_baseline():
    g = gains(table(PAPER_LIKE, spread=0.0), "eps_ref", "optimized", ("gaussian", "laplace"))
    at10 = g[g.k == 10].gain.iloc[0]
    assert at10 == pytest.approx(1 - 2.66 / 2.83)


def test_at_task_verdicts():
    check = AtTask("optimized", "gaussian", sigma=5.0, k=10)
    assert check.evaluate(table(PAPER_LIKE), "eps_ref")[0] == "reproduced"
    worse = dict(PAPER_LIKE) | {(10, "optimized"): 3.0}
    verdict, measured = check.evaluate(table(worse), "eps_ref")
    assert verdict == "not_reproduced" and measured["value"] == pytest.approx(0.08, abs=1e-3)
    noisy = dict(PAPER_LIKE) | {(10, "optimized"): 2.92}
    assert check.evaluate(table(noisy, spread=0.05), "eps_ref")[0] == "inconclusive"
    missing = AtTask("optimized", "gaussian", sigma=5.0, k=7).evaluate(table(PAPER_LIKE), "eps_ref")
    assert missing[0] == "inconclusive" and math.isnan(missing[1]["value"])


def test_regime_verdicts():
    moderate = BeatsBetterBaseline("optimized", ("gaussian", "laplace"), k_min=10, k_max=40)
    assert moderate.evaluate(table(PAPER_LIKE), "eps_ref")[0] == "reproduced"
    lose40 = dict(PAPER_LIKE) | {(40, "optimized"): 6.5}
    assert moderate.evaluate(table(lose40), "eps_ref")[0] == "not_reproduced"
    small = BeatsBetterBaseline("optimized", ("gaussian", "laplace"), k_min=1, k_max=9)
    # a tie with Laplace (within seed noise) is not "better": inconclusive
    assert small.evaluate(table(PAPER_LIKE), "eps_ref")[0] == "inconclusive"
    none = BeatsBetterBaseline("optimized", ("gaussian",), k_min=50, k_max=60)
    assert none.evaluate(table(PAPER_LIKE), "eps_ref")[0] == "inconclusive"


def test_gap_shrinks_verdicts():
    check = GapShrinks("optimized", ("gaussian", "laplace"), k_ref=10, k_large=100)
    assert check.evaluate(table(PAPER_LIKE), "eps_ref")[0] == "reproduced"
    grows = dict(PAPER_LIKE) | {(200, "optimized"): 15.0}
    assert check.evaluate(table(grows), "eps_ref")[0] == "not_reproduced"
    no_large = {key: v for key, v in PAPER_LIKE.items() if key[0] != 200}
    assert check.evaluate(table(no_large), "eps_ref")[0] == "inconclusive"


def test_claims_evaluate_on_a_full_table():
    results = [c.evaluate(table(PAPER_LIKE), "fp32", "paper") for c in CLAIMS]
    verdicts = {r["id"]: r["verdict"] for r in results}
    assert verdicts == {
        "vs_gaussian_k10": "reproduced",
        "vs_laplace_k10": "reproduced",
        "moderate_regime": "reproduced",
        "small_k": "inconclusive",
        "gap_shrinks": "reproduced",
    }
