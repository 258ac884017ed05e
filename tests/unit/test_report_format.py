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


def test_summary_shows_the_seeds_the_units_really_used(tmp_path):
    import pandas as pd

    from reprolab.paths import MethodPaths
    from reprolab.stages.report import seeds_used

    folder = MethodPaths(tmp_path, "m").eval
    folder.mkdir(parents=True)
    assert seeds_used(tmp_path, "m", (0, 1, 2)) == "0, 1, 2"  # not evaluated yet
    rows = [{"task": "t", "variant": "v", "seed": s, "metric": "acc", "value": 1.0} for s in (0, 1)]
    pd.DataFrame(rows).to_csv(folder / "metrics.csv", index=False)
    assert seeds_used(tmp_path, "m", (0, 1, 2, 3, 4)) == "0, 1 (of 0, 1, 2, 3, 4)"
    assert seeds_used(tmp_path, "m", (0, 1)) == "0, 1"
    pd.DataFrame([{**rows[0], "seed": None}]).to_csv(folder / "metrics.csv", index=False)
    assert seeds_used(tmp_path, "m", (0, 1)) == "none (seed-free)"
