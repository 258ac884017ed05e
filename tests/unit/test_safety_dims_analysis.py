"""safety_dims' residual-space analysis against closed forms and planted structure."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from reprolab.methods.safety_dims import analysis as A


def test_effective_rank_closed_form():
    ev = [4.0, 3.0, 2.0, 1.0]  # shares 0.4, 0.7, 0.9, 1.0
    assert [A.effective_rank(ev, t) for t in (0.4, 0.5, 0.7, 0.9, 0.95, 1.0)] == [1, 2, 2, 3, 4, 4]
    assert A.effective_rank([1.0, 3.0, 2.0, 4.0], 0.7) == 2  # order does not matter
    with pytest.raises(ValueError, match="tau"):
        A.effective_rank(ev, 0.0)
    with pytest.raises(ValueError, match="zero"):
        A.effective_rank([0.0, 0.0], 0.9)


def test_shift_spectrum_recovers_planted_directions():
    rng = np.random.default_rng(0)
    n, d = 200, 32
    q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    v0, v1 = q[:, 0], q[:, 1]
    before = rng.normal(size=(n, d))
    a, b = rng.normal(size=n) * 3.0, rng.normal(size=n) * 1.0
    after = before + np.outer(a, v0) + np.outer(b, v1) + 0.01 * rng.normal(size=(n, d))
    spec = A.shift_spectrum(before, after)
    assert abs(spec.components[0] @ v0) > 0.99 and abs(spec.components[1] @ v1) > 0.99
    # eigenvalues are s^2 / (n - 1) of the uncentred shift
    s = np.linalg.svd(after - before, compute_uv=False)
    assert np.allclose(spec.eigenvalues, s**2 / (n - 1))
    assert A.effective_rank(spec.eigenvalues, 0.5) == 1
    assert A.effective_rank(spec.eigenvalues, 0.95) == 2
    with pytest.raises(ValueError, match="one shape"):
        A.shift_spectrum(before, after[:, :5])


def test_probe_accuracy_on_planted_and_random_scores():
    rng = np.random.default_rng(1)
    labels = rng.random(400) < 0.5
    planted = labels * 2.0 + rng.normal(scale=0.3, size=400)
    assert A.probe_accuracy(planted, labels) > 0.97
    assert A.probe_accuracy(-planted, labels) > 0.97  # the direction's sign is fitted
    noise = rng.normal(size=400)
    assert 0.4 < A.probe_accuracy(noise, labels) < 0.6
    with pytest.raises(ValueError, match="both labels"):
        A.probe_accuracy(noise, np.ones(400))


def test_between_share_is_anova_r2():
    rng = np.random.default_rng(2)
    groups = np.repeat(["plain", "story", "role"], 30)
    x = rng.normal(size=90) + (groups == "story") * 1.5
    share = A.between_share(x, groups)
    # one-way ANOVA: R^2 = SS_between / SS_total; F = (R^2/(k-1)) / ((1-R^2)/(n-k))
    f = stats.f_oneway(*(x[groups == g] for g in ("plain", "story", "role"))).statistic
    assert f == pytest.approx((share / 2) / ((1 - share) / 87))


def test_separation_test_planted_vs_null():
    rng = np.random.default_rng(3)
    groups = np.repeat([0, 1, 2], 20)
    planted = rng.normal(size=(60, 2)) + np.eye(3)[groups][:, :2] * 2.0
    _, p = A.separation_test(planted, groups, permutations=199)
    assert p == pytest.approx(1 / 200)
    null_ps = [
        A.separation_test(rng.normal(size=(60, 2)), groups, 99, seed=s)[1] for s in range(20)
    ]
    assert np.mean(np.array(null_ps) < 0.05) <= 0.2  # about 5% expected under the null
    with pytest.raises(ValueError, match="two groups"):
        A.separation_test(planted, np.zeros(60))


def test_separation_null_matches_the_beta_distribution_of_r2():
    """For one column of normal data, the between-group share (R^2 of a one-way ANOVA with
    k groups, n points) is Beta((k - 1) / 2, (n - k) / 2) under the null: the permutation
    null's 95% quantile approaches its closed-form quantile."""
    rng = np.random.default_rng(4)
    n, k = 90, 3
    groups = np.repeat(np.arange(k), n // k)
    x = rng.normal(size=n)
    share, null = A.separation_null(x, groups, permutations=4000, seed=1)
    assert share == pytest.approx(A.between_share(x, groups))
    ref = stats.beta.ppf(A.NULL_QUANTILE, (k - 1) / 2, (n - k) / 2)
    summary = A.null_summary(share, null)
    assert summary["null_q95"] == pytest.approx(ref, rel=0.1)
    assert summary["excess"] == pytest.approx(share - summary["null_q95"])
    assert summary["z"] == pytest.approx((share - null.mean()) / null.std(ddof=1))
    # the p-value of separation_test is the share of the same null at or above the share
    _, p = A.separation_test(x, groups, permutations=4000, seed=1)
    assert p == pytest.approx((1 + (null >= share).sum()) / 4001)


def test_null_excess_is_positive_when_planted_and_varies_with_the_data():
    rng = np.random.default_rng(5)
    groups = np.repeat([0, 1, 2], 20)
    planted = [
        A.null_summary(*A.separation_null(
            rng.normal(size=(60, 2)) + np.eye(3)[groups][:, :2] * s, groups, 199, seed=0
        ))["excess"]
        for s in (1.0, 1.5, 2.0)
    ]  # fmt: skip
    assert all(e > 0 for e in planted) and planted[0] < planted[1] < planted[2]
    null = [
        A.null_summary(*A.separation_null(rng.normal(size=(60, 2)), groups, 199, seed=s))["excess"]
        for s in range(40)
    ]
    assert np.mean(np.array(null) > 0) <= 0.15  # about 5% expected under the null


def test_random_direction_accuracy_is_the_probe_in_one_dimension_and_chance_in_many():
    rng = np.random.default_rng(6)
    labels = rng.random(200) < 0.5
    x = (labels * 2.0 + rng.normal(size=200))[:, None]
    # one dimension: every unit direction is +-1 and the probe fits the sign
    acc = A.random_direction_accuracy(x, labels, 5, np.random.default_rng(0), seed=3)
    assert acc == pytest.approx(A.probe_accuracy(x[:, 0], labels, seed=3))
    # 200 dimensions, the labels on one axis: random directions stay near chance
    wide = rng.normal(size=(200, 200))
    wide[:, 0] += labels * 4.0
    rand = A.random_direction_accuracy(wide, labels, 20, np.random.default_rng(1), seed=3)
    assert abs(rand - 0.5) < 0.1 and A.probe_accuracy(wide[:, 0], labels, seed=3) > 0.9
