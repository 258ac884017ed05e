"""reprolab compare: verdict agreement and metric drift between two results folders,
against hand-made folders and against the held-out-block comparison of two committed
seed sets (paper.compare_blocks, computed independently)."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from reprolab.evidence.running import compare
from reprolab.evidence.running.paper import compare_blocks
from tests.conftest import ROOT


def folder(path, verdicts, values):
    path.mkdir(parents=True)
    claims = [
        {
            "id": cid,
            "precision": "fp32",
            "verdict": v,
            "measured": {"value": 0.1, "ci_low": 0.0, "ci_high": 0.2},
        }
        for cid, v in verdicts.items()
    ]
    (path / "claims.json").write_text(json.dumps(claims))
    rows = [
        {"task": t, "variant": "m", "seed": s, "precision": "fp32", "metric": "acc", "value": x}
        for (t, s), x in values.items()
    ]
    pd.DataFrame(rows).to_csv(path / "metrics.csv", index=False)
    return path


def test_verdicts_and_drift_against_hand_made_folders(tmp_path):
    a = folder(
        tmp_path / "a",
        {"c1": "reproduced", "c2": "inconclusive"},
        {("t", 0): 0.50, ("t", 1): 0.60, ("t", 2): 0.70},
    )
    b = folder(
        tmp_path / "b",
        {"c1": "reproduced", "c2": "not_reproduced", "c3": "reproduced"},
        {("t", 0): 0.50, ("t", 1): 0.66, ("t", 3): 0.10},
    )
    cmp = compare.compare(a, b)
    assert [(v["claim"], v["same"]) for v in cmp.verdicts] == [
        ("c1", True),
        ("c2", False),
        ("c3", False),  # c3 on one side only
    ]
    assert cmp.verdicts_differ == 2
    assert (cmp.shared_units, cmp.only_a, cmp.only_b) == (2, 1, 1)
    (drift,) = cmp.drift
    assert drift["units_differ"] == 1 and drift["units"] == 2
    assert drift["max_abs"] == pytest.approx(0.06)
    assert drift["max_rel"] == pytest.approx(0.06 / 0.66)
    assert drift["worst_units"][0]["unit"] == "task=t variant=m seed=1"
    # within a tolerance the drift is no difference
    assert compare.compare(a, b, tolerance=0.1).drift[0]["units_differ"] == 0


def test_a_folder_against_itself_agrees_and_the_cli_exits_by_verdicts(tmp_path):
    src = ROOT / "docs" / "results" / "grokformer"
    same = compare.compare(src, src)
    assert same.verdicts_differ == 0 and same.shared_units > 0
    assert all(d["units_differ"] == 0 and d["max_abs"] == 0 for d in same.drift)
    cli = [sys.executable, "-m", "reprolab", "compare"]
    ok = subprocess.run([*cli, str(src), str(src)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run([*cli, str(src), str(tmp_path)], capture_output=True, text=True)
    assert bad.returncode == 2 and "claims.json is missing" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_two_seed_sets_of_one_method_as_the_held_out_block_comparison_counts(tmp_path):
    pooled = ROOT / "docs" / "results" / "grokformer"
    block = pooled / "seeds-5-6-7-8-9"
    cmp = compare.compare(pooled, block)
    _, summary = compare_blocks(pooled, block)
    assert cmp.verdicts_differ == summary["differ"] > 0
    # the rows both measured, counted directly (the committed pool may share seeds)
    a, b = (pd.read_csv(compare.metrics_file(f)) for f in (pooled, block))
    keys = [c for c in a.columns if c != "value"]
    shared = a.astype({k: str for k in keys}).merge(b.astype({k: str for k in keys}), on=keys)
    assert cmp.shared_units == len(shared)
    assert cmp.only_a == len(a) - len(shared) and cmp.only_b == len(b) - len(shared)
    out = tmp_path / "cmp.json"
    proc = subprocess.run(
        [sys.executable, "-m", "reprolab", "compare", str(pooled), str(block), "--json", str(out)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and f"{cmp.verdicts_differ} differ" in proc.stdout
    assert json.loads(out.read_text())["verdicts_differ"] == cmp.verdicts_differ


def test_large_metrics_are_stored_gzipped_byte_for_byte_the_same(tmp_path):
    import gzip

    src = tmp_path / "metrics.csv"
    small = pd.DataFrame(
        {
            "task": ["t"],
            "variant": ["m"],
            "seed": [0],
            "precision": ["fp32"],
            "metric": ["acc"],
            "value": [0.5],
        }
    )
    small.to_csv(src, index=False)
    (tmp_path / "small").mkdir()
    assert compare.store_metrics(src, tmp_path / "small").name == "metrics.csv"
    big = pd.concat([small] * 60_000, ignore_index=True).assign(seed=range(60_000))
    big.to_csv(src, index=False)
    assert src.stat().st_size > compare.METRICS_GZIP_BYTES
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        stored = compare.store_metrics(src, tmp_path / name)
        assert stored.name == "metrics.csv.gz"
        assert compare.metrics_file(tmp_path / name) == stored
    packed = [(tmp_path / n / "metrics.csv.gz").read_bytes() for n in ("a", "b")]
    assert packed[0] == packed[1]  # deterministic: no name or time in the header
    assert gzip.decompress(packed[0]) == src.read_bytes()
    pd.testing.assert_frame_equal(pd.read_csv(compare.metrics_file(tmp_path / "a")), big)
