"""dp_noise verdict rules on synthetic metric tables (rules fixed before any run; the
central claim's, against the better baseline, amended before its run)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import yaml

from reprolab import config
from reprolab.contract import Run
from reprolab.evidence.judging.claims import IntervalCheck, PairedDifference, Where
from reprolab.methods.dp_noise import SPEC, method
from reprolab.methods.dp_noise.claims import (
    BASELINES,
    CLAIMS,
    BeatsBetterBaseline,
    BelowBetterBaseline,
    GapShrinks,
    gains,
)
from reprolab.methods.dp_noise.config import DPNoiseConfig, task_name
from tests.conftest import ROOT


def table(eps: dict[tuple[int, str], float], seeds=range(3), spread=1e-4) -> pd.DataFrame:
    """eps_ref per (k, variant) at sigma/s = 5, with a little seed noise on the optimised
    variants; the baselines are seed-free (one row each), as the hooks make them."""
    rng = np.random.default_rng(0)
    rows = []
    for (k, variant), value in eps.items():
        seeded = variant.startswith("optimized")
        for seed in seeds if seeded else (None,):
            noise = spread * rng.standard_normal() if seeded else 0.0
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
    assert by_id["vs_better_k10"] == Where(
        IntervalCheck(
            BelowBetterBaseline("optimized", ("gaussian", "laplace")),
            bound=0.0,
            higher_is_better=False,
        ),
        sigma=5.0,
        k=10,
    )


def central():
    (claim,) = [c for c in CLAIMS if c.central]
    return claim


def test_the_central_claim_is_against_the_better_baseline_on_the_papers_scale():
    claim = central()
    assert claim.id == "vs_better_k10"
    assert claim.paper_value == "eps 2.66 vs 2.83 (Laplace) and 2.92 (Gaussian)"
    assert claim.source == "card"
    assert claim.effect_basis.startswith("paper:") and claim.effect_from_paper
    assert claim.effect == pytest.approx(2.83 - 2.66)  # the paper's gap to the better baseline
    assert claim.metric == "eps_ref"
    assert set(claim.check.variants()) == {"optimized", *BASELINES}


def test_beating_the_gaussian_but_not_the_laplace_is_not_reproduced():
    """The central claim decides against the better baseline: a noise between Laplace
    (2.83) and Gaussian (2.92) at k = 10 is not reproduced, though the Gaussian-only
    comparison calls it reproduced."""
    between = dict(PAPER_LIKE) | {(10, "optimized"): 2.87}
    result = central().evaluate(table(between), "fp32", "paper")
    assert result["verdict"] == "not_reproduced"
    assert result["measured"]["value"] == pytest.approx(2.87 - 2.83, abs=1e-3)
    assert result["measured"]["better_baseline"] == "laplace"
    # the Gaussian-only comparison (the old central claim) clears 0 on the claimed side
    vs_gaussian = next(c for c in CLAIMS if c.id == "vs_gaussian_k10")
    assert vs_gaussian.check.evaluate(table(between), "eps_ref").verdict == "reproduced"


def test_the_laplace_itself_is_not_a_reproduction():
    """The amended run's k = 10 noise (2.8262 vs Laplace 2.8268): below the better baseline
    by far less than the paper's 0.17 is 'reproduced, smaller', not 'reproduced'; level
    with it (within seed noise) is not reproduced either."""
    laplace_like = dict(PAPER_LIKE) | {(10, "optimized"): 2.8262}
    result = central().evaluate(table(laplace_like, spread=1e-5), "fp32", "paper")
    assert result["verdict"] == "reproduced_smaller"
    assert result["measured"]["ci_high"] < 0 and result["measured"]["ci_low"] > -0.17
    level = dict(PAPER_LIKE) | {(10, "optimized"): 2.83}
    result = central().evaluate(table(level, spread=0.01), "fp32", "paper")
    assert result["verdict"] not in ("reproduced", "reproduced_smaller")


def test_beating_both_by_the_papers_margin_is_reproduced():
    better = dict(PAPER_LIKE) | {(10, "optimized"): 2.60}
    result = central().evaluate(table(better), "fp32", "paper")
    assert result["verdict"] == "reproduced"
    assert result["measured"]["value"] == pytest.approx(2.60 - 2.83, abs=1e-3)
    # against the better baseline per task: where the Gaussian is the better one, it is
    gaussian_better = dict(better) | {(10, "laplace"): 3.1}
    result = central().evaluate(table(gaussian_better), "fp32", "paper")
    assert result["measured"]["value"] == pytest.approx(2.60 - 2.92, abs=1e-3)
    assert result["measured"]["better_baseline"] == "gaussian"


def test_the_central_check_reads_only_its_setting_and_needs_both_baselines():
    missing_k10 = {key: v for key, v in PAPER_LIKE.items() if key[0] != 10}
    assert central().evaluate(table(missing_k10), "fp32", "paper")["verdict"] == "inconclusive"
    no_laplace = {key: v for key, v in PAPER_LIKE.items() if key[1] != "laplace"}
    result = central().evaluate(table(no_laplace), "fp32", "paper")
    assert result["verdict"] == "inconclusive" and result["measured"].get("not_tested")


def paper_section() -> dict:
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    return params["methods"]["dp_noise"]["paper"] or {}


def test_the_paper_profile_runs_algorithm_3_from_the_gaussian(tmp_path):
    """params.yaml's paper section over the code defaults: the method variant is the run
    from the discretised Gaussian (Algorithm 2) at every k, the Laplace start only its own
    variant at k = 3 and 10, on the grid chosen from cost (Delta 0.1, N 1000, r 0.9999)."""
    cfg = config.method_config("dp_noise", "paper", paper_section(), "params.yaml")
    assert (cfg.bins_per_sensitivity, cfg.n_bins, cfg.tail_ratio) == (10, 1000, 0.9999)
    assert cfg.n_bins / cfg.bins_per_sensitivity == 100  # the paper's width, 20 sigma
    assert cfg.iterations == 2000 and cfg.delta == 1e-6 and cfg.sigma_ratios == [5.0]
    assert 10 in cfg.compositions
    assert method.STARTS == {"optimized": "gaussian", "optimized_from_laplace": "laplace"}
    assert not hasattr(cfg, "starts")  # no selection between starts any more
    run = Run(spec=SPEC, cfg=cfg, seeds=(0, 1), root=tmp_path)
    variants = {v.name for v in SPEC.variants} if cfg.variants is None else set(cfg.variants)
    assert "optimized" in variants
    units = method.units(run, sorted(cfg.tasks()))
    ks = sorted(cfg.compositions)
    assert sorted({u.param["k"] for u in units if u.variant == "optimized"}) == ks
    from_laplace = {u.param["k"] for u in units if u.variant == "optimized_from_laplace"}
    assert from_laplace == {3, 10}


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
    full = dict(PAPER_LIKE) | {(10, "optimized_from_laplace"): 2.8262}
    results = [c.evaluate(table(full), "fp32", "paper") for c in CLAIMS]
    verdicts = {r["id"]: r["verdict"] for r in results}
    assert verdicts == {
        "vs_better_k10": "reproduced",  # 2.66 vs 2.83: the paper's own effect
        "from_laplace_k10": "reproduced_smaller",
        "vs_gaussian_k10": "reproduced",
        "vs_laplace_k10": "reproduced",
        "moderate_regime": "reproduced",
        "small_k": "inconclusive",
        "gap_shrinks": "reproduced",
    }
