"""One flow run at a time on a workspace (dvcstate.workspace_lock): a second run waits,
saying who holds it, and starts when the holder ends; a killed holder frees it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from reprolab.ops import dvcstate
from tests.conftest import ROOT

HOLDER = """
import sys, time
from pathlib import Path
from reprolab.ops import dvcstate
with dvcstate.workspace_lock(Path(sys.argv[1]), "nightly run A"):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _hold(root, seconds: float) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_run_waits_for_the_first_and_says_for_whom(tmp_path):
    holder = _hold(tmp_path, 1.5)
    said: list[str] = []
    t0 = time.monotonic()
    with dvcstate.workspace_lock(tmp_path, "run B", said.append):
        assert time.monotonic() - t0 > 1.0  # B got the workspace only after A's hold
        holder.wait(timeout=30)
        held = (tmp_path / dvcstate.WORKSPACE_LOCK).read_text()
        assert '"holder": "run B"' in held
    assert "held by nightly run A" in said[0] and f"pid {holder.pid}" in said[0]
    assert said[1].startswith("the workspace is free after")
    # free again: the next run starts at once, with nothing to say
    quiet: list[str] = []
    with dvcstate.workspace_lock(tmp_path, "run C", quiet.append):
        pass
    assert quiet == []


def test_a_killed_holder_frees_the_workspace(tmp_path):
    holder = _hold(tmp_path, 600)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=30)
    t0 = time.monotonic()
    said: list[str] = []
    with dvcstate.workspace_lock(tmp_path, "run B", said.append):
        pass
    assert time.monotonic() - t0 < 5 and said == []
