"""`make mlflow-server`: PostgreSQL + `mlflow server` on loopback (reprolab.ops.mlflow_server),
both real. One method's chain runs through `dvc repro` with mlflow.env pointing at the
server; its runs, params, metrics and artifacts are read back over REST; 4 concurrent
processes log into it with no metric lost; stopping leaves nothing running."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reprolab.ops import mlflow_server
from tests.conftest import TINY_ENSLOSS, copy_project, run, tool_env
from tests.smoke.test_mlflow_server import Rest, _free_port, _params, _tags

pytestmark = pytest.mark.pipeline

LOGGER = """
import sys
from mlflow.tracking import MlflowClient
client = MlflowClient(tracking_uri=sys.argv[1])
run_id = client.create_run(sys.argv[2], run_name=f"writer-{sys.argv[3]}").info.run_id
for step in range(100):
    client.log_metric(run_id, "value", float(step), step=step)
client.set_terminated(run_id)
print(run_id)
"""


@pytest.mark.slow  # PostgreSQL, an MLflow server and a chain: ~1.5 min (make test-slow)
def test_pipeline_tracks_into_postgres_through_the_server(tmp_path: Path):
    servers = mlflow_server.start(tmp_path / "server", _free_port(), _free_port())
    try:
        # one method's chain (EnsLoss, tiny, without the quantize schemes' extra work)
        root = copy_project(tmp_path / "project", ensloss={**TINY_ENSLOSS, "quantization": []})
        env_file = root / "mlflow.env"
        env_file.write_text(
            env_file.read_text().replace(
                "MLFLOW_TRACKING_URI=sqlite:///.mlflow/mlflow.db",
                f"MLFLOW_TRACKING_URI={servers.url}",
            )
        )
        run(["dvc", "repro"], root, env=tool_env({"MLFLOW_TRACKING_URI": servers.url}))
        assert not (root / ".mlflow" / "mlflow.db").exists()  # nothing went to SQLite

        rest = Rest(servers.url)
        exp = rest.get("experiments/get-by-name", experiment_name="ensloss")["experiment"]
        assert exp["artifact_location"].startswith("mlflow-artifacts:")  # proxied
        runs = rest.search(exp["experiment_id"])
        stages = {_tags(r).get("reprolab.stage") for r in runs}
        assert {"prepare", "train", "evaluate"} <= stages
        units = [r for r in runs if _tags(r).get("reprolab.kind") == "unit"]
        assert units and all(_params(r) and r["data"].get("metrics") for r in units)
        evaluate = next(
            r
            for r in runs
            if _tags(r).get("reprolab.stage") == "evaluate"
            and _tags(r).get("reprolab.kind") != "unit"
        )
        listed = rest.get("artifacts/list", run_id=evaluate["info"]["run_id"])
        names = {f["path"] for f in listed.get("files", [])}
        assert "claims.json" in names, names
        # the artifact is really stored behind the proxy
        assert any((tmp_path / "server" / "artifacts").rglob("claims.json"))

        # 4 concurrent writers, 100 metric values each: none lost
        exp_id = rest.post("experiments/create", {"name": "concurrency"})["experiment_id"]
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", LOGGER, servers.url, exp_id, str(i)],
                stdout=subprocess.PIPE,
                text=True,
                env=tool_env(),
            )
            for i in range(4)
        ]
        ids = [p.communicate(timeout=300)[0].strip().splitlines()[-1] for p in procs]
        assert all(p.returncode == 0 for p in procs)
        for run_id in ids:
            history = rest.get(
                "metrics/get-history", run_id=run_id, metric_key="value", max_results=1000
            )
            assert sorted(m["step"] for m in history["metrics"]) == list(range(100))
    finally:
        servers.stop()
    assert servers.mlflow.poll() is not None
    assert not (servers.pg_data / "postmaster.pid").exists()


def test_missing_postgres_is_named(monkeypatch):
    monkeypatch.setattr(mlflow_server.shutil, "which", lambda name: None)
    monkeypatch.setattr(mlflow_server, "PG_LIB", Path("/nonexistent"))
    with pytest.raises(mlflow_server.ServerError, match="apt-get install -y postgresql"):
        mlflow_server.pg_bin("initdb")
