"""`reproduce-all` with a Dask executor: methods concurrently, DVC recording one at a time.

On a copy of the reproduced project (EnsLoss and dp_noise, tests/conftest.py) every
output of both methods' stages is deleted; the flow then runs with ``executor="dask"``
(prefect-dask's task runner on a local cluster of 2 single-threaded workers): both
methods' chains run at the same time, each stage is committed under DVC's repository
lock. Afterwards `dvc status` is clean and dvc.lock holds exactly the hashes `dvc repro`
wrote (the workers run torch on one thread, `dvc repro` on every core: results do not
depend on the thread count).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from tests.conftest import PIPELINE_METHODS, run
from tests.smoke.test_prefect import mlflow_runs, prefect_env

pytestmark = pytest.mark.pipeline

# `python -c`: Dask's spawned workers do not re-run a main module.
FLOW = """
import json, sys
from prefect import get_client
from flows.reproduce import reproduce_all

state = reproduce_all(methods=sys.argv[2].split(","), root=sys.argv[1], executor="dask",
                      return_state=True)
with get_client(sync_client=True) as client:
    tasks = client.read_task_runs()
print("RESULT " + json.dumps({
    "state": state.type.value,
    "message": state.message,
    "result": state.result() if state.is_completed() else None,
    "task_runs": [
        {"name": t.name, "state": t.state.type.value,
         "start": t.start_time.isoformat() if t.start_time else None,
         "end": t.end_time.isoformat() if t.end_time else None}
        for t in tasks
    ],
}))
"""


def method_stages(lock: dict, slug: str) -> list[str]:
    return [n for n in lock["stages"] if n.endswith(f"@{slug}") and not n.startswith("assets@")]


@pytest.mark.slow  # about 2 minutes on 2 shared cores: Prefect, a 2-worker cluster, 8 stages
def test_methods_run_concurrently_on_dask_and_dvc_lock_is_exact(reproduced: Path, tmp_path):
    root = tmp_path / "project"
    shutil.copytree(reproduced, root, symlinks=True)  # the fixture stays read-only
    lock_before = yaml.safe_load((root / "dvc.lock").read_text())
    methods = list(PIPELINE_METHODS)
    for slug in methods:  # every output of the method's own stages: all must run again
        for name in method_stages(lock_before, slug):
            for out in lock_before["stages"][name]["outs"]:
                path = root / out["path"]
                shutil.rmtree(path) if path.is_dir() else path.unlink()
    assert "deleted" in run(["dvc", "status"], root).stdout

    proc = subprocess.run(
        [sys.executable, "-c", FLOW, str(root), ",".join(methods)],
        cwd=root,
        env=prefect_env(tmp_path / "prefect-home", REPROLAB_DASK_WORKERS="2"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-6000:]
    out = json.loads(lines[-1][len("RESULT ") :])
    assert out["state"] == "COMPLETED", (out["message"], proc.stderr[-6000:])
    result = out["result"]
    assert result["executor"] == "dask"
    ran = {s["stage"]: s for s in result["stages"]}
    for slug in methods:  # each method's stages ran (the setup and report had no change)
        for name in method_stages(lock_before, slug):
            assert ran[name]["skipped"] is False, ran
    setup = [n for n in ran if n == "validate" or n.startswith("assets@")]
    assert setup and all(ran[n]["skipped"] for n in setup), ran  # done before, unchanged

    # concurrently: stages of the two methods overlap in time (2 workers)
    spans = {
        t["name"]: (datetime.fromisoformat(t["start"]), datetime.fromisoformat(t["end"]))
        for t in out["task_runs"]
        if t["state"] == "COMPLETED" and t["start"] and t["end"]
    }
    a, b = (method_stages(lock_before, slug) for slug in methods)
    assert any(spans[x][0] < spans[y][1] and spans[y][0] < spans[x][1] for x in a for y in b), spans

    # DVC: clean, dvc.lock parses with both methods' stages, the hashes of `dvc repro`
    status = run(["dvc", "status"], root)
    assert "Data and pipelines are up to date" in status.stdout, status.stdout
    lock_after = yaml.safe_load((root / "dvc.lock").read_text())
    assert lock_after["stages"].keys() == lock_before["stages"].keys()
    differ = {
        n for n in lock_before["stages"] if lock_after["stages"][n] != lock_before["stages"][n]
    }
    assert not differ, {n: (lock_before["stages"][n], lock_after["stages"][n]) for n in differ}
    for slug in methods:
        assert json.loads((root / "data" / "eval" / slug / "metrics.json").read_text())

    # MLflow: one chain run per method for this flow run, its stages its children
    runs = mlflow_runs(root)
    chains = [r for r in runs if r.data.tags.get("reprolab.entry") == "prefect"]
    assert sorted(r.data.tags["reprolab.slug"] for r in chains) == sorted(methods)
    for chain in chains:
        assert chain.info.status == "FINISHED"
        children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == chain.info.run_id]
        assert sorted(r.info.run_name for r in children) == [
            "evaluate",
            "prepare",
            "quantize",
            "train",
        ]


def test_task_runner_follows_the_executor_setting(monkeypatch):
    from prefect_dask import DaskTaskRunner

    from flows.reproduce import task_runner
    from reprolab.ops import executor

    monkeypatch.setenv(executor.WORKERS_ENV, "4")
    local = task_runner("dask", methods=3)  # a local cluster, at most one worker per method
    assert isinstance(local, DaskTaskRunner)
    assert local.cluster_kwargs["n_workers"] == 3
    assert local.cluster_kwargs["threads_per_worker"] == 1
    assert task_runner("tcp://127.0.0.1:8786", methods=2).address == "tcp://127.0.0.1:8786"
    monkeypatch.setenv(executor.ENV, "dask")
    assert executor.choice() == "dask" and executor.choice("local") == "local"
    with pytest.raises(executor.ExecutorError, match="REPROLAB_EXECUTOR"):
        executor.choice("threads")
