"""ff_graphs: metrics against hand-computed values and Monte Carlo; family constructors."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from reprolab.methods.ff_graphs import claims, graphs


def edges(n, pairs):
    adj = np.zeros((n, n), dtype=np.uint8)
    for j, i in pairs:
        adj[j, i] = 1
    return adj


def test_three_node_line_by_hand():
    adj = graphs.line(3)
    # forward walk: two Geometric(1/2) waits, P(T > t) = (1 + t) / 2^t
    s = graphs.survival(adj, 8)[:, 0]
    assert np.allclose(s, [(1 + t) / 2**t for t in range(9)])
    # L1 distance 2 (1 + t) / 2^t < 0.5 first at t = 5 (6/32); at t = 4 it is 10/16
    assert graphs.mixing_time(adj, eps=0.5) == 5
    assert graphs.hitting_times(adj)[0] == pytest.approx(4.0)
    # Delta rows: sink {1, 2}, node 1 {0, 1}, node 0 {0}: phi = (1, 1/2, 1/2)
    assert np.allclose(graphs.node_fidelity(adj), [1.0, 0.5, 0.5])
    m = graphs.metrics(adj)
    assert m["fidelity_raw"] == pytest.approx(0.5) and m["fidelity"] == pytest.approx(1.5)


def test_three_node_full_by_hand():
    adj = graphs.full(3)
    assert (adj == edges(3, [(0, 1), (0, 2), (1, 2)])).all()
    # h1 = 2; h0 = (1 + h1 / 3) / (2 / 3) = 2.5
    assert graphs.hitting_times(adj)[:2] == pytest.approx([2.5, 2.0])
    # Delta^1 row of the sink is uniform 1/3; node 1 later gets 1/6 + 1/9 < 1/3
    assert graphs.minimax_fidelity(adj) == pytest.approx(1 / 3)


def test_four_node_line_by_hand():
    adj = graphs.line(4)
    assert graphs.hitting_times(adj)[0] == pytest.approx(6.0)
    # [Delta^t]_{3,1} = C(t, 2) / 2^t, largest 3/8 at t = 3 and 4
    phi = graphs.node_fidelity(adj)
    assert phi[1] == pytest.approx(3 / 8) and phi[2] == pytest.approx(0.5)
    assert graphs.minimax_fidelity(adj) == pytest.approx(3 / 8)
    # P(T > t) for a sum of three Geometric(1/2): P(Bin(t, 1/2) <= 2)
    s = graphs.survival(adj, 10)[:, 0]
    ref = [sum(math.comb(t, k) for k in range(3)) / 2**t for t in range(11)]
    assert np.allclose(s, ref)


def test_four_node_diamond_by_hand():
    # 0 -> 1, 0 -> 2, 1 -> 3, 2 -> 3: sink averages {1, 2, 3}
    adj = edges(4, [(0, 1), (0, 2), (1, 3), (2, 3)])
    assert graphs.node_fidelity(adj)[1:] == pytest.approx([1 / 3, 1 / 3, 1 / 3])
    # node 1 -> {1, 3}: h = 2; node 0 -> {0, 1, 2}: h0 = (1 + (2 + 2) / 3) / (2 / 3) = 3.5
    assert graphs.hitting_times(adj)[0] == pytest.approx(3.5)


def test_mixing_matches_monte_carlo():
    adj = graphs.random_budgeted(12, seed=3)
    walks = 20_000
    sims = graphs.simulate_hitting(adj, 0, walks, seed=1)
    h = graphs.hitting_times(adj)[0]
    assert abs(sims.mean() - h) < 5 * sims.std() / math.sqrt(walks)
    s = graphs.survival(adj, 40)[:, 0]
    for t in (2, 5, 10, 20):
        p = s[t]
        assert abs((sims > t).mean() - p) < 5 * math.sqrt(p * (1 - p) / walks) + 1e-9
    # the mixing time is where twice the simulated tail first drops below eps
    emp = next(t for t in range(200) if 2 * (sims > t).mean() < 0.5)
    assert abs(emp - graphs.mixing_time(adj, 0.5)) <= 1


def test_fidelity_matches_matrix_powers():
    adj = graphs.dilated(9)
    d = graphs.diffusion_matrix(adj)
    powers = [np.linalg.matrix_power(d, t)[-1] for t in range(1, 400)]
    ref = np.max(powers, axis=0)
    ref[0] = 1.0  # the source's supremum is the limit 1
    assert np.allclose(graphs.node_fidelity(adj), ref, atol=1e-9)


@pytest.mark.parametrize("n", [5, 16, 33])
def test_families_are_dags_with_their_budgets(n):
    w = 3
    for family in graphs.FAMILIES:
        adj = graphs.build(family, n, seed=0, w=w, searched=(0.1, 0.3))
        assert adj.shape == (n, n)
        assert not np.tril(adj).any(), family  # edges go forward only
        assert adj[np.arange(n - 1), np.arange(1, n)].all(), family  # i -> i + 1 kept
        indeg = adj.sum(axis=0)
        assert indeg[0] == 0 and (indeg[1:] >= 1).all()
    assert graphs.line(n).sum() == n - 1
    assert graphs.full(n).sum() == n * (n - 1) // 2
    win = graphs.window(n, w).sum(axis=0)
    assert (win == np.minimum(np.arange(n), w)).all()
    dil = graphs.dilated(n)
    j, i = np.nonzero(dil)
    d = i - j
    assert ((d & (d - 1)) == 0).all()  # power-of-two offsets only
    assert (dil.sum(axis=0) == [0, *[int(math.log2(k)) + 1 for k in range(1, n)]]).all()
    rnd = graphs.random_budgeted(n, seed=5)
    assert (rnd.sum(axis=0) == np.minimum(np.arange(n), graphs.budget(n))).all()
    assert (rnd == graphs.random_budgeted(n, seed=5)).all()


def test_asymptotics_line_and_full():
    ns = [16, 32, 64, 128]
    line = [graphs.mixing_time(graphs.line(n)) for n in ns]
    full = [graphs.mixing_time(graphs.full(n)) for n in ns]
    assert claims.loglog_slope(ns, line) > 0.9
    assert claims.loglog_slope(ns, full) < 0.3
    # fully connected: every node gets exactly 1/n from the sink at t = 1
    assert graphs.minimax_fidelity(graphs.full(32)) == pytest.approx(1 / 32)


def test_metrics_reject_bad_graphs():
    with pytest.raises(ValueError, match="feedforward"):
        graphs.metrics(edges(3, [(2, 1), (1, 2)]))
    with pytest.raises(ValueError, match="out-edge"):
        graphs.metrics(edges(3, [(0, 2)]))


def test_correlation_check_signs():
    rows = []
    for k, fam in enumerate(["a", "b", "c", "d", "e", "f"]):
        for seed in range(3):
            rows += [
                ("first_token", fam, seed, "fp32", "fidelity", float(k + 1)),
                ("first_token", fam, seed, "fp32", "ood_acc", 0.1 * k + 0.01 * seed),
            ]
    table = pd.DataFrame(rows, columns=["task", "variant", "seed", "precision", "metric", "value"])
    v = claims.Correlation(sign=1).evaluate(table, "fidelity")
    m = v.measured
    assert v.verdict == "reproduced" and m["value"] == pytest.approx(1.0)
    # the exact two-sided permutation p of rho = 1 over 6 points is 2 / 6! (only the
    # identity and the reversed pairing reach |rho| = 1); the check's Monte Carlo p
    # (2000 resamples, sd ~0.0012) lies near it, far below the level's alpha 0.05
    assert m["p_value"] == pytest.approx(2 / math.factorial(6), abs=0.005)
    assert m["p_value"] < 0.05
    assert claims.Correlation(sign=-1).evaluate(table, "fidelity").verdict == "not_reproduced"


def _family_table(with_seeded: bool) -> pd.DataFrame:
    """Metric units at n = 16..128: deterministic line (mixing n, fidelity 0.5), full
    (log2 n, 1/n) and dilated (log2 n + 1, 0.3) families, seed-free; with
    ``with_seeded``, also a seeded searched family (three seeds, values that vary)."""
    rng = np.random.default_rng(0)
    rows = []
    for n in (16, 32, 64, 128):
        task = graphs.metric_task(n)
        for fam, mixing, fidelity in (
            ("line", float(n), 0.5),
            ("full", math.log2(n), 1.0 / n),
            ("dilated", math.log2(n) + 1.0, 0.3),
        ):
            rows.append((task, fam, None, n, "fp32", "mixing_time", mixing))
            rows.append((task, fam, None, n, "fp32", "fidelity", fidelity))
        for seed in range(3) if with_seeded else ():
            mixing = math.log2(n) * (1.0 + 0.1 * rng.standard_normal()) + 0.5 * seed
            rows.append((task, "searched", seed, n, "fp32", "mixing_time", mixing))
            rows.append((task, "searched", seed, n, "fp32", "fidelity", 0.2 + 0.01 * seed))
    columns = ["task", "variant", "seed", "n", "precision", "metric", "value"]
    table = pd.DataFrame(rows, columns=columns)
    table["seed"] = table["seed"].astype("Int64")
    return table


@pytest.mark.parametrize("with_seeded", [False, True])
def test_deterministic_families_are_decided_exactly(with_seeded):
    # line mixing n: log-log slope 1 > 0.8; full mixing log2 n over 16..128: slope
    # ln(7/4) / ln(8) ~ 0.27 < 0.3; full fidelity 1/n: slope -1 < 0.1; dilated: slope
    # below 0.5 and fidelity 0.3 > 1/128 at n = 128; line's fidelity 0.5 is the largest.
    # Each is a property of seed-free values: decided exactly, whatever else was run.
    table = _family_table(with_seeded)
    wanted = (
        "line_best_fidelity",
        "line_worst_mixing",
        "line_linear_mixing",
        "full_log_mixing",
        "full_poor_fidelity",
        "dilated_good_both",
    )
    verdicts = {
        c.id: c.evaluate(table, "fp32", "paper")["verdict"] for c in claims.CLAIMS if c.id in wanted
    }
    assert verdicts == dict.fromkeys(wanted, "reproduced")


@pytest.mark.parametrize("with_seeded", [False, True])
def test_metric_claims_ignore_the_trained_units_parameters(with_seeded):
    """A paper-profile table also holds trained units of graph variants, whose parameter
    ``g`` no metric unit carries (the registered run of 2026-12-07-4e8dd4b9 stopped on
    it: the metric pivot grew a ``g`` level). The metric claims read the same verdicts
    and values with those rows as without them."""
    table = _family_table(with_seeded)
    trained = pd.DataFrame(
        [
            ("majority", fam, 0, g, "fp32", metric, value)
            for fam, gs in (("window", (2, 3)), ("dilated", (3, 4)))
            for g in gs
            for metric, value in (("ood_acc", 0.5 + 0.01 * g), ("fidelity", 0.1 * g))
        ],
        columns=["task", "variant", "seed", "g", "precision", "metric", "value"],
    )
    trained["seed"] = trained["seed"].astype("Int64")
    both = pd.concat([table, trained], ignore_index=True)
    metric_claims = [c for c in claims.CLAIMS if c.id.startswith(("line_", "full_", "dilated_"))]
    assert metric_claims
    for claim in metric_claims:
        alone = claim.evaluate(table, "fp32", "paper")
        mixed = claim.evaluate(both, "fp32", "paper")
        assert mixed["verdict"] == alone["verdict"], claim.id
        # json: NaN (an exact value's missing interval) compares equal to itself; the
        # seeds the table holds are all of its rows' (the trained units' seed too)
        mine, ref = (
            {k: v for k, v in r["measured"].items() if k != "seeds"} for r in (mixed, alone)
        )
        assert json.dumps(mine, sort_keys=True) == json.dumps(ref, sort_keys=True), claim.id
