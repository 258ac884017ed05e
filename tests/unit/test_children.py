"""A command run by ``ops.children.run_group`` stops, with everything it started, when
the process waiting on it is terminated: the case of ``make paper`` killed while its
``dvc repro`` runs a stage."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from reprolab.ops.children import run_group

ROOT = Path(__file__).resolve().parents[2]


def _alive(pid: int) -> bool:
    """Running (a zombie no one has reaped yet counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_the_exit_status_is_the_commands(tmp_path):
    assert run_group(["sh", "-c", "exit 3"], cwd=tmp_path) == 3
    assert run_group(["sh", "-c", "true"], cwd=tmp_path) == 0


def test_a_terminated_driver_stops_the_command_and_its_children(tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    driver = (
        "import sys; from reprolab.ops.children import exit_on_signals, run_group; "
        "exit_on_signals(); "
        f"run_group(['bash', '-c', 'sleep 300 & echo $! > {pidfile}; wait'], cwd='.', grace=5)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", driver],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    deadline = time.monotonic() + 60
    while not (pidfile.is_file() and pidfile.read_text().strip()):
        assert time.monotonic() < deadline and proc.poll() is None, "the command never started"
        time.sleep(0.05)
    grandchild = int(pidfile.read_text())
    assert _alive(grandchild)
    proc.send_signal(signal.SIGTERM)  # the driver alone, as `kill <pid>` does
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    deadline = time.monotonic() + 10
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild), "the command's child outlived the driver"


def test_a_group_that_ignores_sigterm_gets_sigkill_after_the_grace(tmp_path):
    from reprolab.ops.children import stop_group

    proc = subprocess.Popen(
        ["bash", "-c", "trap '' TERM; sleep 300 & wait; sleep 300"],
        cwd=tmp_path,
        start_new_session=True,
    )
    time.sleep(0.3)
    t0 = time.monotonic()
    stop_group(proc, grace=1.0)
    assert proc.poll() == -signal.SIGKILL  # the leader ignored SIGTERM
    assert 1.0 <= time.monotonic() - t0 < 15
    # SIGKILL is delivered asynchronously: on a loaded machine a member may still be
    # listed for a moment after stop_group returns, so wait (bounded) for it to go
    deadline = time.monotonic() + 10
    while (left := _group_members(proc.pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left, f"members of the group outlived the SIGKILL: {left}"


def _group_members(pgid: int) -> list[int]:
    """The live processes of group ``pgid`` (zombies count as gone)."""
    members = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]
    return [pid for pid in members if _pgid(pid) == pgid and _alive(pid)]


def _pgid(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[2])
    except (FileNotFoundError, IndexError, ValueError):
        return None
