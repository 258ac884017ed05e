"""Acceptance: a training killed mid-run resumes from its last checkpoint on the next
`dvc repro` and ends with the same metrics as an uninterrupted run.

Two copies with identical params: one is reproduced straight through; in the other,
`dvc repro train@ensloss` is SIGKILLed (whole process group) once a unit has finished
and the next one has written its first epoch checkpoint, then `dvc repro evaluate@ensloss` finishes it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
import torch

from tests.conftest import copy_project, run, tool_env

pytestmark = pytest.mark.pipeline

# 4 units (1 class pair x 2 losses x 2 seeds) of 8 epochs at batch size 4: each unit
# takes around a second, so there is time to kill one between two epochs. One
# quantization scheme: resuming is about training; evaluation only has to agree.
RESUME_ENSLOSS = {
    "datasets": ["digits"],
    "n_pairs": 1,
    "max_rows": 0,
    "epochs": 8,
    "hidden": 32,
    "batch_size": 4,
    "variants": ["ensloss", "bce"],
    "quantization": ["int8_dynamic"],
}
N_UNITS = 1 * 2 * 2
KILL_DEADLINE_S = 300


def _settled(folder: Path, quiet_s: float = 2.0, within_s: float = 60.0) -> None:
    """Wait until nothing under ``folder`` changes for ``quiet_s`` (a stage served by the
    worker ends a moment after its killed client)."""

    def state():
        return sorted((str(p), p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file())

    end, last, since = time.monotonic() + within_s, None, time.monotonic()
    while time.monotonic() < end:
        now = state()
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return
        time.sleep(0.2)


def _kill_mid_training(root: Path, worker: str = "off") -> tuple[set[str], str, int]:
    """Run `dvc repro train@ensloss` and SIGKILL its process group once at least one
    unit is finished and another has a last.ckpt. Returns (finished units, interrupted
    unit, its checkpoint's epoch). ``worker`` "on": the stage runs in the shared stage
    worker (how `make run` runs), so the kill reaches its client, not the stage itself."""
    partial = root / "data" / ".partial" / "train" / "ensloss"
    log_path = root / "killed-run.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            ["dvc", "repro", "train@ensloss"],
            cwd=root,
            # "off": a real SIGKILL of the stage process itself. Units one after another,
            # so the kill leaves exactly one unit interrupted (on the default pool two
            # run at once; each resumes by the same per-unit mechanism)
            env=tool_env(
                {"REPROLAB_WORKER": "off", "REPROLAB_EXECUTOR": "local"}
                if worker == "off"
                else {"REPROLAB_EXECUTOR": "local"}
            ),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + KILL_DEADLINE_S
        while True:
            done = {p.stem for p in partial.glob("*/done/*.pt")}
            running = [p for p in partial.glob("*/resume/*/last.ckpt") if p.parent.name not in done]
            if done and running:
                os.killpg(proc.pid, signal.SIGKILL)
                break
            if proc.poll() is not None:
                pytest.fail(
                    f"train finished (exit {proc.returncode}) before it could be killed:\n"
                    + log_path.read_text()[-3000:]
                )
            if time.monotonic() > deadline:
                pytest.fail(f"no unit finished within {KILL_DEADLINE_S}s")
            time.sleep(0.01)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    _settled(partial)
    # What the kill left behind (re-read: the kill froze the state).
    done = {p.stem for p in partial.glob("*/done/*.pt")}
    running = [p for p in partial.glob("*/resume/*/last.ckpt") if p.parent.name not in done]
    assert done and len(running) == 1, (done, running)
    epoch = int(torch.load(running[0], map_location="cpu", weights_only=True)["epoch"])
    return done, running[0].parent.name, epoch


@pytest.fixture(scope="module")
def straight(tmp_path_factory) -> Path:
    """The uninterrupted run both tests compare with."""
    root = copy_project(tmp_path_factory.mktemp("straight") / "project", RESUME_ENSLOSS)
    run(["dvc", "repro", "evaluate@ensloss"], root)
    return root


def _same_metrics(straight: Path, killed: Path) -> None:
    a = pd.read_csv(straight / "data/eval/ensloss/metrics.csv")
    b = pd.read_csv(killed / "data/eval/ensloss/metrics.csv")
    keys = ["task", "variant", "seed", "precision", "metric"]
    a, b = a.sort_values(keys).reset_index(drop=True), b.sort_values(keys).reset_index(drop=True)
    pd.testing.assert_frame_equal(a[keys], b[keys])
    assert (a.value - b.value).abs().max() <= 1e-6, pd.concat([a, b.value], axis=1)


def test_two_repros_at_once_the_second_stops_and_nothing_is_damaged(tmp_path, straight):
    """A second `dvc repro` on a checkout where one runs stops at once, naming DVC's
    lock; the first finishes, and its outputs are those of the straight run."""
    root = copy_project(tmp_path / "busy", RESUME_ENSLOSS)
    log_path = root / "first.log"
    with open(log_path, "w") as log:
        first = subprocess.Popen(
            ["dvc", "repro", "evaluate@ensloss"],
            cwd=root,
            env=tool_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        partial = root / "data" / ".partial" / "train" / "ensloss"
        deadline = time.monotonic() + KILL_DEADLINE_S
        while not any(partial.glob("*/resume/*")) and first.poll() is None:
            assert time.monotonic() < deadline, log_path.read_text()[-3000:]
            time.sleep(0.02)
        t0 = time.monotonic()
        second = subprocess.run(
            ["dvc", "repro", "evaluate@ensloss"],
            cwd=root,
            env=tool_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        waited = time.monotonic() - t0
    finally:
        first.wait(timeout=KILL_DEADLINE_S)
    assert first.returncode == 0, log_path.read_text()[-3000:]
    assert second.returncode != 0 and "lock" in (second.stdout + second.stderr).lower()
    assert waited < 30, f"the second run waited {waited:.0f} s instead of stopping"
    status = run(["dvc", "status", "evaluate@ensloss"], root)
    assert "up to date" in status.stdout or not status.stdout.strip(), status.stdout
    _same_metrics(straight, root)


def test_truncated_resume_state_is_trained_again_to_identical_metrics(tmp_path, straight):
    """A cut-off last.ckpt, and a finished unit's cut-off file, are named and trained
    again (never loaded, never a crash); the metrics are those of the straight run."""
    killed = copy_project(tmp_path / "killed", RESUME_ENSLOSS)
    finished, interrupted, _ = _kill_mid_training(killed)
    partial = killed / "data" / ".partial" / "train" / "ensloss"
    last = next(partial.glob(f"*/resume/{interrupted}/last.ckpt"))
    last.write_bytes(last.read_bytes()[:100])
    victim = sorted(finished)[0]
    done = next(partial.glob(f"*/done/{victim}.pt"))
    done.write_bytes(done.read_bytes()[:100])
    resumed = run(["dvc", "repro", "evaluate@ensloss"], killed)
    log = resumed.stdout + resumed.stderr
    assert f"{last} is unreadable" in log and "training it from scratch" in log, log[-4000:]
    assert f"{done} is unreadable; training {victim} again" in log, log[-4000:]
    trained = set(re.findall(r"train@ensloss \[\d+/\d+\] (\S+): train_loss=", log))
    assert {interrupted, victim} <= trained
    assert "Traceback" not in log
    _same_metrics(straight, killed)


@pytest.mark.parametrize("worker", ["off", "on"])
def test_killed_training_resumes_to_identical_metrics(tmp_path: Path, straight, worker):
    killed = copy_project(tmp_path / "killed", RESUME_ENSLOSS)

    finished, interrupted, epoch = _kill_mid_training(killed, worker)
    assert epoch < RESUME_ENSLOSS["epochs"] - 1, "killed after the last epoch: nothing to resume"
    assert not (killed / "data" / "checkpoints" / "ensloss").exists()
    # what the killed attempt spent: its start to the last file it wrote (its last
    # checkpoint, or a temporary file of the next one the kill cut short)
    resume_dir = next((killed / "data/.partial/train/ensloss").glob(f"*/resume/{interrupted}"))
    (attempt,) = json.loads((resume_dir / "attempts.json").read_text())["attempts"]
    written = [p.stat().st_mtime for p in resume_dir.rglob("*") if p.name != "attempts.json"]
    kept_seconds = max(written) - attempt["started"]
    assert attempt["ended"] is None
    assert kept_seconds >= (resume_dir / "last.ckpt").stat().st_mtime - attempt["started"] > 0

    # Only EnsLoss's chain: the other methods' stages say nothing about resuming.
    resumed = run(["dvc", "repro", "evaluate@ensloss"], killed)
    log = resumed.stdout + resumed.stderr
    kept = set(re.findall(r"train@ensloss \[\d+/\d+\] (\S+): finished earlier, kept", log))
    assert kept == finished, log[-4000:]
    match = re.search(r"\] (\S+): resuming from \S+last\.ckpt \(epochs 0\.\.(\d+) done\)", log)
    assert match, log[-4000:]
    assert match.group(1) == interrupted and int(match.group(2)) == epoch
    assert "unreadable" not in log
    totals = {int(n) for n in re.findall(r"train@ensloss \[\d+/(\d+)\]", log)}
    assert totals == {N_UNITS}, log[-4000:]
    trained = re.findall(r"train@ensloss \[\d+/\d+\] (\S+): train_loss=", log)
    # Not everything retrained: only the interrupted unit and those never started.
    assert (
        len(trained) == N_UNITS - len(kept) and interrupted in trained and not kept & set(trained)
    )
    partial = killed / "data" / ".partial" / "train" / "ensloss"
    assert not partial.exists() or not any(partial.iterdir())  # cleaned up once done
    # The killed process's runs are closed as KILLED, none is left RUNNING.
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{killed}/.mlflow/mlflow.db")
    runs = client.search_runs([client.get_experiment_by_name("ensloss").experiment_id])
    statuses = {r.info.status for r in runs}
    assert "RUNNING" not in statuses and "KILLED" in statuses, statuses

    # The resumed unit's training time counts the epochs before the kill.
    timings = json.loads((killed / "data/runtime/ensloss/train.json").read_text())["units"]
    assert timings[interrupted]["earlier_attempts_seconds"] == pytest.approx(kept_seconds)
    assert timings[interrupted]["train_seconds"] > kept_seconds
    assert not any("earlier_attempts_seconds" in timings[u] for u in finished)

    # The acceptance criterion: the same metrics table.
    _same_metrics(straight, killed)

    # Stronger: the same weights and per-epoch history for every unit, the resumed one
    # included (its history spans the epochs before and after the kill).
    for path in sorted((straight / "data/checkpoints/ensloss").glob("*.pt")):
        ref = torch.load(path, weights_only=True)
        got = torch.load(killed / "data/checkpoints/ensloss" / path.name, weights_only=True)
        assert [h["epoch"] for h in got["history"]] == list(range(RESUME_ENSLOSS["epochs"]))
        for h_ref, h_got in zip(ref["history"], got["history"], strict=True):
            assert h_got == pytest.approx(h_ref, abs=1e-6), (path.stem, h_ref, h_got)
        for name, tensor in ref["state"].items():
            torch.testing.assert_close(got["state"][name], tensor, rtol=0, atol=1e-6)
