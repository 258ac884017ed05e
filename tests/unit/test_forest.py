"""The claims forest plot (core.plots.claims_forest): the paper's value placed on the
measured scale by hand-worked cases, claims without a value left out, a file drawn."""

from __future__ import annotations

import math

import pytest

from reprolab.core.plots import claims_forest, paper_point


def claim(cid, value, low, high, bound=0.0, side=">", effect=0.5, basis="paper: x", **kw):
    return {
        "id": cid,
        "precision": kw.get("precision", "fp32"),
        "verdict": kw.get("verdict", "inconclusive"),
        "effect": effect,
        "effect_basis": basis,
        "measured": {
            "value": value,
            "ci_low": low,
            "ci_high": high,
            "bound": bound,
            "claimed": side,
            "n": 5,
        },
    }


@pytest.mark.parametrize(
    ("bound", "side", "effect", "basis", "expected"),
    [
        (0.0, ">", 0.0095, "paper: 89.10 - 88.15", 0.0095),  # a gain of the paper's size
        (0.0, "<", 0.26, "paper: 2.92 - 2.66", -0.26),  # a reduction
        (0.1, "<", 0.1, "paper: error ~0", 0.0),  # an excess over a floor
        (0.0, ">", 0.02, "margin: 0.02", None),  # a declared margin is not the paper's
        (None, ">", 0.5, "paper: x", None),  # no bound
        ([0.0, 1.0], None, 0.5, "paper: x", None),  # a two-sided interval bound
    ],
)
def test_paper_point(bound, side, effect, basis, expected):
    c = claim("a", 1.0, 0.5, 1.5, bound=bound, side=side, effect=effect, basis=basis)
    got = paper_point(c)
    assert got == (None if expected is None else pytest.approx(expected))


def test_forest_draws_claims_with_values_and_skips_the_rest(tmp_path):
    rows = [
        claim("a", 0.2, 0.1, 0.3, verdict="reproduced"),
        claim("a", 0.1, -0.1, 0.3, precision="int8_dynamic"),
        claim("b", -0.4, -0.6, -0.2, bound=[0.0, 1.0], side=None, verdict="not_reproduced"),
        claim("c", math.nan, math.nan, math.nan),  # not tested: no value
    ]
    path = claims_forest(rows, tmp_path / "f.png", "m")
    assert path == tmp_path / "f.png" and path.stat().st_size > 5000
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert claims_forest([rows[-1]], tmp_path / "none.png") is None
    assert not (tmp_path / "none.png").exists()
