"""Child processes that stop with the process that started them.

``make paper`` waits on ``dvc repro``, which starts one stage process after another. A
terminated driver (``kill``, a closed terminal) would leave that chain running on its
own, still writing into the run's copy; :func:`run_group` runs a command in a process
group of its own and, when the wait is interrupted, stops the whole group.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Sequence


def run_group(cmd: Sequence[str], *, cwd, env=None, grace: float = 30.0) -> int:
    """Run ``cmd`` in a new process group and return its exit status. If the wait is
    interrupted (Ctrl-C, or SIGTERM / SIGHUP turned into ``SystemExit`` by
    :func:`exit_on_signals`), the group (the command and every process it started) gets
    SIGTERM, SIGKILL after ``grace`` seconds if some are left, and the interruption goes
    on. (A SIGKILLed caller cannot do this: its children then run to their end.)"""
    proc = subprocess.Popen(list(cmd), cwd=cwd, env=env, start_new_session=True)
    try:
        return proc.wait()
    except BaseException:
        stop_group(proc, grace)
        raise


def stop_group(proc: subprocess.Popen, grace: float = 30.0) -> None:
    """SIGTERM to ``proc``'s process group; SIGKILL to what is left of the group after
    ``grace`` seconds (the leader reaped, the rest gone, or the time up)."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if proc.poll() is not None and not _group_left(proc.pid):
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)


def _group_left(pgid: int) -> bool:
    """Whether a process of group ``pgid`` is still there."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def exit_on_signals() -> None:
    """In the main thread: SIGTERM and SIGHUP raise ``SystemExit(128 + signal)``, so that
    the cleanup on the way out (:func:`run_group`'s) runs as it does for Ctrl-C."""

    def _exit(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, _exit)
    signal.signal(signal.SIGHUP, _exit)
