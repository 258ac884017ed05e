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
