"""The preloaded stage worker (reprolab.worker): a stage run through it behaves exactly
like one run in-process (exit code, stdout, stderr, outputs), a missing, dead or stale
worker means in-process, and signals and the client's death reach the stage.

The fast tests start a worker that preloads almost nothing (``REPROLAB_WORKER_PRELOAD``):
what is preloaded changes how fast a stage starts, not what it does. A test-only
``sitecustomize`` (on ``PYTHONPATH`` of worker and clients alike) uses the worker's
``reprolab_stage_child`` hook to record the stage's pid and, when asked, to sleep, so
that signals and kills can be aimed at a running stage. Every test stops its worker.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from reprolab import worker
from tests.conftest import OWN_WORKER, ROOT, copy_project, tool_env

HOOK = """
import os, time

def reprolab_stage_child(argv):
    path = os.environ.get("WORKER_TEST_PIDFILE")
    if path:
        with open(path + ".tmp", "w") as fh:
            fh.write(str(os.getpid()))
        os.replace(path + ".tmp", path)
    if os.environ.get("WORKER_TEST_SLEEP"):
        time.sleep(float(os.environ["WORKER_TEST_SLEEP"]))
    if os.environ.get("WORKER_TEST_EXIT"):
        os._exit(int(os.environ["WORKER_TEST_EXIT"]))
"""


@pytest.fixture
def mini(tmp_path: Path) -> Path:
    """A project folder with what `check` and a stage's argument checks read."""
    root = tmp_path / "proj"
    root.mkdir()
    for name in ("params.yaml", "dvc.yaml", "mlflow.env", "requirements.lock"):
        shutil.copy2(ROOT / name, root / name)
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(HOOK)
    return root


def env_for(root: Path, **extra: str) -> dict[str, str]:
    return tool_env(
        {
            **OWN_WORKER,  # each test starts its project's own worker
            "PYTHONPATH": str(root.parent / "hook"),
            "REPROLAB_WORKER_PRELOAD": "yaml",
            "REPROLAB_WORKER_IDLE": "120",
            "WORKER_TEST_PIDFILE": str(root.parent / "stage.pid"),
            **extra,
        }
    )


def cli(root: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "reprolab", *args],
        cwd=root,
        env=env_for(root, **extra),
        capture_output=True,
        text=True,
        timeout=120,
    )


def popen(root: Path, *args: str, **extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "reprolab", *args],
        cwd=root,
        env=env_for(root, **extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def stage_pid(root: Path, timeout: float = 30.0) -> int:
    path = root.parent / "stage.pid"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.is_file():
            return int(path.read_text())
        time.sleep(0.02)
    raise AssertionError("the stage process never started in the worker")


def gone(pid: int, timeout: float) -> bool:
    """Whether ``pid`` has exited (a zombie not yet reaped by init counts as exited)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except (FileNotFoundError, ProcessLookupError):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def requests(root: Path) -> int:
    info = worker.status(str(root))
    assert info is not None, "no worker running"
    return info["requests"]


@pytest.fixture
def running(mini: Path):
    """``mini`` with a started worker; stopped (or killed) afterwards, whatever happens."""
    proc = cli(mini, "worker", "start")
    assert proc.returncode == 0, proc.stderr
    info = worker.status(str(mini))
    assert info is not None
    try:
        yield mini
    finally:
        cli(mini, "worker", "stop")
        if not gone(info["pid"], 5):
            with contextlib.suppress(ProcessLookupError):
                os.kill(info["pid"], signal.SIGKILL)


def test_exit_code_and_stderr_come_through_the_worker(running: Path) -> None:
    before = requests(running)
    via = cli(running, "train", "nosuch")
    assert requests(running) == before + 1, "the command did not go through the worker"
    here = cli(running, "train", "nosuch", REPROLAB_WORKER="off")
    assert via.returncode == here.returncode == 2
    assert "unknown method 'nosuch'" in via.stderr
    assert (via.stdout, via.stderr) == (here.stdout, here.stderr)
    usage = cli(running, "train")  # argparse's own exit
    assert usage.returncode == 2 and "usage: reprolab" in usage.stderr


def test_check_prints_the_same_through_the_worker(running: Path) -> None:
    via = cli(running, "check")
    here = cli(running, "check", REPROLAB_WORKER="off")
    assert (via.returncode, via.stdout, via.stderr) == (here.returncode, here.stdout, here.stderr)
    assert requests(running) >= 1


def test_no_or_dead_socket_runs_in_process(mini: Path) -> None:
    sock_path = Path(worker.socket_path(str(mini)))
    sock_path.parent.mkdir(parents=True, exist_ok=True)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(sock_path))  # bound, never listening: what a killed worker leaves
    dead.close()
    proc = cli(mini, "check")
    assert proc.returncode == 0 and proc.stdout.startswith("params.yaml OK"), proc.stderr
    assert not (mini.parent / "stage.pid").exists()
    sock_path.unlink()
    sock_path.write_text("not a socket")
    proc = cli(mini, "check")
    assert proc.returncode == 0 and proc.stdout.startswith("params.yaml OK"), proc.stderr
    assert cli(mini, "worker", "status").returncode == 3


def test_stale_worker_runs_in_process_and_exits(running: Path) -> None:
    pid = worker.status(str(running))["pid"]
    lock = running / "requirements.lock"
    lock.write_text(lock.read_text() + "\n# changed\n")
    proc = cli(running, "check")
    assert proc.returncode == 0 and proc.stdout.startswith("params.yaml OK"), proc.stderr
    assert not (running.parent / "stage.pid").exists(), "a stale worker ran the stage"
    assert gone(pid, 5), "a stale worker kept running"


def test_other_interpreter_settings_run_in_process(running: Path) -> None:
    before = requests(running)
    proc = subprocess.run(
        [sys.executable, "-W", "ignore", "-m", "reprolab", "list"],
        cwd=running,
        env=env_for(running),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and "ensloss" in proc.stdout, proc.stderr
    assert requests(running) == before, "a client with other -W options used the worker"


def test_killing_the_client_ends_the_stage(running: Path) -> None:
    client = popen(running, "check", WORKER_TEST_SLEEP="60")
    pid = stage_pid(running)
    client.kill()
    client.communicate(timeout=10)
    assert gone(pid, 10), "the stage outlived its killed client"


def test_sigint_reaches_the_stage(running: Path) -> None:
    client = popen(running, "check", WORKER_TEST_SLEEP="60")
    stage_pid(running)
    client.send_signal(signal.SIGINT)
    _, err = client.communicate(timeout=15)
    assert client.returncode == -signal.SIGINT
    assert "KeyboardInterrupt" in err


def test_concurrent_clients_run_concurrently(running: Path) -> None:
    t0 = time.perf_counter()
    clients = [
        popen(running, "check", WORKER_TEST_SLEEP="2", WORKER_TEST_EXIT="7", WORKER_TEST_PIDFILE="")
        for _ in range(3)
    ]
    results = [c.communicate(timeout=30) for c in clients]
    elapsed = time.perf_counter() - t0
    assert all(c.returncode == 7 for c in clients), results
    assert elapsed < 5.5, f"3 x 2 s stages took {elapsed:.1f} s: served one at a time"
    assert requests(running) == 3


def test_stop_and_status(running: Path) -> None:
    assert cli(running, "worker", "status").returncode == 0
    assert cli(running, "worker", "start").stdout.startswith("reprolab worker already running")
    assert cli(running, "worker", "stop").returncode == 0
    assert cli(running, "worker", "status").returncode == 3
    assert not Path(worker.socket_path(str(running))).exists()


def test_idle_worker_exits(mini: Path) -> None:
    proc = cli(mini, "worker", "start", "--idle", "1")
    assert proc.returncode == 0, proc.stderr
    pid = worker.status(str(mini))["pid"]
    try:
        assert gone(pid, 10), "the worker ignored its idle timeout"
    finally:
        if not gone(pid, 0):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _canonical(value):
    """A checkpoint's content without torch.save's per-file random serialization id."""
    import torch

    if isinstance(value, torch.Tensor):
        t = value.detach().cpu().contiguous()
        return (
            "tensor",
            str(t.dtype),
            tuple(t.shape),
            hashlib.sha256(t.numpy().tobytes()).hexdigest(),
        )
    if isinstance(value, dict):
        return {k: _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value


def _digests(folder: Path) -> dict[str, object]:
    import torch

    out: dict[str, object] = {}
    for p in sorted(folder.rglob("*")):
        if not p.is_file():
            continue
        rel = str(p.relative_to(folder))
        if p.suffix in (".pt", ".ckpt"):
            out[rel] = _canonical(torch.load(p, map_location="cpu", weights_only=False))
        else:
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.mark.pipeline
@pytest.mark.slow  # the fast tier checks the same on a whole repro (tests/smoke/test_determinism.py)
def test_stage_outputs_identical_through_the_worker(tmp_path: Path) -> None:
    """A real chain (EnsLoss, tiny) with the real preload: the same outputs either way
    (byte for byte, except that a checkpoint is compared by content: torch.save writes
    a random serialization id into every file, in-process too)."""
    project = copy_project(tmp_path / "project")
    env = {**OWN_WORKER, "REPROLAB_THREADS": "1"}
    start = subprocess.run(
        [sys.executable, "-m", "reprolab", "worker", "start"],
        cwd=project,
        env=tool_env(env),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert start.returncode == 0, start.stderr
    info = worker.status(str(project))
    digests = {}
    try:
        assets = (yaml.safe_load((project / "params.yaml").read_text()) or {}).get("assets") or {}
        for name in assets:  # shared inputs, built once (in-process)
            proc = subprocess.run(
                [sys.executable, "-m", "reprolab", "asset", name],
                cwd=project,
                env=tool_env({**env, "REPROLAB_WORKER": "off"}),
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert proc.returncode == 0, proc.stderr[-3000:]
        for mode in ("on", "off"):
            for stage in ("prepare", "train"):
                proc = subprocess.run(
                    [sys.executable, "-m", "reprolab", stage, "ensloss"],
                    cwd=project,
                    env=tool_env({**env, "REPROLAB_WORKER": mode}),
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                assert proc.returncode == 0, proc.stderr[-3000:]
            digests[mode] = {
                kind: _digests(project / "data" / kind / "ensloss")
                for kind in ("prepared", "checkpoints")
            }
            if mode == "on":
                assert worker.status(str(project))["requests"] == 2
                shutil.rmtree(project / "data" / "prepared")
                shutil.rmtree(project / "data" / "checkpoints")
                shutil.rmtree(project / "data" / ".partial", ignore_errors=True)
    finally:
        subprocess.run(
            [sys.executable, "-m", "reprolab", "worker", "stop"],
            cwd=project,
            env=tool_env(OWN_WORKER),
            capture_output=True,
            timeout=60,
        )
        if info and not gone(info["pid"], 5):
            with contextlib.suppress(ProcessLookupError):
                os.kill(info["pid"], signal.SIGKILL)
    assert digests["on"]["prepared"], "prepare wrote nothing"
    assert digests["on"] == digests["off"]
