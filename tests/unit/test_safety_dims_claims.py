"""safety_dims' central claim (issue 46): "a dominant direction [...] while multiple
smaller directions" (abstract), read as the variance of the shift's components 1..3 in
units of component 0's (``analysis.secondary_ratio``), against a harmless control
fine-tune's shift, paired by seed. The statistic is checked against closed forms and a
brute-force SVD (scipy), the claim's decision against scipy's paired t interval."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import linalg, stats

from reprolab.methods.safety_dims import analysis as A
from reprolab.methods.safety_dims.claims import CLAIMS

CENTRAL = {c.id: c for c in CLAIMS}["multi_dim_shift"]


def _planted(amplitudes, n=40, d=24, seed=0):
    """A shift ``Z diag(c) V^T`` with orthonormal columns Z (n) and V (d): its uncentred
    eigenvalues are exactly c**2 / (n - 1)."""
    rng = np.random.default_rng(seed)
    k = len(amplitudes)
    z, _ = np.linalg.qr(rng.normal(size=(n, k)))
    v, _ = np.linalg.qr(rng.normal(size=(d, k)))
    before = rng.normal(size=(n, d))
    return before, before + z @ np.diag(amplitudes) @ v.T


@pytest.mark.parametrize(
    ("amplitudes", "expected"),
    [
        ([3.0], 0.0),  # one direction: nothing secondary
        ([3.0, 1.0], 1 / 9),
        ([4.0, 2.0, 2.0, 1.0], (4 + 4 + 1) / 16),
        ([2.0, 2.0, 2.0, 2.0], 3.0),  # four equal directions: k
        ([4.0, 2.0, 2.0, 2.0, 2.0], 12 / 16),  # the fifth is beyond k = 3
    ],
)
def test_secondary_ratio_closed_form(amplitudes, expected):
    before, after = _planted(amplitudes)
    spec = A.shift_spectrum(before, after)
    assert A.secondary_ratio(spec.eigenvalues, 3) == pytest.approx(expected, abs=1e-9)


def test_secondary_ratio_is_scipys_svd_by_brute_force():
    rng = np.random.default_rng(3)
    for _ in range(5):
        n, d = rng.integers(5, 30), rng.integers(3, 20)
        before = rng.normal(size=(n, d))
        after = before + rng.normal(size=(n, d)) * rng.uniform(0.1, 3, size=d)
        s = linalg.svdvals(after - before)
        ev = np.sort(s**2 / (n - 1))[::-1]
        for k in (1, 2, 3):
            want = sum(ev[i] for i in range(1, min(k + 1, ev.size))) / ev[0]
            got = A.secondary_ratio(A.shift_spectrum(before, after).eigenvalues, k)
            assert got == pytest.approx(want, rel=1e-10)
            # the eigenvalues of the Gram matrix give the same
            gram = np.linalg.eigvalsh((after - before).T @ (after - before) / (n - 1))[::-1]
            assert got == pytest.approx(gram[1 : k + 1].clip(0).sum() / gram[0], rel=1e-8)


def test_secondary_ratio_sorts_and_refuses_a_zero_shift():
    assert A.secondary_ratio([1.0, 4.0, 2.0], 3) == pytest.approx(3 / 4)
    assert A.secondary_ratio([5.0], 3) == 0.0
    with pytest.raises(ValueError, match="zero"):
        A.secondary_ratio([0.0, 0.0], 3)
    with pytest.raises(ValueError, match="k"):
        A.secondary_ratio([1.0, 0.5], 0)


def _table(safety, control, selectivity=(1.0, 1.0, 1.0, 1.0, 1.0)):
    rows = []
    for variant, values in (("safety_tuned", safety), ("control_tuned", control)):
        for seed, v in enumerate(values):
            rows.append((variant, seed, "secondary_ratio_mid", v))
            rows.append((variant, seed, "calib_selectivity", selectivity[seed]))
            rows.append((variant, seed, "base_calib_selectivity", 0.08))
    return pd.DataFrame(
        [
            {
                "task": "safety",
                "variant": a,
                "seed": s,
                "precision": "fp32",
                "metric": m,
                "value": v,
            }
            for a, s, m, v in rows
        ]
    )


def _reference(safety, control, effect):
    """The definition (docs/evidence.md): scipy's 95% t interval of the per-seed
    differences; above 0 and reaching the effect: reproduced; above 0, wholly below it:
    reproduced (smaller); below 0: not reproduced; holding 0 within +-effect: no effect."""
    d = np.subtract(safety, control)
    lo, hi = stats.t.interval(0.95, d.size - 1, loc=d.mean(), scale=stats.sem(d))
    if lo > 0:
        verdict = "reproduced" if hi >= effect else "reproduced_smaller"
    elif hi < 0:
        verdict = "not_reproduced"
    else:
        verdict = "no_effect" if -effect < lo and hi < effect else "inconclusive"
    return d.mean(), lo, hi, verdict


CONTROL = [0.20, 0.25, 0.18, 0.22, 0.21]


@pytest.mark.parametrize(
    ("gain", "expected"),
    [
        ([0.5, 0.4, 0.6, 0.45, 0.55], "reproduced"),  # secondary directions beyond the control
        ([-0.1, -0.12, -0.09, -0.11, -0.1], "not_reproduced"),  # the control's shift has more
        ([0.01, -0.01, 0.005, -0.005, 0.0], "no_effect"),  # the same as the control's
    ],
)
def test_central_claim_decides_on_the_paired_ratio_difference(gain, expected):
    safety = np.add(CONTROL, gain)
    mean, lo, hi, verdict = _reference(safety, CONTROL, CENTRAL.effect)
    assert verdict == expected
    got = CENTRAL.evaluate(_table(safety, CONTROL), "fp32", "paper")
    assert got["metric"] == "secondary_ratio_mid"
    assert got["measured"]["value"] == pytest.approx(mean, abs=1e-12)
    assert (got["measured"]["ci_low"], got["measured"]["ci_high"]) == pytest.approx((lo, hi))
    assert got["verdict"] == expected


def test_central_claim_is_not_tested_when_the_premise_fails():
    """The selective-refusal premise (>= 0.5 above the base model in every seed) gates
    the claim whatever the ratio says."""
    safety = np.add(CONTROL, 0.5)
    got = CENTRAL.evaluate(
        _table(safety, CONTROL, selectivity=(0.17, 0.0, 0.67, 0.25, 0.75)), "fp32", "paper"
    )
    assert got["verdict"] == "premise_failed"
    assert got["measured"]["check_verdict"] == "reproduced"


def test_analyse_reports_the_mean_ratio_over_the_middle_layers(monkeypatch):
    """``analyse`` on hand-made states (``last_states`` replaced): ``secondary_ratio_mid``
    is the mean over the middle third of the layers of the ratio of each layer's shift,
    recomputed here from scipy's singular values, and the per-layer values are reported."""
    rng = np.random.default_rng(7)
    n_layers, n, d = 6, 24, 10
    before = rng.normal(size=(n_layers, n, d))
    after = before.copy()
    for layer in range(n_layers):  # a layer-dependent, non-trivial shift
        after[layer] += rng.normal(size=(n, d)) * np.linspace(3, 0.2, d) * (layer + 1)
    scores = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)

    def fake(model, ids, lengths, first, **kw):
        return (before if model == "base" else after), scores

    monkeypatch.setattr(A.residual, "last_states", fake)
    data = {
        "test_ids": np.zeros((n, 3), int),
        "test_len": np.full(n, 3),
        "test_harmful": (np.arange(n) % 2 == 0).astype(int),
        "test_wrapper": np.arange(n) % 3,
        "refusal_ids": np.array([1]),
        "comply_ids": np.array([2]),
    }

    class Cfg:
        taus, secondary, random_dirs, permutations, spectrum_k = [0.9], 3, 2, 19, 4

    out = A.analyse("base", "tuned", Cfg, data, seed=0)
    want = []
    for layer in range(n_layers):
        ev = linalg.svdvals(after[layer] - before[layer]) ** 2
        want.append(ev[1:4].sum() / ev[0])
        assert out[f"secondary_ratio_l{layer:02d}"] == pytest.approx(want[-1], rel=1e-9)
    mid = [2, 3]  # the middle third of 6 layers
    assert A.mid_layers(n_layers) == mid
    assert out["secondary_ratio_mid"] == pytest.approx(np.mean([want[i] for i in mid]))
    assert 0 < out["dominant_share_mid"] < 1
