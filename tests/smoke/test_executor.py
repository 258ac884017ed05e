"""Where units run (REPROLAB_EXECUTOR): the train stage of a real method on the default
pool of forked single-threaded processes, and on a 2-worker local Dask cluster, gives the
same checkpoints as one after another in-process; a Dask worker killed mid-unit loses and
double-counts nothing (the unit runs again elsewhere; one MLflow run per unit)."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from reprolab.ops import executor
from tests.conftest import TINY_ENSLOSS, copy_project, run

pytestmark = pytest.mark.pipeline


def _checkpoint_md5(root: Path) -> str:
    import yaml

    lock = yaml.safe_load((root / "dvc.lock").read_text())
    (out,) = lock["stages"]["train@ensloss"]["outs"]
    return out["md5"]


def test_unreachable_scheduler_and_bad_value_are_named(monkeypatch):
    monkeypatch.setenv(executor.ENV, "tcp://127.0.0.1:9")
    t0 = time.monotonic()
    with (
        pytest.raises(executor.ExecutorError, match="no Dask scheduler answers there"),
        executor.dask_client(),
    ):
        pass
    assert time.monotonic() - t0 < 30
    monkeypatch.setenv(executor.ENV, "yes please")
    with pytest.raises(executor.ExecutorError, match="expected 'local', 'pool'"):
        executor.choice()
    monkeypatch.setenv(executor.ENV, "local")
    with pytest.raises(executor.ExecutorError, match="no Dask client"), executor.dask_client():
        pass
    monkeypatch.setenv(executor.POOL_ENV, "two")
    with pytest.raises(executor.ExecutorError, match="REPROLAB_POOL_WORKERS='two'"):
        executor.pool_workers()


def test_the_default_is_a_pool_where_there_is_more_than_one_core(monkeypatch):
    monkeypatch.delenv(executor.ENV, raising=False)
    monkeypatch.setattr(executor, "available_cores", lambda: 2)
    assert executor.choice() == "pool"
    monkeypatch.setattr(executor, "available_cores", lambda: 1)
    assert executor.choice() == "local"


def test_units_on_the_pool_match_in_process(tmp_path):
    """The same units, trained one after another in the stage process and on two forked
    single-threaded workers, give the same checkpoint folder (DVC's hash of it) and one
    MLflow unit run each. In-process runs on one thread here: a convolution's backward
    reduces in a thread-dependent order, so a 2-thread run differs in the last bits
    (tests/unit/test_thread_count.py bounds that)."""
    from mlflow.tracking import MlflowClient

    cfg = {**TINY_ENSLOSS, "epochs": 2, "quantization": []}
    hashes, logs = {}, {}
    for mode in ("local", "pool"):
        root = copy_project(tmp_path / mode, ensloss=cfg)
        env = {executor.ENV: mode, executor.POOL_ENV: "2", "REPROLAB_THREADS": "1"}
        proc = run(["dvc", "repro", "train@ensloss"], root, env=env)
        hashes[mode], logs[mode] = _checkpoint_md5(root), proc.stdout + proc.stderr
        # each unit records how many ran at once: a paper run's compute divides by it
        timings = json.loads((root / "data/runtime/ensloss/train.json").read_text())["units"]
        assert {t["units_side_by_side"] for t in timings.values()} == {
            2.0 if mode == "pool" else 1.0
        }
        client = MlflowClient(f"sqlite:///{root / '.mlflow' / 'mlflow.db'}")
        runs = client.search_runs(
            [client.get_experiment_by_name("ensloss").experiment_id],
            "tags.`reprolab.stage` = 'train' and tags.`reprolab.kind` = 'unit'",
            max_results=1000,
        )
        units = [r.data.tags["reprolab.unit"] for r in runs]
        assert len(units) > 2 and len(units) == len(set(units)), (mode, sorted(units))
        assert all(r.info.status == "FINISHED" for r in runs)
    assert "units on 2 single-threaded processes" in logs["pool"], logs["pool"][-2000:]
    assert "single-threaded processes" not in logs["local"]
    assert hashes["pool"] == hashes["local"]


def test_evaluation_on_the_pool_matches_in_process(tmp_path):
    """The evaluate stage's units (a quantized scheme included) on two forked workers
    give the same metrics and claims, byte for byte, as one after another in the stage
    process, from the same checkpoints; the evaluation memo keeps machine time (each
    unit's seconds over the units side by side)."""
    cfg = {**TINY_ENSLOSS, "epochs": 2, "quantization": ["int8_dynamic"]}
    outputs, logs = {}, {}
    for mode in ("local", "pool"):
        root = copy_project(tmp_path / mode, ensloss=cfg)
        env = {executor.ENV: mode, executor.POOL_ENV: "2", "REPROLAB_THREADS": "1"}
        proc = run(["dvc", "repro", "evaluate@ensloss"], root, env=env)
        logs[mode] = proc.stdout + proc.stderr
        out = root / "data/eval/ensloss"
        outputs[mode] = {name: (out / name).read_bytes() for name in ("metrics.csv", "claims.json")}
        info = json.loads((root / "data/runtime/ensloss/evaluate.json").read_text())
        assert info["units_side_by_side"] == (2.0 if mode == "pool" else 1.0)
        memo = [
            json.loads(p.read_text())
            for p in (root / "data/.cache/evaluate/ensloss").glob("*.json")
        ]
        assert memo and all(m["seconds"] > 0 for m in memo)
    assert "trained objects on 2 single-threaded processes" in logs["pool"], logs["pool"][-2000:]
    assert "trained objects on" not in logs["local"]
    assert outputs["pool"]["metrics.csv"].count(b"\n") > 10
    assert outputs["pool"] == outputs["local"]


def test_a_claim_on_wall_clock_time_keeps_evaluation_in_the_stage_process(monkeypatch):
    """lip_rcp's ``faster`` reads seconds measured in evaluate: its units are timed one
    after another; a method without such a claim gets one worker per core, never more
    than the trained objects waiting."""
    from types import SimpleNamespace

    from reprolab import registry
    from reprolab.stages import evaluate

    def Ctx(slug):  # noqa: N802 - what _pool_workers reads of a stage context
        return SimpleNamespace(spec=registry.get(slug))

    monkeypatch.setenv(executor.ENV, "pool")
    monkeypatch.setenv(executor.POOL_ENV, "2")
    assert evaluate._pool_workers(Ctx("lip_rcp"), 10) == 0
    assert evaluate._pool_workers(Ctx("ensloss"), 10) == 2
    assert evaluate._pool_workers(Ctx("ensloss"), 1) == 0
    monkeypatch.setenv(executor.POOL_ENV, "4")
    assert evaluate._pool_workers(Ctx("ensloss"), 3) == 3
    monkeypatch.setenv(executor.ENV, "local")
    assert evaluate._pool_workers(Ctx("ensloss"), 10) == 0


@pytest.mark.slow  # a Dask cluster and two trainings: ~1 min (make test-slow)
def test_units_on_dask_match_in_process_and_survive_a_killed_worker(tmp_path, monkeypatch):
    from distributed import Client, LocalCluster
    from mlflow.tracking import MlflowClient

    from reprolab.stages import run_stage

    cfg = {**TINY_ENSLOSS, "epochs": 6, "quantization": []}
    root = copy_project(tmp_path / "project", ensloss=cfg)
    run(["dvc", "repro", "train@ensloss"], root)  # in-process: the reference
    reference = _checkpoint_md5(root)

    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    client = Client(cluster)
    killed: list[str] = []

    def kill_first_busy_worker() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            busy = [w for w, tasks in client.processing().items() if tasks]
            if busy:
                pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
                os.kill(pid, signal.SIGKILL)
                killed.append(busy[0])
            time.sleep(0.05)

    try:
        monkeypatch.setenv(executor.ENV, cluster.scheduler_address)
        # the stage runs in this process: track into the copy's store, not one an
        # earlier test of this process left in the environment
        monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
        monkeypatch.chdir(root)
        killer = threading.Thread(target=kill_first_busy_worker, daemon=True)
        killer.start()
        result = run_stage("train", "ensloss", root)
        killer.join(timeout=5)
    finally:
        client.close()
        cluster.close()
    assert killed, "no worker was busy long enough to be killed"
    run(["dvc", "commit", "-f", "train@ensloss"], root)
    assert _checkpoint_md5(root) == reference  # same checkpoints as in-process

    mlflow = MlflowClient(tracking_uri=f"sqlite:///{root / '.mlflow' / 'mlflow.db'}")
    exp = mlflow.get_experiment_by_name("ensloss")
    stage_runs = mlflow.search_runs(
        [exp.experiment_id],
        filter_string="tags.`reprolab.stage` = 'train' and tags.`reprolab.kind` = 'unit'",
        max_results=1000,
    )
    names = [r.info.run_name for r in stage_runs]
    # two train stage runs (in-process, then Dask): each unit exactly once in each
    assert len(names) == 2 * result["units"] and len(set(names)) == result["units"]
    assert all(r.info.status == "FINISHED" for r in stage_runs)


def test_pool_workers_die_with_a_killed_stage_process(tmp_path):
    """SIGKILL of the stage process takes its pool's workers with it (Linux's parent-
    death signal), so none goes on training into the resume folder a rerun reads."""
    import subprocess
    import sys

    script = (
        "import os, sys, time\n"
        "from reprolab.ops import executor\n"
        "with executor.process_pool(2) as pool:\n"
        "    futures = [pool.submit(time.sleep, 120) for _ in range(2)]\n"
        "    time.sleep(3)\n"
        "    print(' '.join(str(p) for p in pool._processes), flush=True)\n"
        "    time.sleep(120)\n"
    )
    stage = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(p) for p in stage.stdout.readline().split()]
        assert len(pids) == 2 and all(_alive(p) for p in pids)
        os.kill(stage.pid, signal.SIGKILL)
        stage.wait(timeout=10)
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(p) for p in pids), "a pool worker outlived its stage process"
    finally:
        if stage.poll() is None:
            stage.kill()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"  # a zombie has exited
    except FileNotFoundError:
        return False
