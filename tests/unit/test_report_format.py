"""Numbers in the claims report: a claim that was not tested shows 'n/a', never a bound."""

from __future__ import annotations

import math

from reprolab.stages.report import _fmt


def test_untested_values_read_not_available():
    assert _fmt(float("nan")) == "n/a" and _fmt(None) == "n/a"


def test_unbounded_interval_ends_keep_their_sign():
    assert _fmt(-math.inf) == "-inf" and _fmt(math.inf) == "inf"


def test_finite_values_are_signed():
    assert _fmt(0.25) == "+0.2500" and _fmt(-0.5) == "-0.5000" and _fmt(1234.5) == "1234"
