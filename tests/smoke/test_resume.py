"""Acceptance: a training killed mid-run resumes from its last checkpoint on the next
`dvc repro` and ends with the same metrics as an uninterrupted run.

Two copies with identical params: one is reproduced straight through; in the other,
`dvc repro train@ensloss` is SIGKILLed (whole process group) once a unit has finished
and the next one has written its first epoch checkpoint, then `dvc repro evaluate@ensloss` finishes it.
"""

from __future__ import annotations

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


def _kill_mid_training(root: Path) -> tuple[set[str], str, int]:
    """Run `dvc repro train@ensloss` and SIGKILL its process group once at least one
    unit is finished and another has a last.ckpt. Returns (finished units, interrupted
    unit, its checkpoint's epoch)."""
    partial = root / "data" / ".partial" / "train" / "ensloss"
    log_path = root / "killed-run.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            ["dvc", "repro", "train@ensloss"],
            cwd=root,
            env=tool_env({"REPROLAB_WORKER": "off"}),  # a real SIGKILL of the stage
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
    # What the kill left behind (re-read: the kill froze the state).
    done = {p.stem for p in partial.glob("*/done/*.pt")}
    running = [p for p in partial.glob("*/resume/*/last.ckpt") if p.parent.name not in done]
    assert done and len(running) == 1, (done, running)
    epoch = int(torch.load(running[0], map_location="cpu", weights_only=True)["epoch"])
    return done, running[0].parent.name, epoch


def test_killed_training_resumes_to_identical_metrics(tmp_path: Path):
    killed = copy_project(tmp_path / "killed", RESUME_ENSLOSS)
    straight = copy_project(tmp_path / "straight", RESUME_ENSLOSS)

    finished, interrupted, epoch = _kill_mid_training(killed)
    assert epoch < RESUME_ENSLOSS["epochs"] - 1, "killed after the last epoch: nothing to resume"
    assert not (killed / "data" / "checkpoints" / "ensloss").exists()

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

    run(["dvc", "repro", "evaluate@ensloss"], straight)

    # The acceptance criterion: the same metrics table.
    a = pd.read_csv(straight / "data/eval/ensloss/metrics.csv")
    b = pd.read_csv(killed / "data/eval/ensloss/metrics.csv")
    keys = ["task", "variant", "seed", "precision", "metric"]
    a, b = a.sort_values(keys).reset_index(drop=True), b.sort_values(keys).reset_index(drop=True)
    pd.testing.assert_frame_equal(a[keys], b[keys])
    assert (a.value - b.value).abs().max() <= 1e-6, pd.concat([a, b.value], axis=1)

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
