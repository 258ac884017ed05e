"""The preloaded stage worker (reprolab.ops.worker): a stage run through it behaves exactly
like one run in-process (exit code, stdout, stderr, outputs), a missing, dead or stale
worker, or one that refuses to fork (CUDA initialised in it), means in-process, and
signals and the client's death reach the stage. Also: the one router of the operations
commands, and the layering of reprolab.ops.

The fast tests start a worker that preloads almost nothing (``REPROLAB_WORKER_PRELOAD``):
what is preloaded changes how fast a stage starts, not what it does. A test-only
``sitecustomize`` (on ``PYTHONPATH`` of worker and clients alike) uses the worker's
``reprolab_stage_child`` hook to record the stage's pid and, when asked, to sleep, so
that signals and kills can be aimed at a running stage. A test-only ``fake_cuda`` module,
preloaded by the worker where a test asks, stands in for a torch whose CUDA is
initialised while ``WORKER_TEST_CUDA_FLAG`` names an existing file. Every test stops its
worker.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
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

from reprolab.ops import worker
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


FAKE_CUDA = """
import os, sys, types

def _initialized():
    flag = os.environ.get("WORKER_TEST_CUDA_FLAG", "")
    return bool(flag) and os.path.exists(flag)

torch = types.ModuleType("torch")
torch.cuda = types.SimpleNamespace(is_initialized=_initialized)
sys.modules["torch"] = torch
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
    (hook / "fake_cuda.py").write_text(FAKE_CUDA)
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


def test_mode_reads_the_variable_as_documented() -> None:
    assert worker.mode({}) == "on"  # unset: use a running worker
    for off in ("off", " No ", "0", "FALSE"):
        assert worker.mode({worker.MODE_ENV: off}) == "off"
    assert worker.mode({worker.MODE_ENV: "auto"}) == "auto"


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
    status = cli(mini, "worker", "status")
    assert status.returncode == 0 and "not running" in status.stdout, status.stderr


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


def test_other_kernel_pins_run_in_process(running: Path) -> None:
    """A worker started with portable kernels (the default) has imported torch with
    them: a stage asked for with the CPU's own (REPROLAB_PORTABLE=0) runs in-process."""
    before = requests(running)
    proc = cli(running, "machine", REPROLAB_PORTABLE="0")
    assert proc.returncode == 0, proc.stderr
    assert requests(running) == before, "a client without the pins used a portable worker"
    assert json.loads(proc.stdout)["kernels"]["REPROLAB_PORTABLE"] == "0"
    assert cli(running, "machine").returncode == 0
    assert requests(running) == before + 1, "a client like the worker did not use it"


def test_killing_the_client_ends_the_stage(running: Path) -> None:
    client = popen(running, "check", WORKER_TEST_SLEEP="60")
    pid = stage_pid(running)
    client.kill()
    client.communicate(timeout=10)
    assert gone(pid, 10), "the stage outlived its killed client"


def test_a_stage_killed_from_outside_runs_again_in_process(running: Path) -> None:
    client = popen(running, "check", WORKER_TEST_SLEEP="60")
    os.kill(stage_pid(running), signal.SIGKILL)  # kill -9 or the OOM killer, not the client
    out, err = client.communicate(timeout=60)
    assert client.returncode == 0, err
    assert "was killed (SIGKILL)" in err and "again in-process" in err
    assert "Traceback" not in err
    assert out.startswith("params.yaml OK")  # the in-process run's own output


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
    status = cli(running, "worker", "status")
    assert status.returncode == 0 and "not running" in status.stdout, status.stderr
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


# ---------------------------------------------------------------- staleness digest


def test_staleness_digest_follows_the_locks_and_the_code_not_comments(tmp_path: Path) -> None:
    root = tmp_path
    lock, nodeps = root / "requirements.lock", root / "requirements-nodeps.lock"
    lock.write_text("numpy==2.2.6\ntorch==2.7.0\n")
    nodeps.write_text("dp-accounting==0.4.4\n")
    source = tmp_path / "module.py"
    code = 'def scale(x):\n    """Twice x."""\n    return 2 * x\n'
    source.write_text(code)
    sources = [str(source)]

    def digest() -> str:
        return worker.staleness_digest(str(root), sources)

    base = digest()
    assert digest() == base
    source.write_text("# a new comment\n" + code.replace("2 * x", "2 * x  # why twice") + "\n\n")
    assert digest() == base, "a comment or a blank line made the worker stale"
    source.write_text(code.replace("2 * x", "3 * x"))
    assert digest() != base, "a code edit went unseen"
    source.write_text(code)
    assert digest() == base
    lock.write_text("numpy==2.2.6\ntorch==2.7.1\n")
    assert digest() != base, "a requirements.lock edit went unseen"
    lock.write_text("numpy==2.2.6\ntorch==2.7.0\n")
    assert digest() == base
    nodeps.write_text("dp-accounting==0.4.5\n")
    assert digest() != base, "a requirements-nodeps.lock edit went unseen"
    nodeps.unlink()
    assert digest() != base, "a removed lock file went unseen"


def test_staleness_digest_is_cached_until_a_stat_moves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files older than the racy window are trusted by their stat: the sources are not
    read again until one is written (ctime moves with every write)."""
    source = tmp_path / "module.py"
    source.write_text("x = 1\n")
    (tmp_path / "requirements.lock").write_text("numpy==2.2.6\n")
    later = time.time_ns() + int(60e9)  # every input looks old enough to trust its stat
    monkeypatch.setattr(worker.time, "time_ns", lambda: later)
    reads: list[str] = []
    content = worker._content
    monkeypatch.setattr(
        worker, "_content", lambda kind, path: reads.append(path) or content(kind, path)
    )
    first = worker.staleness_digest(str(tmp_path), [str(source)])
    assert str(source) in reads
    reads.clear()
    assert worker.staleness_digest(str(tmp_path), [str(source)]) == first
    assert reads == [], "an unchanged input was read again"
    source.write_text("x = 22\n")
    assert worker.staleness_digest(str(tmp_path), [str(source)]) != first


def test_the_server_hashes_the_reprolab_code_it_runs_itself() -> None:
    sources = worker.server_sources()
    package = Path(worker.__file__).resolve().parents[1]
    assert str(Path(worker.__file__).resolve()) in sources
    assert str(package / "core" / "fingerprint.py") in sources
    assert all(Path(s).is_relative_to(package) for s in sources)


# ---------------------------------------------------------------- CUDA


def test_cuda_refusal_asks_a_loaded_torch_only(monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert worker.cuda_refusal() is None  # torch not loaded: not imported to ask
    assert "torch" not in sys.modules
    fake = types.ModuleType("torch")
    fake.cuda = types.SimpleNamespace(is_initialized=lambda: False)
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert worker.cuda_refusal() is None
    fake.cuda.is_initialized = lambda: True
    assert "CUDA is initialised" in (worker.cuda_refusal() or "")
    assert "CUDA is initialised" in (worker._fork_safe() or ""), "a CUDA worker would serve"


def _start_fake_cuda_worker(root: Path, flag: Path) -> subprocess.CompletedProcess:
    return cli(
        root,
        "worker",
        "start",
        REPROLAB_WORKER_PRELOAD="yaml,fake_cuda",
        WORKER_TEST_CUDA_FLAG=str(flag),
    )


def test_worker_refuses_to_fork_once_cuda_is_initialised(mini: Path) -> None:
    """CUDA initialised in the server after it started: the client is told why and runs
    the stage in-process, and the worker exits (it could never fork again)."""
    flag = mini.parent / "cuda-initialised"
    start = _start_fake_cuda_worker(mini, flag)
    assert start.returncode == 0, start.stderr
    pid = worker.status(str(mini))["pid"]
    try:
        flag.write_text("")
        proc = cli(mini, "check", WORKER_TEST_CUDA_FLAG=str(flag))
        here = cli(mini, "check", REPROLAB_WORKER="off")
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == here.stdout, "the in-process fallback printed something else"
        assert "CUDA is initialised in the worker process" in proc.stderr
        assert "running it in-process" in proc.stderr
        assert not (mini.parent / "stage.pid").exists(), "the worker forked the stage"
        assert gone(pid, 5), "a worker that cannot fork kept running"
        log = (mini / worker.STATE_DIR / "worker.log").read_text()
        assert "exiting (CUDA is initialised" in log
    finally:
        if not gone(pid, 0):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_worker_with_cuda_initialised_at_preload_does_not_serve(mini: Path) -> None:
    flag = mini.parent / "cuda-initialised"
    flag.write_text("")
    start = _start_fake_cuda_worker(mini, flag)
    assert start.returncode == 1
    assert "cannot fork safely after preloading: CUDA is initialised" in start.stderr
    assert worker.status(str(mini)) is None
    proc = cli(mini, "check")
    assert proc.returncode == 0 and proc.stdout.startswith("params.yaml OK"), proc.stderr


# ---------------------------------------------------------------- router, layering


def test_operations_commands_have_one_router(mini: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`python -m reprolab` routes worker and mlflow-server (reprolab.ops.COMMANDS); the
    stage router lists them and forwards to the same function, arguments untouched."""
    from reprolab import cli as stage_cli
    from reprolab import ops

    help_text = cli(mini, "--help", REPROLAB_WORKER="off")
    assert help_text.returncode == 0
    for name in ops.COMMANDS:
        assert name in help_text.stdout
    status = cli(mini, "worker", "status")  # no worker: routed, not a stage
    assert status.returncode == 0 and "not running" in status.stdout, status.stderr
    worker_help = cli(mini, "worker", "--help")
    assert worker_help.returncode == 0 and "usage: reprolab worker" in worker_help.stdout
    calls: list[list[str]] = []
    monkeypatch.setattr(worker, "command", lambda argv: calls.append(argv) or 5)
    assert stage_cli.main(["worker", "start", "--idle", "3"]) == 5
    assert stage_cli.main(["worker", "--help"]) == 5
    assert calls == [["start", "--idle", "3"], ["--help"]]


def _reprolab_imports(path: Path) -> set[str]:
    """The reprolab modules a file imports (``from reprolab import x`` as reprolab.x)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("reprolab"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("reprolab"):
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def test_only_the_train_and_evaluate_stages_import_ops_and_only_the_executor() -> None:
    """The core, contract, config, registry, paths and the stages import no ops module,
    except the executor choice, process pool and Dask client of the train and evaluate
    stages (reprolab.ops.executor, which imports nothing of reprolab but the core's
    count of usable cores)."""
    src = ROOT / "src" / "reprolab"
    lower = [src / f"{m}.py" for m in ("contract", "config", "registry", "paths")]
    lower += sorted((src / "core").rglob("*.py")) + sorted((src / "stages").rglob("*.py"))
    found = {
        (str(path.relative_to(src)), name)
        for path in lower
        for name in _reprolab_imports(path)
        if name == "reprolab.ops" or name.startswith("reprolab.ops.")
    }
    assert found == {
        ("stages/train.py", "reprolab.ops.executor"),
        ("stages/evaluate.py", "reprolab.ops.executor"),
    }
    assert _reprolab_imports(src / "ops" / "executor.py") == {
        "reprolab.core.threads.available_cores"
    }
    assert _reprolab_imports(src / "ops" / "__init__.py") == set()
