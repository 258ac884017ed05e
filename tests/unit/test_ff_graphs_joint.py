"""ff_graphs: the joint test of fidelity and mixing time (cluster-robust OLS by family)
against statsmodels run directly and a hand-written sandwich estimator."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from reprolab.evidence.judging.claims import FIXED
from reprolab.methods.ff_graphs import claims

FAMILIES = ("a", "b", "c", "d", "e")
TASKS = ("t1", "t2")
SEEDS = (0, 1)


def _table(b_fid: float, b_mix: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Trained units of 5 families x 4 graph variants (``g`` 1..4), 2 tasks, 2 seeds:
    log fidelity and log mixing time set per variant (varying within every family, not
    collinear), accuracy = 0.5 + b_fid log fid + b_mix log mix + a family offset + a
    fixed per-unit wobble. Returns the long table and the expected points (per variant:
    the means over tasks and seeds, computed here by hand)."""
    rng = np.random.default_rng(7)
    rows, points = [], []
    for k, fam in enumerate(FAMILIES):
        for g in (1, 2, 3, 4):
            lfid = 0.3 * g - 0.5 * k + 0.2 * ((g * (k + 1)) % 3)
            lmix = np.log(8.0) + 0.25 * g * (1 if k % 2 else -1) + 0.4 * k
            ys = []
            for task in TASKS:
                for seed in SEEDS:
                    y = 0.5 + b_fid * lfid + b_mix * lmix + 0.02 * k + 0.03 * rng.standard_normal()
                    ys.append(y)
                    for metric, value in (
                        ("fidelity", float(np.exp(lfid))),
                        ("mixing_time", float(np.exp(lmix))),
                        ("ood_acc", float(y)),
                    ):
                        rows.append((task, fam, seed, g, "fp32", metric, value))
            points.append((fam, lfid, lmix, float(np.mean(ys))))
    # metric units (not trained): the joint test must leave them out
    rows.append(("graph_n0128", "a", None, None, "fp32", "fidelity", 1.0))
    columns = ["task", "variant", "seed", "g", "precision", "metric", "value"]
    table = pd.DataFrame(rows, columns=columns)
    table["seed"] = table["seed"].astype("Int64")
    return table, pd.DataFrame(points, columns=["family", "lfid", "lmix", "y"])


def _by_hand(points: pd.DataFrame, alpha: float = 0.05):
    """Slopes, cluster-robust standard errors (CR1: G/(G-1) (N-1)/(N-K)) and t(G-1)
    intervals, written out with numpy: the reference the check must agree with."""
    z = lambda v: (v - v.mean()) / v.std(ddof=1)  # noqa: E731
    x = np.column_stack([np.ones(len(points)), z(points.lfid), z(points.lmix)])
    y = points.y.to_numpy()
    bread = np.linalg.inv(x.T @ x)
    beta = bread @ x.T @ y
    u = y - x @ beta
    meat = np.zeros((3, 3))
    for fam in FAMILIES:
        m = (points.family == fam).to_numpy()
        s = x[m].T @ u[m]
        meat += np.outer(s, s)
    n, k, groups = len(y), 3, len(FAMILIES)
    cov = bread @ meat @ bread * groups / (groups - 1) * (n - 1) / (n - k)
    se = np.sqrt(np.diag(cov))
    half = stats.t.isf(alpha / 2, groups - 1) * se
    return beta, se, beta - half, beta + half


def test_points_are_variant_means_of_trained_units():
    table, expected = _table(0.1, -0.05)
    points = claims.joint_points(table)
    assert len(points) == 20  # 5 families x 4 variants; the metric unit left out
    got = points.sort_values(["family", "g"]).reset_index(drop=True)
    want = expected.reset_index(drop=True)
    np.testing.assert_allclose(got.fidelity, want.lfid, atol=1e-12)
    np.testing.assert_allclose(got.mixing_time, want.lmix, atol=1e-12)
    np.testing.assert_allclose(got.y, want.y, atol=1e-12)


@pytest.mark.parametrize("b_fid,b_mix", [(0.1, -0.08), (-0.1, -0.08), (0.1, 0.08)])
def test_joint_fit_matches_statsmodels_and_sandwich(b_fid, b_mix):
    import statsmodels.api as sm

    table, expected = _table(b_fid, b_mix)
    beta, se, lo, hi = _by_hand(expected)
    # statsmodels run directly on the hand-made points
    z = lambda v: (v - v.mean()) / v.std(ddof=1)  # noqa: E731
    x = sm.add_constant(np.column_stack([z(expected.lfid), z(expected.lmix)]))
    ref = sm.OLS(expected.y.to_numpy(), x).fit(
        cov_type="cluster", cov_kwds={"groups": pd.factorize(expected.family)[0]}, use_t=True
    )
    np.testing.assert_allclose(ref.params, beta, rtol=1e-9)
    np.testing.assert_allclose(ref.bse, se, rtol=1e-9)
    np.testing.assert_allclose(ref.conf_int(0.05), np.column_stack([lo, hi]), rtol=1e-9)
    # the check: each part's slope and interval, and the verdict the definition gives
    for part, j, sign in (("fidelity", 1, 1), ("mixing_time", 2, -1)):
        v = claims.Joint(part).evaluate(table, part, FIXED)
        m = v.measured
        assert m["value"] == pytest.approx(beta[j], rel=1e-9)
        assert (m["ci_low"], m["ci_high"]) == pytest.approx((lo[j], hi[j]), rel=1e-9)
        assert m["n"] == 5  # the replicate is the family
        near, far = sorted((sign * lo[j], sign * hi[j]))  # on the claimed scale
        want = "reproduced" if near > 0 else "not_reproduced" if far < 0 else "inconclusive"
        assert v.verdict == want
    both = claims.Joint("both").evaluate(table, "fidelity", FIXED)
    fid_ok = lo[1] > 0
    mix_ok = hi[2] < 0
    fid_bad, mix_bad = hi[1] < 0, lo[2] > 0
    assert both.verdict == (
        "reproduced"
        if fid_ok and mix_ok
        else "not_reproduced"
        if fid_bad or mix_bad
        else "inconclusive"
    )


def test_signs_decide_as_defined():
    # the data were built with these signs and a wobble far smaller than the effects:
    # the paper's signs reproduce; a fidelity slope of the wrong sign fails the joint claim
    good, _ = _table(0.1, -0.08)
    assert claims.Joint("both").evaluate(good, "fidelity").verdict == "reproduced"
    wrong, _ = _table(-0.1, -0.08)
    assert claims.Joint("both").evaluate(wrong, "fidelity").verdict == "not_reproduced"
    assert claims.Joint("mixing_time").evaluate(wrong, "mixing_time").verdict == "reproduced"


def test_not_tested_without_variation_within_families():
    # one graph per family (the committed run's shape): the metrics cannot vary within
    # families, so the joint test is not run
    table, _ = _table(0.1, -0.08)
    v = claims.Joint("both").evaluate(table[table.g == 1], "fidelity")
    assert v.verdict == "inconclusive" and v.measured.get("not_tested")
    # the default graphs carry no g (NaN): they are one variant of their family
    plain = table[table.g == 1].drop(columns="g")
    assert claims.Joint("both").evaluate(plain, "fidelity").measured.get("not_tested")


def test_the_claims_use_the_joint_check_with_the_family_unit():
    by_id = {c.id: c for c in claims.CLAIMS}
    central = [c for c in claims.CLAIMS if c.central]
    assert [c.id for c in central] == ["fidelity_vs_ood"]
    assert by_id["fidelity_vs_ood"].check == claims.Joint("both")
    assert by_id["mixing_vs_ood"].check == claims.Joint("mixing_time")
    for cid in ("fidelity_vs_ood", "mixing_vs_ood"):
        assert by_id[cid].unit == "group" and "family" in by_id[cid].unit_reason


def test_graph_variants_are_the_graphs_their_parameter_names():
    import types

    from reprolab.methods.ff_graphs import graphs, method
    from reprolab.methods.ff_graphs.config import FFGraphsConfig

    cfg = FFGraphsConfig(search_trials=5, search_sizes=[32])
    # dilated base 3 on 30 nodes: offsets 1, 3, 9, 27 (by hand)
    adj = method.graph(cfg, "dilated", 30, None, 3)
    offsets = {i - j for j, i in zip(*np.nonzero(adj), strict=True)}
    assert offsets == {1, 3, 9, 27}
    # window g is the width; random g the in-degree (node i reads min(i, g) nodes)
    assert (method.graph(cfg, "window", 20, None, 6) == graphs.window(20, 6)).all()
    rnd = method.graph(cfg, "random", 40, 1, 5)
    np.testing.assert_array_equal(rnd.sum(axis=0), np.minimum(np.arange(40), 5))
    # searched g: the number of offsets searched (at most g + 1 with the offset 1)
    sea = method.graph(cfg, "searched", 64, 0, 1)
    assert len({i - j for j, i in zip(*np.nonzero(sea), strict=True)}) <= 2
    # the default graph is unchanged: dilated without g is the power-of-two graph
    assert (method.graph(cfg, "dilated", 30, None) == graphs.dilated(30, 2)).all()
    with pytest.raises(ValueError, match="no parameter"):
        FFGraphsConfig(graph_params={"line": [2]})
    with pytest.raises(ValueError, match=">= 2"):
        FFGraphsConfig(graph_params={"dilated": [1]})
    # units: each variant on the training seeds only; metric units on every seed
    cfg = FFGraphsConfig(graph_params={"window": [2, 8]}, train_seeds=1, tasks=["majority"])
    run = types.SimpleNamespace(cfg=cfg, seeds=[0, 1, 2], variants=["window", "random"])
    units = method.units(run, ["majority"])
    trained = [u for u in units if not graphs.is_metric_task(u.task)]
    assert sorted((u.variant, u.param.get("g", 0), u.seed) for u in trained) == [
        ("window", 0, 0),
        ("window", 2, 0),
        ("window", 8, 0),
    ]
    random_metric = [u for u in units if u.variant == "random"]
    assert {u.seed for u in random_metric} == {0, 1, 2}
