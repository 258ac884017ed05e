"""The engine's full rule for a claim (seed means, the claim's t or sign rule, the plan's
looks: bench/bench_sequential.py's grid), on a reduced grid: it keeps alpha where the
rule fits the shape, decides every run as the engine's own verdict path does, and the
rule before it (pairs pooled as replicates) is caught exceeding alpha; a committed claim's
own shape (a bootstrap of its per-seed values) is read from its committed metrics."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_sequential.py"
#: runs per cell; Monte-Carlo s.e. of an error rate of 0.05: 0.0034
RUNS = 4000
ALPHA = 0.05


def _bench():
    name = "bench_sequential"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while defining
    spec.loader.exec_module(module)
    return module


bench = _bench()
LIMIT = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / RUNS)


@pytest.mark.parametrize(
    "cell",
    [
        bench.normal_cell(7, 0.9),
        bench.shape_cell("bimodal_30", "sign"),
        bench.shape_cell("lognormal", "sign"),
        bench.normal_cell(1, 0.0),
    ],
    ids=lambda c: c.name,
)
def test_the_engine_rule_keeps_alpha(cell):
    row = bench.run_cell(cell, RUNS, check_runs=40)
    assert row["engine_check"]["mismatches"] == 0, row["engine_check"]
    assert row["mc_se"] == pytest.approx(math.sqrt(ALPHA * (1 - ALPHA) / RUNS))
    assert row["error"] <= LIMIT, row
    assert row["ok"]


def test_pooled_pairs_exceed_alpha():
    """Seven correlated pairs of a seed counted as seven replicates (the engine's rule
    before unit_means): the interval understates the sd of their mean and the error
    leaves alpha far behind, so the check above can fail."""
    row = bench.run_cell(bench.normal_cell(7, 0.5, rule=bench.POOLED), RUNS, check_runs=20)
    assert row["engine_check"]["mismatches"] == 0
    assert row["error"] > LIMIT, row
    assert not row["ok"]


def test_the_t_rule_misstates_a_skewed_mean():
    """The t rule on one lognormal value per seed (true mean at the bound) exceeds
    alpha: what the sign rule is for."""
    row = bench.run_cell(bench.shape_cell("lognormal", "t"), RUNS, check_runs=0)
    assert row["error"] > LIMIT
    assert row["error_below"] > row["error_above"]


@pytest.mark.parametrize(
    "cell",
    [
        bench.shape_cell("lognormal", "sign"),
        bench.normal_cell(3, 0.5),
        bench.normal_cell(3, 0.5, "pooled_t"),
    ],
    ids=lambda c: c.name,
)
def test_decisions_match_the_engine_where_runs_decide(cell):
    """Runs with the true value off the bound, most of them decided at some look: the
    vectorised simulation gives the verdict and the look the engine's verdict path
    (unit_means, rule_interval, Verdict.interval, apply_evidence_rules) gives."""
    import numpy as np

    values = cell.draw(np.random.default_rng(11), 80)
    for shift in (0.4, -0.7):
        check = bench.check_against_engine(values + shift, cell.plan, cell.rule)
        assert check["mismatches"] == 0, check
        assert check["decided"] >= 20, check


def test_vectorised_intervals_match_the_engine():
    """The t multiplier and the median interval's order statistic the simulation uses
    give the engine's intervals on a sample."""
    import numpy as np

    from reprolab.evidence.judging.stats import rule_interval

    rng = np.random.default_rng(3)
    for n in (3, 5, 6, 10, 15, 20):
        x = rng.lognormal(size=(3, n))
        for rule in ("t", "sign"):
            low, high = bench.intervals(x, rule, 0.99)
            for i in range(3):
                iv = rule_interval(x[i], rule, 0.99)
                assert low[i] == pytest.approx(iv.low, rel=1e-12, abs=1e-12)
                assert high[i] == pytest.approx(iv.high, rel=1e-12, abs=1e-12)


CLAIM = "semiclipped/beats_tvn"


def test_a_claims_own_shape_is_its_seed_values():
    """The own-shape cell of a committed claim: its check evaluated seed by seed on the
    committed metrics gives one value per seed whose mean is the claim's committed
    value (the t rule's mean of seed means), and the runs draw those values centred on
    the bound."""
    import json

    import numpy as np

    cells, skipped = bench.own_shape_cells(only={CLAIM})
    assert not skipped and [c.name for c in cells] == [f"{CLAIM} own shape"]
    cell = cells[0]
    info = dict(cell.info)
    slug, claim_id = CLAIM.split("/")
    entries = json.loads((bench.ROOT / "docs" / "results" / slug / "claims.json").read_text())
    measured = next(e for e in entries if e["id"] == claim_id)["measured"]
    assert info["n_values"] == len(measured["seeds"])
    assert np.mean(info["seed_values"]) == pytest.approx(measured["value"], rel=1e-9)
    draws = cell.draw(np.random.default_rng(0), 200)
    assert draws.shape == (200, cell.plan.max_seeds, 1)
    centred = np.asarray(info["seed_values"]) - info["centre"]
    assert set(np.unique(draws)) <= set(centred)
    assert centred.mean() == pytest.approx(0.0, abs=1e-12)


def test_a_claims_own_shape_runs_the_engine_rule():
    """Its plan and rule on a bootstrap of its seed values decide every replayed run as
    the engine does, and its error lies within what the same bootstrap gives five normal
    seeds (a bootstrap of five values errs above alpha even for normal seeds: the
    reference the report reads a claim's own shape against)."""
    (cell,), _ = bench.own_shape_cells(only={CLAIM})
    row = bench.run_cell(cell, 2000, check_runs=40)
    assert row["engine_check"]["mismatches"] == 0, row["engine_check"]
    ref = bench.normal_sample_reference(
        row["n_values"], cell.plan, cell.rule, samples=100, runs=1000
    )
    assert ref["median"] > ALPHA
    assert row["error"] <= ref["p95"], (row["error"], ref)
