"""Numbers in the claims report: a claim that was not tested shows 'n/a', never a bound."""

from __future__ import annotations

import math

from reprolab.stages.report import _fmt, _interval


def test_untested_values_read_not_available():
    assert _fmt(float("nan")) == "n/a" and _fmt(None) == "n/a"


def test_unbounded_interval_ends_keep_their_sign():
    assert _fmt(-math.inf) == "-inf" and _fmt(math.inf) == "inf"


def test_finite_values_are_signed():
    assert _fmt(0.25) == "+0.2500" and _fmt(-0.5) == "-0.5000" and _fmt(1234.5) == "1234"

    # a tiny non-zero value is not printed as zero
    assert _fmt(1.878e-06) == "+1.88e-06" and _fmt(0.0) == "+0.0000"


def test_exact_and_exhaustive_checks_do_not_pose_as_intervals():
    seeded = {"ci_low": 0.1, "ci_high": 0.3, "n": 5}
    assert _interval(seeded) == "[+0.1000, +0.3000]"
    one = {"ci_low": 6.4272, "ci_high": 6.4272, "n": 1, "seed_free": True}
    assert _interval(one) == "exact (deterministic)"
    two = {"ci_low": 2.0046, "ci_high": 2.011, "n": 2, "seed_free": True, "test": "exact"}
    assert _interval(two) == "exact, range [+2.0046, +2.0110]"
    every = {"ci_low": 0.0, "ci_high": 0.0, "n": 4, "test": "exhaustive"}
    assert _interval(every) == "exhaustive: every unit, range [+0.0000, +0.0000]"


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
