"""ttba: the counting oracle, TtBA's pieces and the ART baselines, each against an
independent reference (a closed-form distance to a linear boundary, the closed-form
k_bridge of a constructed geometry, brute force, the victim's own forward count)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from reprolab.methods.ttba.attack import (
    TtbaParams,
    best_k_ratio,
    search_k_bridge,
    step_k,
    ttba,
)
from reprolab.methods.ttba.baselines import art_classifier, run_art
from reprolab.methods.ttba.claims import NearTarget
from reprolab.methods.ttba.oracle import BudgetExhausted, HardLabelOracle


class CountingLinear(nn.Module):
    """Linear model: class 1 iff ``w . x + b > 0``, else class 0 (a third class, never
    predicted, keeps ART's attacks off their untested two-class path); counts the rows
    it classifies."""

    def __init__(self, w: torch.Tensor, b: float) -> None:
        super().__init__()
        self.lin = nn.Linear(len(w), 3)
        with torch.no_grad():
            self.lin.weight.copy_(torch.stack([torch.zeros_like(w), w, torch.zeros_like(w)]))
            self.lin.bias.copy_(torch.tensor([0.0, b, -1e4]))
        self.rows = 0

    def forward(self, x):
        self.rows += len(x)
        return self.lin(x)


def linear_case(d: int = 40, distance: float = 0.3, seed: int = 0):
    """x0 in the middle of the box, a boundary at a known L2 distance whose closest
    point lies inside [0, 1]^d (so clipping plays no part)."""
    gen = torch.Generator().manual_seed(seed)
    w = torch.randn(d, generator=gen)
    x0 = 0.5 + 0.05 * (torch.rand(d, generator=gen) - 0.5)
    b = float(-(w @ x0) - distance * w.norm())
    closed_form = float(abs(w @ x0 + b) / w.norm())
    assert closed_form == pytest.approx(distance, rel=1e-5)
    assert ((x0 + distance * w / w.norm()) - 0.5).abs().max() < 0.5  # inside the box
    return CountingLinear(w, b).eval(), x0, closed_form


def test_oracle_counts_refuses_over_budget_and_records_distances():
    model, x0, dist = linear_case()
    oracle = HardLabelOracle(model, 3)
    oracle.reset(x0, 0, budget=10)
    gen = torch.Generator().manual_seed(1)
    batch = x0 + 0.5 * torch.randn(6, len(x0), generator=gen)
    labels = oracle.labels(torch.cat([x0[None], batch]))  # x0 itself is not counted
    assert oracle.count == 6 and model.rows == 6 and labels[0] == 0
    clipped = batch.clamp(0, 1)
    with torch.no_grad():
        expected = model.lin(clipped).argmax(1)
    assert torch.equal(labels[1:], expected)
    ref = torch.where(expected == 1, (clipped - x0).norm(dim=1), torch.tensor(math.inf))
    np.testing.assert_allclose(oracle.trace, ref.numpy(), rtol=1e-6)
    with pytest.raises(BudgetExhausted):
        oracle.labels(batch[:5])  # 6 + 5 > 10: refused whole, nothing counted
    assert oracle.count == 6 and len(oracle.trace) == 6
    oracle.labels(batch[:4])
    assert oracle.count == 10
    # best-so-far L2 at a budget: brute-force running minimum
    trace = np.array(oracle.trace)
    for b in (1, 3, 6, 10, 50):
        assert oracle.best_l2_at([b])[0] == trace[: min(b, len(trace))].min()


def test_ttba_approaches_the_closed_form_distance_of_a_linear_boundary():
    model, x0, dist = linear_case(d=20, distance=0.3)
    oracle = HardLabelOracle(model, 3)
    oracle.reset(x0, 0, budget=3000)
    trace = ttba(oracle, TtbaParams(), torch.Generator().manual_seed(0))
    best = oracle.best_l2_at([250, 1000, 3000])
    assert oracle.count <= 3000 and trace.iterations >= 10
    # no adversarial point can beat the true distance; TtBA closes in on it
    assert min(oracle.trace) >= dist - 1e-5
    assert best[2] <= 1.01 * dist
    assert best[2] < best[1] < best[0]


@pytest.mark.parametrize(("a", "b"), [(0.1, 0.5), (0.2, 0.5), (0.05, 0.3), (0.3, 0.6)])
def test_k_bridge_bisection_finds_the_closed_form_k(a, b):
    """Flat boundary n . (x - x0) >= c, current direction v with n . v = b (so the
    current point x0 + r v, r = c / b, is on it) and an estimated normal n_hat with
    n . n_hat = a, n_hat . v = a b. Then x0 + r u(k) is adversarial iff n . u(k) >= b,
    whose nonzero root is k = 2ab(1 - b^2) / (2ab(1 - b^2) + b^2 - a^2)."""
    d, c = 6, 0.4
    e = torch.eye(d)
    n = e[0]
    v = b * e[0] + math.sqrt(1 - b * b) * e[1]
    n_hat = a * e[0] + math.sqrt(1 - a * a) * e[2]
    x0 = torch.full((d,), 0.5)
    r = c / b

    def is_adv(x):
        return float(n @ (x - x0)) >= c - 1e-12

    k = search_k_bridge(is_adv, x0, r, v, n_hat, tol=1e-4)
    closed = 2 * a * b * (1 - b * b) / (2 * a * b * (1 - b * b) + b * b - a * a)
    assert 0 < closed < 1
    assert k == pytest.approx(closed, abs=2e-4)

    # best-k diagnostic: the grid point with the smallest boundary distance c / (n . u(k))
    def predict(x):
        return ((x - x0) @ n >= c - 1e-12).long()

    ratio = best_k_ratio(predict, 0, x0, r, v, n_hat, k, grid_step=0.01, tol=1e-6)
    grid = np.arange(1, int(k / 0.01) + 1) * 0.01
    cos = (grid * a + (1 - grid) * b) / np.sqrt(
        grid**2 + (1 - grid) ** 2 + 2 * grid * (1 - grid) * a * b
    )
    assert ratio * k == pytest.approx(grid[np.argmax(cos)], abs=1e-9)


def test_step_rule_is_the_released_piecewise_two_thirds():
    assert step_k(0.05) == pytest.approx(0.045)
    assert step_k(0.6) == pytest.approx(0.4)
    for edge in (0.1, 0.2):  # continuous at both ends of the interpolation
        assert step_k(edge - 1e-9) == pytest.approx(step_k(edge + 1e-9), abs=1e-6)


def test_art_and_ttba_share_victim_and_budget_and_stay_within_it():
    """Same oracle, same image, same budget: every row ART predicts reaches the victim
    through the oracle (the victim's own row count agrees), labels only."""
    model, x0, dist = linear_case(d=40, distance=0.3, seed=2)
    oracle = HardLabelOracle(model, 3)
    classifier = art_classifier(oracle, len(x0))
    oracle.reset(x0, 0, budget=5)
    probs = classifier.predict(np.random.default_rng(0).random((3, len(x0)), dtype=np.float32))
    assert set(np.unique(probs)) <= {0.0, 1.0} and (probs.sum(1) == 1).all()  # one-hot labels
    budget = 400
    for name in ("ttba", "hsja", "signopt"):
        oracle.reset(x0, 0, budget)
        model.rows = 0
        if name == "ttba":
            ttba(oracle, TtbaParams(), torch.Generator().manual_seed(0))
        else:
            run_art(name, oracle, classifier, seed=0)
        assert 0 < oracle.count <= budget, name
        assert model.rows == oracle.count == len(oracle.trace), name
        found = oracle.best_l2_at([budget])[0]
        assert dist - 1e-5 <= found < 0.5 * math.sqrt(len(x0)), name


def test_art_runs_repeat_exactly_with_the_same_seed():
    """HopSkipJump draws its first random image from an unseeded RandomState(): without
    the seeding wrapper two runs would differ."""
    model, x0, _ = linear_case(d=20, distance=0.4, seed=3)
    oracle = HardLabelOracle(model, 3)
    classifier = art_classifier(oracle, len(x0))
    traces = []
    for seed in (5, 5, 6):
        oracle.reset(x0, 0, 250)
        run_art("hsja", oracle, classifier, seed)
        traces.append(list(oracle.trace))
    assert traces[0] == traces[1]
    assert traces[0] != traces[2]


def test_one_victim_per_task_and_seed_is_attacked_by_every_attack(tmp_path: Path):
    """Only the victim units train; every attack unit of (task, seed) evaluates that
    victim; the victim reports its accuracy and no attack metric, the baselines no
    best-k diagnostic."""
    from reprolab import config, registry
    from reprolab.contract import Run, Unit
    from tests.contract.test_contract import build_assets

    spec = registry.get("ttba")
    hooks = registry.hooks("ttba")
    cfg = config.method_config("ttba", "smoke", spec.test_overrides, "test")
    seeds = (0, 1)
    run = Run(spec=spec, cfg=cfg, seeds=seeds, root=tmp_path, assets=build_assets(spec, tmp_path))
    data, _ = hooks.prepare(run, tmp_path / "raw")
    units = hooks.units(run, sorted(data))
    trained = [u for u in units if spec.trains(u)]
    assert trained == [Unit("digits", "victim", 0), Unit("digits", "victim", 1)]
    for unit in units:
        assert spec.source_unit(unit) == Unit(unit.task, "victim", unit.seed)
    assert {u.variant for u in units} == {"victim", "ttba", "hsja", "signopt"}

    victim = trained[0]
    result = hooks.train_unit(run, victim, data["digits"], tmp_path / victim.id, lambda m: None)
    again = hooks.train_unit(run, victim, data["digits"], tmp_path / "again", lambda m: None)
    assert all(torch.equal(result.state[k], again.state[k]) for k in result.state)
    assert result.history and {"train_loss", "val_acc"} <= set(result.history[-1])
    model = hooks.restore(run, victim, data["digits"], result.state)
    own = hooks.evaluate_unit(run, model, victim, data["digits"], result.history)
    assert set(spec.variant_metrics("victim")) <= set(own)
    assert not any(k.startswith(("median_l2", "k_ratio", "l2_at_q")) for k in own)
    hsja = hooks.evaluate_unit(
        run, model, victim.with_variant("hsja"), data["digits"], result.history
    )
    assert "median_l2" in hsja and not any(k.startswith("k_") for k in hsja)
    assert "accuracy" not in hsja


def test_variant_selection_needs_the_victim_and_the_method():
    from reprolab import config

    cfg = config.method_config("ttba", "smoke", {"variants": ["victim", "ttba"]}, "t")
    assert cfg.variants == ["victim", "ttba"]
    with pytest.raises(config.ConfigError, match="evaluates the trained 'victim'"):
        config.method_config("ttba", "smoke", {"variants": ["ttba", "hsja"]}, "t")
    with pytest.raises(config.ConfigError, match="'ttba' is not selected"):
        config.method_config("ttba", "smoke", {"variants": ["victim", "hsja"]}, "t")


def _ratio_table(values, counts=None):
    rows = []
    for seed, value in enumerate(values):
        rows.append(("t", "ttba", seed, "fp32", "k_ratio_median", value))
        n = 10 if counts is None else counts[seed]
        rows.append(("t", "ttba", seed, "fp32", "k_ratio_n", n))
    return pd.DataFrame(rows, columns=["task", "variant", "seed", "precision", "metric", "value"])


def test_near_target_check_verdicts():
    check = NearTarget("ttba", target=2 / 3, tolerance=0.1, count_metric="k_ratio_n")

    def verdict(values, counts=None):
        return check.evaluate(_ratio_table(values, counts), "k_ratio_median").verdict

    assert verdict([0.66, 0.67, 0.68, 0.65]) == "reproduced"
    assert verdict([0.40, 0.41, 0.42, 0.43]) == "not_reproduced"
    assert verdict([0.50, 0.60, 0.70, 0.55]) == "inconclusive"
    # units with nothing measured are left out: only the three ~0.67 values count
    v = check.evaluate(_ratio_table([0.66, 0.67, 0.68, 0.0], counts=[5, 5, 5, 0]), "k_ratio_median")
    assert v.verdict == "reproduced" and v.measured["n"] == 3
