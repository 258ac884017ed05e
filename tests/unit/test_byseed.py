"""The seed as the replicate (``PairedDifference.by_seed``, ``reprolab.byseed``): the
interval over per-seed means against scipy on the same numbers, the cases where it does
not apply, and a results folder whose pooled verdict does not hold by seed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from reprolab import byseed, scoreboard
from reprolab.core.claims import Level, PairedDifference, Where

ROOT = Path(__file__).resolve().parents[2]

#: per seed, one difference shared by all three pairs of the seed (they move together)
SEED_DIFFS = {0: 0.02, 1: 0.06, 2: -0.01, 3: 0.05}


def _table(diffs=SEED_DIFFS, pairs=3, noise=0.0, regime="seeds") -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for seed, d in diffs.items():
        for p in range(pairs):
            base = 0.5 + 0.01 * p
            extra = float(rng.normal(0, noise)) if noise else 0.0
            for variant, value in (("perm", base), ("rotation", base + d + extra)):
                rows.append(
                    {
                        "task": f"{regime}-p{p}",
                        "variant": variant,
                        "seed": seed,
                        "pair": p,
                        "regime": regime,
                        "precision": "fp32",
                        "metric": "test_acc",
                        "value": value,
                    }
                )
    return pd.DataFrame(rows)


def _scipy(x: np.ndarray, confidence: float) -> tuple[float, float]:
    ci = stats.ttest_1samp(x, 0.0).confidence_interval(confidence)
    return ci.low, ci.high


def test_by_seed_is_the_t_interval_over_per_seed_means():
    table = _table(noise=0.01)
    check = PairedDifference(method="rotation", baseline="perm")
    pooled, seeds = check.by_seed(table, "test_acc", Level(confidence=0.9))
    wide = table.pivot_table(index=["task", "seed"], columns="variant", values="value")
    diffs = (wide["rotation"] - wide["perm"]).to_numpy()
    per_seed = (wide["rotation"] - wide["perm"]).groupby(level="seed").mean().to_numpy()
    assert (pooled.n, seeds.n) == (12, 4)
    assert (pooled.low, pooled.high) == pytest.approx(_scipy(diffs, 0.9))
    assert (seeds.low, seeds.high) == pytest.approx(_scipy(per_seed, 0.9))
    # the pooled reading is the claim's own: same interval as evaluate() gives
    measured = check.evaluate(table, "test_acc", Level(confidence=0.9)).measured
    assert (measured["ci_low"], measured["ci_high"]) == pytest.approx((pooled.low, pooled.high))


def test_by_seed_does_not_apply_where_it_reads_the_same():
    check = PairedDifference(method="rotation", baseline="perm")
    assert check.by_seed(_table(pairs=1), "test_acc") is None  # one pair per seed
    assert (
        PairedDifference("rotation", "perm", deterministic=True).by_seed(_table(), "test_acc")
        is None
    )
    free = _table()
    free["seed"] = np.nan  # seed-free units only
    free = free.drop_duplicates(["task", "variant"])
    assert check.by_seed(free, "test_acc") is None


def test_where_reads_by_seed_on_its_rows_only():
    both = pd.concat([_table(), _table({0: 5.0, 1: -5.0, 2: 5.0, 3: -5.0}, regime="finetune")])
    check = Where(PairedDifference(method="rotation", baseline="perm"), regime="seeds")
    _, seeds = check.by_seed(both, "test_acc")
    assert seeds.mean == pytest.approx(np.mean(list(SEED_DIFFS.values())))
    assert Where(PairedDifference("rotation", "perm"), regime="none").by_seed(both, "x") is None


def _results(tmp_path: Path, table: pd.DataFrame, low: float, high: float) -> Path:
    """A results folder for rotation_fusion's central claim (a Where over a paired
    difference, bound 0, higher is better) with the given pooled interval on file."""
    folder = tmp_path / "rotation_fusion"
    folder.mkdir(parents=True)
    table.to_csv(folder / "metrics.csv", index=False)
    entry = {
        "id": "rotation_gt_perm_seeds",
        "precision": "fp32",
        "verdict": "reproduced" if low > 0 else "inconclusive",
        "measured": {"value": 0.03, "ci_low": low, "ci_high": high, "n": 12, "bound": 0.0},
    }
    (folder / "claims.json").write_text(json.dumps([entry]))
    (folder / "run.json").write_text(json.dumps({"seeds": sorted(SEED_DIFFS)}))
    return tmp_path


def test_a_verdict_resting_on_pairs_that_move_together_does_not_hold(tmp_path):
    """Every pair of a seed has the seed's difference: the pooled interval over 12
    pairs decides (> 0); over 4 seeds, at the same 95%, it does not."""
    table = _table()
    x = np.repeat(list(SEED_DIFFS.values()), 3)
    low, high = _scipy(x, 0.95)
    assert low > 0  # the pooled reading decides
    results = _results(tmp_path, table, low, high)
    [r] = byseed.readings(tmp_path, results)
    s_low, s_high = _scipy(np.array(list(SEED_DIFFS.values())), 0.95)
    assert (r.by_seed.low, r.by_seed.high) == pytest.approx((s_low, s_high))
    assert s_low < 0 < s_high
    assert (r.pooled_side, r.seed_side, r.reading) == (
        "reproduced",
        "inconclusive",
        "does not hold",
    )
    # identical pairs within a seed: the design effect is the number of pairs per seed,
    # up to the degrees of freedom of the two variance estimates
    se_pairs = np.std(x, ddof=1) / np.sqrt(12)
    se_seeds = np.std(list(SEED_DIFFS.values()), ddof=1) / 2
    assert r.design_effect == pytest.approx((se_seeds / se_pairs) ** 2)
    assert r.design_effect > 2
    assert r.why == "4 seeds leave 3 degrees of freedom; a seed's pairs move together"
    assert "does not hold" in byseed.cell([r], "rotation_fusion", _central(), "fp32")
    page = byseed.render([r])
    assert "0 hold, 1 do not hold, 0 decide" in page and "**does not hold**" in page


def _central():
    from reprolab import registry

    return next(c for c in registry.get("rotation_fusion").claims if c.central)


def test_independent_pairs_hold(tmp_path):
    """Pairs of a seed as different as the seeds are: both readings decide (> 0)."""
    diffs = {s: 0.05 for s in range(6)}
    table = _table(diffs, noise=0.01)
    wide = table.pivot_table(index=["task", "seed"], columns="variant", values="value")
    low, high = _scipy((wide["rotation"] - wide["perm"]).to_numpy(), 0.95)
    results = _results(tmp_path, table, low, high)
    [r] = byseed.readings(tmp_path, results)
    assert r.reading == "holds" and r.why == ""
    assert byseed.cell([r], "rotation_fusion", _central(), "fp32").startswith("holds: ")


def test_the_committed_by_seed_page_matches_the_committed_results():
    pages = scoreboard.pages(ROOT)
    path = ROOT / "docs" / "results" / byseed.PAGE
    assert path.read_text() == pages[path], f"{path} is out of date: python -m reprolab scoreboard"


def test_the_pooled_reading_is_the_verdict_on_file():
    """For every committed result read here, the pooled interval recomputed from the
    committed metrics (on the seeds the verdict recorded) is the one in claims.json: the
    reading by seed is of the same pairs as the verdict."""
    import math

    from reprolab import registry
    from reprolab.compare import metrics_file

    results = ROOT / "docs" / "results"
    checked = 0
    for slug in registry.slugs():
        defined = {c.id: c for c in registry.get(slug).claims}
        for folder in byseed._folders(results, slug):
            if not (folder / "claims.json").is_file():
                continue
            table = pd.read_csv(metrics_file(folder))
            for entry in json.loads((folder / "claims.json").read_text()):
                claim, m = defined.get(entry["id"]), entry.get("measured") or {}
                if claim is None or not byseed.pools_pairs(claim.check) or "ci_low" not in m:
                    continue
                rows = table[
                    (table.precision == entry["precision"]) & (table.metric == claim.metric)
                ]
                if m.get("seeds"):
                    rows = rows[rows.seed.isin(m["seeds"]) | rows.seed.isna()]
                both = claim.check.by_seed(rows, claim.metric, byseed._level(m))
                if both is None:
                    continue
                pooled = both[0]
                where = f"{folder.name} {entry['id']} {entry['precision']}"
                assert math.isclose(pooled.low, m["ci_low"], rel_tol=1e-6, abs_tol=1e-12), where
                assert math.isclose(pooled.high, m["ci_high"], rel_tol=1e-6, abs_tol=1e-12), where
                checked += 1
    assert checked == len(byseed.readings(ROOT)) > 100


def test_an_unreadable_metrics_table_is_an_error_naming_it(tmp_path):
    """A truncated metrics.csv.gz: a ValueError naming the file (the CLI prints it and
    exits 2), not a bare gzip traceback."""
    import gzip

    results = _results(tmp_path, _table(), 0.01, 0.05)
    folder = results / "rotation_fusion"
    packed = gzip.compress((folder / "metrics.csv").read_bytes())
    (folder / "metrics.csv").unlink()
    (folder / "metrics.csv.gz").write_bytes(packed[: len(packed) // 2])
    with pytest.raises(ValueError, match="metrics.csv.gz: cannot read the metrics table"):
        byseed.readings(tmp_path, results)


def test_the_scoreboard_sentence_counts_the_central_readings():
    rows = [
        {"method": "a", "by_seed": "holds: +0.1 [+0.05, +0.15], 5 seeds"},
        {"method": "b", "by_seed": "**does not hold** (5 seeds leave 4 degrees of freedom)"},
        {"method": "c", "by_seed": "one pair per seed: the same"},
        {"method": "d", "by_seed": "not a pooled paired difference"},
    ]
    text = scoreboard._by_seed_summary(rows)
    assert "1 of the 2 that pool pairs hold" in text and "differs for b " in text
    assert scoreboard._by_seed_summary(rows[2:]) == ""
    assert scoreboard._by_seed_summary(rows[:1]).endswith("1 of the 1 that pool pairs hold.")


def test_the_shared_number_formats():
    """core.claims.signed / measured_text, used by the scoreboard, README blocks and the
    by-seed page alike."""
    from reprolab.core.claims import measured_text, signed

    assert [signed(x) for x in (0.04511, -0.0801, float("inf"), float("-inf"))] == [
        "+0.04511",
        "-0.0801",
        "+inf",
        "-inf",
    ]
    assert signed(float("nan")) == signed(None) == signed(True) == "n/a"
    m = {"value": 0.045, "ci_low": 0.0227, "ci_high": 0.0675}
    assert measured_text(m) == "+0.045 [+0.0227, +0.0675]"
    assert measured_text({**m, "ci_low": float("nan")}) == "+0.045 (no interval)"
    assert measured_text({"value": 3, "test": "exact"}) == "+3 (exact)"
