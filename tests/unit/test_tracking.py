from __future__ import annotations

import socket
import time

import pytest

from reprolab.core import tracking


def test_relative_sqlite_uri_is_resolved_against_the_root(tmp_path):
    uri = tracking.resolve_uri("sqlite:///.mlflow/x.db", tmp_path)
    assert uri == f"sqlite:///{tmp_path.resolve()}/.mlflow/x.db"
    assert tracking.resolve_uri("sqlite:////abs/x.db", tmp_path) == "sqlite:////abs/x.db"


def test_unreachable_server_fails_fast_and_names_the_uri():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    uri = f"http://127.0.0.1:{port}"
    start = time.perf_counter()
    with pytest.raises(tracking.TrackingUnavailableError) as err:
        tracking.preflight(uri, timeout=2.0)
    assert time.perf_counter() - start < 10
    assert uri in str(err.value) and "mlflow.env" in str(err.value)


def test_flatten():
    assert tracking.flatten({"a": {"b": 1, "c": [1, 2]}, "d": "x"}) == {
        "a.b": "1",
        "a.c": "[1, 2]",
        "d": "x",
    }


def test_missing_env_file(tmp_path):
    with pytest.raises(tracking.TrackingUnavailableError, match="mlflow.env not found"):
        tracking.load_env(tmp_path)


def test_shared_view_state_names_mlflow_columns():
    import json

    from reprolab.core.tracking import VIEW_KEY, runs_view_url, view_state

    state = json.loads(view_state([("tags", "verdict.vs_bce.fp32"), ("metrics", "a.b")]))
    # MLflow's canonical column keys: kind.`name` (backquoted: names contain dots)
    assert state["selectedColumns"] == ["tags.`verdict.vs_bce.fp32`", "metrics.`a.b`"]
    url = runs_view_url("7")
    assert url.startswith("#/experiments/7/runs?") and f"viewStateShareKey={VIEW_KEY}" in url


def _files(folder):
    return sorted(p.relative_to(folder) for p in folder.rglob("*") if p.is_file())


def test_a_copied_project_writes_its_artifacts_into_itself(tmp_path, monkeypatch):
    """MLflow records artifact locations absolute: a project copied with its SQLite store
    would write its runs' artifacts into the original. The tracker follows the copy."""
    import shutil

    original, copy = tmp_path / "original", tmp_path / "copy"
    original.mkdir()
    from tests.conftest import ROOT

    shutil.copy(ROOT / "mlflow.env", original / "mlflow.env")
    note = tmp_path / "note.txt"
    note.write_text("x")

    def log_one(root):
        monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
        tracker = tracking.open_tracker(root, "exp", "stage", "smoke")
        tracker.start({"a": 1}, chain=False)
        tracker.log_artifact(tracker.run_id, note)
        tracker.finish(True)
        return tracker

    log_one(original)
    before = _files(original / ".mlflow" / "artifacts")
    assert len(before) == 1
    shutil.copytree(original, copy)
    tracker = log_one(copy)
    # nothing new in the original; the copy's artifacts folder has its own run's file
    assert _files(original / ".mlflow" / "artifacts") == before
    assert len(_files(copy / ".mlflow" / "artifacts")) == 2
    exp = tracker.client.get_experiment(tracker.experiment_id)
    assert exp.artifact_location.startswith((copy / ".mlflow" / "artifacts").as_uri())
    for run in tracker.client.search_runs([tracker.experiment_id]):
        assert run.info.artifact_uri.startswith((copy / ".mlflow" / "artifacts").as_uri())


def test_git_dirty_is_about_the_code_not_the_lock_a_run_rewrites(tmp_path):
    import subprocess

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "code.py").write_text("x = 1\n")
    (tmp_path / "dvc.lock").write_text("a\n")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    assert tracking.git_state(tmp_path)["reprolab.git_dirty"] == "false"
    (tmp_path / "dvc.lock").write_text("b\n")  # what every run does
    assert tracking.git_state(tmp_path)["reprolab.git_dirty"] == "false"
    (tmp_path / "code.py").write_text("x = 2\n")
    assert tracking.git_state(tmp_path)["reprolab.git_dirty"] == "true"
