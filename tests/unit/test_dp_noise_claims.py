"""dp_noise verdict rules on synthetic metric tables (rules fixed before any run)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from reprolab.contract import Run
from reprolab.core.claims import IntervalCheck, PairedDifference, Where
from reprolab.methods.dp_noise import SPEC, method
from reprolab.methods.dp_noise.claims import CLAIMS, BeatsBetterBaseline, GapShrinks, gains
from reprolab.methods.dp_noise.config import DPNoiseConfig, task_name


def table(eps: dict[tuple[int, str], float], seeds=range(3), spread=1e-4) -> pd.DataFrame:
    """eps_ref per (k, variant) at sigma/s = 5, with a little seed noise on 'optimized';
    the baselines are seed-free (one row each), as the hooks make them."""
    rng = np.random.default_rng(0)
    rows = []
    for (k, variant), value in eps.items():
        for seed in seeds if variant == "optimized" else (None,):
            noise = spread * rng.standard_normal() if variant == "optimized" else 0.0
            rows.append(
                (task_name(5.0, k), variant, seed, 5.0, k, "fp32", "eps_ref", value + noise)
            )
    columns = ["task", "variant", "seed", "sigma", "k", "precision", "metric", "value"]
    out = pd.DataFrame(rows, columns=columns)
    out["seed"] = out["seed"].astype("Int64")
    return out


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


def test_tasks_and_seed_free_units(tmp_path):
    cfg = DPNoiseConfig(compositions=[40, 10])
    assert cfg.tasks() == {
        "sigma5_k10": {"sigma": 5.0, "k": 10},
        "sigma5_k40": {"sigma": 5.0, "k": 40},
    }
    units = method.units(Run(spec=SPEC, cfg=cfg, seeds=(0, 1), root=tmp_path), sorted(cfg.tasks()))
    by_variant = {
        v: [u for u in units if u.variant == v] for v in ("optimized", "gaussian", "laplace")
    }
    assert all(u.seed is None for u in by_variant["gaussian"] + by_variant["laplace"])
    assert len(by_variant["gaussian"]) == 2  # once per task, not per seed
    assert sorted(u.seed for u in by_variant["optimized"]) == [0, 0, 1, 1]
    assert all(u.param == cfg.tasks()[u.task] for u in units)
    # without jitter every seed starts from the same point: the optimiser is seed-free too
    still = DPNoiseConfig(compositions=[10], init_jitter=0.0, variants=["optimized", "gaussian"])
    still_run = Run(spec=SPEC, cfg=still, seeds=(0, 1), root=tmp_path)
    assert [(u.variant, u.seed) for u in method.units(still_run, ["sigma5_k10"])] == [
        ("optimized", None),
        ("gaussian", None),
    ]


def test_gain_is_relative_to_the_better_baseline():
    g = gains(table(PAPER_LIKE, spread=0.0), "eps_ref", "optimized", ("gaussian", "laplace"))
    at10 = g[g.k == 10].gain.iloc[0]
    assert at10 == pytest.approx(1 - 2.66 / 2.83)


def test_the_k10_claims_are_core_checks_at_one_setting():
    by_id = {c.id: c.check for c in CLAIMS}
    assert by_id["vs_gaussian_k10"] == Where(
        PairedDifference("optimized", "gaussian", higher_is_better=False), sigma=5.0, k=10
    )


def test_at_task_verdicts():
    check = Where(
        PairedDifference("optimized", "gaussian", higher_is_better=False), sigma=5.0, k=10
    )
    assert check.evaluate(table(PAPER_LIKE), "eps_ref").verdict == "reproduced"
    worse = dict(PAPER_LIKE) | {(10, "optimized"): 3.0}
    v = check.evaluate(table(worse), "eps_ref")
    assert v.verdict == "not_reproduced" and v.measured["value"] == pytest.approx(0.08, abs=1e-3)
    noisy = dict(PAPER_LIKE) | {(10, "optimized"): 2.92}
    assert check.evaluate(table(noisy, spread=0.05), "eps_ref").verdict == "inconclusive"
    at7 = Where(PairedDifference("optimized", "gaussian", higher_is_better=False), sigma=5.0, k=7)
    missing = at7.evaluate(table(PAPER_LIKE), "eps_ref")
    assert missing.verdict == "inconclusive" and math.isnan(missing.measured["value"])


def test_regime_verdicts():
    moderate = BeatsBetterBaseline("optimized", ("gaussian", "laplace"), k_min=10, k_max=40)
    assert moderate.evaluate(table(PAPER_LIKE), "eps_ref").verdict == "reproduced"
    lose40 = dict(PAPER_LIKE) | {(40, "optimized"): 6.5}
    assert moderate.evaluate(table(lose40), "eps_ref").verdict == "not_reproduced"
    small = BeatsBetterBaseline("optimized", ("gaussian", "laplace"), k_min=1, k_max=9)
    # a tie with Laplace (within seed noise) is not "better": inconclusive
    assert small.evaluate(table(PAPER_LIKE), "eps_ref").verdict == "inconclusive"
    none = BeatsBetterBaseline("optimized", ("gaussian",), k_min=50, k_max=60)
    assert none.evaluate(table(PAPER_LIKE), "eps_ref").verdict == "inconclusive"


def test_gap_shrinks_verdicts():
    check = IntervalCheck(GapShrinks("optimized", ("gaussian", "laplace"), k_ref=10, k_large=100))
    assert check.evaluate(table(PAPER_LIKE), "eps_ref").verdict == "reproduced"
    grows = dict(PAPER_LIKE) | {(200, "optimized"): 15.0}
    assert check.evaluate(table(grows), "eps_ref").verdict == "not_reproduced"
    no_large = {key: v for key, v in PAPER_LIKE.items() if key[0] != 200}
    assert check.evaluate(table(no_large), "eps_ref").verdict == "inconclusive"


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
