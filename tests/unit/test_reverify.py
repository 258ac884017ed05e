"""reprolab.ops.reverify: which verdicts changed, and the MLflow record that is the next
baseline (a real SQLite MLflow store in a temp project)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from reprolab.ops import reverify as rv


def table(rows) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "method": m,
                "claim": c,
                "precision": p,
                "verdict": v,
                "measured": x,
                "profile": "smoke",
            }
            for m, c, p, v, x in rows
        ]
    )


BASE = [
    ("a", "c1", "fp32", "reproduced", "+0.10"),
    ("a", "c1", "int8_dynamic", "reproduced", "+0.09"),
    ("a", "c2", "fp32", "inconclusive", "+0.01"),
    ("b", "c1", "fp32", "not_reproduced", "-0.20"),
]


def test_only_verdict_changes_additions_and_removals_are_flagged():
    after = [
        ("a", "c1", "fp32", "reproduced", "+0.12"),  # measured moved, verdict kept
        ("a", "c1", "int8_dynamic", "inconclusive", "+0.02"),  # changed
        ("a", "c2", "fp32", "inconclusive", "+0.01"),
        ("c", "c9", "fp32", "reproduced", "+1.00"),  # new claim
    ]  # b/c1 removed
    changes = rv.compare(table(BASE), table(after))
    got = {(r.method, r.claim, r.precision): (r.before, r.after) for r in changes.itertuples()}
    assert got == {
        ("a", "c1", "int8_dynamic"): ("reproduced", "inconclusive"),
        ("b", "c1", "fp32"): ("not_reproduced", "absent"),
        ("c", "c9", "fp32"): ("absent", "reproduced"),
    }
    assert rv.compare(table(BASE), table(BASE)).empty
    md = rv.changes_markdown(changes, "run X")
    assert (
        "3 verdict(s) changed" in md and "| a | c1 | int8_dynamic | reproduced | inconclusive" in md
    )


def test_a_malformed_claims_table_is_named(tmp_path: Path):
    path = tmp_path / "claims.csv"
    pd.DataFrame({"method": ["a"], "claim": ["c"]}).to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"claims.csv: not a claims table"):
        rv.read_claims(path)
    table(BASE + [BASE[0]]).to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"claim \('a', 'c1', 'fp32'\) appears twice"):
        rv.read_claims(path)


def test_each_run_is_recorded_and_becomes_the_next_baseline(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    root = tmp_path / "project"
    root.mkdir()
    (root / "mlflow.env").write_text("MLFLOW_TRACKING_URI=sqlite:///.mlflow/mlflow.db\n")
    claims = tmp_path / "claims.csv"

    table(BASE).to_csv(claims, index=False)
    first = rv.check(root, claims, "smoke")
    assert first.baseline_run_id is None and first.changed == 0

    same = rv.check(root, claims, "smoke")
    assert same.baseline_run_id == first.run_id and same.changed == 0

    flipped = [*BASE[:3], ("b", "c1", "fp32", "reproduced", "+0.05")]  # an injected change
    table(flipped).to_csv(claims, index=False)
    third = rv.check(root, claims, "smoke", tags={"prefect.flow_run_id": "f"})
    assert third.baseline_run_id == same.run_id
    assert third.changes[["before", "after"]].values.tolist() == [["not_reproduced", "reproduced"]]

    from mlflow.tracking import MlflowClient

    run = MlflowClient().get_run(third.run_id)
    assert run.data.tags["reprolab.verdicts_changed"] == "1"
    assert run.data.tags["prefect.flow_run_id"] == "f"
    assert run.data.metrics["claims_reproduced"] == 3.0
    # the flagging run is the next baseline: the change is reported once
    assert rv.check(root, claims, "smoke").changed == 0
    # another profile has its own baseline
    with pytest.raises(ValueError, match="not 'paper'"):
        rv.check(root, claims, "paper")
