"""The `reverify` flow end to end (ephemeral Prefect, real DVC in a scratch copy, the
project's real MLflow store): a baseline with an injected verdict is flagged, the flow
run fails, the change is an MLflow tag and a Prefect artifact, and the workspace is
untouched."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.smoke.test_prefect import prefect_env

pytestmark = pytest.mark.pipeline

FLOW = """
import json, sys
from prefect import get_client
from flows.reverify import reverify

state = reverify(profile="smoke", root=sys.argv[1], return_state=True)
with get_client(sync_client=True) as client:
    arts = [a for a in client.read_artifacts() if a.key == "verdict-changes"]
print("RESULT " + json.dumps({
    "state": state.type.value,
    "message": state.message,
    "artifact": arts[0].data if arts else None,
}))
"""


def test_reverify_flags_a_changed_verdict_and_leaves_the_workspace_alone(
    project: Path, tmp_path, monkeypatch
):
    from mlflow.tracking import MlflowClient

    from reprolab.ops import reverify as rv

    # this process may hold another project's store from an earlier test: use the copy's
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    # the injected baseline: one claim that this run will not produce, marked reproduced
    fake = tmp_path / "claims.csv"
    pd.DataFrame(
        [
            {
                "method": "ensloss",
                "claim": "injected_claim",
                "precision": "fp32",
                "verdict": "reproduced",
                "measured": "+1.0",
                "profile": "smoke",
            }
        ]
    ).to_csv(fake, index=False)
    baseline = rv.check(project, fake, "smoke")

    proc = subprocess.run(
        [sys.executable, "-c", FLOW, str(project)],
        cwd=project,
        env=prefect_env(tmp_path / "prefect-home"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, f"--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-6000:]}"
    out = json.loads(lines[-1][len("RESULT ") :])
    assert out["state"] == "FAILED", proc.stderr[-6000:]
    assert "verdict(s) changed" in out["message"]
    assert "| ensloss | injected_claim | fp32 | reproduced | absent" in out["artifact"]

    client = MlflowClient(tracking_uri=f"sqlite:///{project / '.mlflow' / 'mlflow.db'}")
    exp = client.get_experiment_by_name(rv.EXPERIMENT)
    runs = client.search_runs([exp.experiment_id], order_by=["attributes.start_time DESC"])
    latest = runs[0]
    assert latest.data.tags["reprolab.baseline_run_id"] == baseline.run_id
    assert int(latest.data.tags["reprolab.verdicts_changed"]) >= 1
    # the stages of the scratch copy tracked into the project's store, artifacts included
    ensloss = client.get_experiment_by_name("ensloss")
    assert ensloss is not None and client.search_runs([ensloss.experiment_id])
    assert ensloss.artifact_location.startswith((project / ".mlflow").resolve().as_uri())
    # the workspace is as it was: nothing computed in it, no dvc.lock
    assert not (project / "dvc.lock").exists()
    assert not any((project / "data").iterdir())
