"""Shared fixtures: a throw-away copy of the project for tests that run the pipeline."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import flows  # noqa: F401  (Prefect's ephemeral server start-up timeout: flows/__init__.py)
from reprolab.ops import portable

# The kernels every `python -m reprolab` process dispatches to (portable by default,
# src/reprolab/ops/portable.py), set before any test computes in-process with torch.
portable.apply()

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

# Small enough for seconds per stage, large enough that every code path runs.
TINY_ENSLOSS = {
    "datasets": ["digits"],
    "n_pairs": 2,
    "max_rows": 300,
    "epochs": 3,
    "hidden": 16,
    "quantization": ["int8_dynamic", "rtn_w4a4", "bitdgdm_w4a4"],
}


# One preloaded stage worker (src/reprolab/ops/worker.py) per pytest process, shared by every
# project copy through REPROLAB_WORKER_SOCKET: the copies' stage processes then skip
# ~3 s of imports each (a two-method tiny `dvc repro` takes 42 s instead of 75 s). It is
# started on first use and stopped when the session ends. Tests of the in-process path
# pass REPROLAB_WORKER=off; tests of the worker itself pass OWN_WORKER (their own
# project's socket). REPROLAB_TEST_WORKER=off runs the whole suite without it.
SOCKET_ENV = "REPROLAB_WORKER_SOCKET"
OWN_WORKER = {SOCKET_ENV: ""}
_shared_worker: dict[str, Path] = {}


def shared_worker_socket() -> str | None:
    """The shared worker's socket, starting the worker if this process has none yet;
    None when it is turned off or cannot start (stages then run in-process)."""
    if os.environ.get("REPROLAB_TEST_WORKER", "on").lower() in ("off", "0", "no", "false"):
        return None
    if "root" not in _shared_worker:
        import tempfile

        # a minimal project root: the worker's lock, pid file and log live there
        root = Path(tempfile.mkdtemp(prefix="reprolab-test-worker-"))
        (root / "params.yaml").write_text("{}\n")
        (root / "dvc.yaml").write_text("stages: {}\n")
        _shared_worker["root"] = root
        _shared_worker["socket"] = root / "w.sock"
        env = _base_env()
        env[SOCKET_ENV] = str(root / "w.sock")
        proc = subprocess.run(
            [sys.executable, "-m", "reprolab", "worker", "start", "--idle", "3600"],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        _shared_worker["ok"] = proc.returncode == 0
        if not _shared_worker["ok"]:
            print(f"shared stage worker did not start ({proc.stderr[-2000:]})", file=sys.stderr)
    return str(_shared_worker["socket"]) if _shared_worker["ok"] else None


def stop_shared_worker() -> None:
    root = _shared_worker.pop("root", None)
    if root is None:
        return
    env = _base_env()
    env[SOCKET_ENV] = str(_shared_worker.pop("socket"))
    subprocess.run(
        [sys.executable, "-m", "reprolab", "worker", "stop"],
        cwd=root,
        env=env,
        capture_output=True,
        timeout=60,
    )
    shutil.rmtree(root, ignore_errors=True)


def pytest_collection_modifyitems(config, items) -> None:
    """The modules that run real DVC / Prefect / MLflow (marked ``pipeline``: tens of
    seconds to minutes each) go first, the rest keep their order after them. `make test`
    hands whole modules to its two workers in this order (``--dist loadscope
    --no-loadscope-reorder``; without the flag xdist sorts modules by their number of
    tests, which put the one-test pipeline modules last), so the long ones start early
    and the many short unit modules even the workers out at the end."""
    heavy = {item.path for item in items if item.get_closest_marker("pipeline")}
    items.sort(key=lambda item: item.path not in heavy)  # stable: order kept within


@pytest.fixture(scope="session", autouse=True)
def _shared_stage_worker():
    """Stops this process's shared stage worker at the end of the session."""
    yield
    stop_shared_worker()


def tool_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a tool the tests start (DVC, Prefect, MLflow, a stage): telemetry
    off, no inherited project root or tracking URI, the shared stage worker's socket
    (see above) unless ``extra`` names another or turns the worker off."""
    extra = extra or {}
    env = _base_env()
    if SOCKET_ENV not in extra and extra.get("REPROLAB_WORKER", "on") != "off":
        shared = shared_worker_socket()
        if shared:
            env[SOCKET_ENV] = shared
    env.update(extra)
    return env


def _base_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(
        {
            "DVC_NO_ANALYTICS": "1",
            "DO_NOT_TRACK": "1",
            "MLFLOW_DISABLE_TELEMETRY": "true",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.pop("REPROLAB_ROOT", None)
    env.pop("MLFLOW_TRACKING_URI", None)
    env.pop(SOCKET_ENV, None)
    return env


def run(cmd: list[str], cwd: Path, check: bool = True, env: dict | None = None, timeout: int = 900):
    """Run a command in the project copy; on failure show its output."""
    proc = subprocess.run(
        cmd, cwd=cwd, env=tool_env(env), capture_output=True, text=True, timeout=timeout
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(cmd)} exited {proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}"
            f"\n--- stderr\n{proc.stderr[-4000:]}"
        )
    return proc


# Methods of a project copy. Whole-pipeline tests (DVC, Prefect, MLflow, resume, faults)
# prove the machinery, which is the same for every method, so they run one or two; the
# contract test (tests/contract) is what runs every registered method.
DEFAULT_METHODS = ("ensloss",)  # cheap, a network: every stage does real work
# The shared reproduced copy: a network method with quantization (EnsLoss, three schemes)
# and one whose trained object is not a network (quantization does not apply), so the
# report, DVC's per-method fan-out and MLflow see two methods of both kinds.
PIPELINE_METHODS = ("ensloss", "dp_noise")


def tiny_params(params: dict, methods, ensloss: dict | None = None) -> dict:
    """``params`` (as read from params.yaml) cut down to ``methods``, each at the tiny
    config its spec declares for tests (``SPEC.test_overrides``; EnsLoss at
    ``ensloss``, default TINY_ENSLOSS), and to the shared assets those methods read."""
    from reprolab import registry

    methods = list(dict.fromkeys(methods))
    for slug in methods:
        registry.check_slug(slug)
    sections = params.get("methods") or {}
    kept = {}
    for slug in methods:
        section = dict(sections.get(slug) or {})
        if slug == "ensloss":
            section["smoke"] = dict(TINY_ENSLOSS if ensloss is None else ensloss)
        else:
            section["smoke"] = dict(registry.get(slug).test_overrides)
        section.setdefault("paper", {})
        kept[slug] = section
    out = {**params, "profile": "smoke", "methods": kept}
    if "assets" in params:  # shared assets: only those the kept methods read
        wanted = {name for slug in methods for name in getattr(registry.get(slug), "assets", ())}
        assets = params["assets"] or {}
        out["assets"] = {k: v for k, v in assets.items() if k in wanted}
        if not out["assets"] and assets:  # dvc.yaml's assets@ foreach needs one entry
            first = next(iter(assets))
            out["assets"] = {first: assets[first]}
    return out


def copy_project(
    dest: Path, ensloss: dict | None = None, *, methods: tuple[str, ...] = DEFAULT_METHODS
) -> Path:
    """Copy the project's files (tracked and new, not ignored) into ``dest`` as a fresh
    git repo with one commit, params.yaml cut down to ``methods`` (default: EnsLoss
    only) at their tiny test configs (see ``tiny_params``): dvc.yaml's ``foreach`` then
    has stages for those methods only."""
    from reprolab.ops.scratch import copy_project as copy

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    copy(ROOT, dest, tiny_params(params, methods, ensloss), link_raw=False)
    return dest


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A fresh tiny copy of the project with EnsLoss only (nothing computed yet)."""
    return copy_project(tmp_path / "project")


#: in the reproduced copy: how its stages ran, "worker" or "in-process"
BUILT_BY = Path(".reprolab") / "test-built-by"


def _worker_requests() -> int:
    """Requests the shared stage worker has served so far (0 without one)."""
    from reprolab.ops import worker

    sock = shared_worker_socket()
    reply = worker._request(sock, {"op": "ping"}) if sock else None
    return int(reply["requests"]) if reply else 0


def _build_reproduced(root: Path) -> None:
    copy_project(root, methods=PIPELINE_METHODS)
    before = _worker_requests()
    run(["dvc", "repro"], root)
    (root / BUILT_BY).parent.mkdir(exist_ok=True)
    (root / BUILT_BY).write_text("worker" if _worker_requests() > before else "in-process")


@pytest.fixture(scope="session")
def reproduced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny copy of PIPELINE_METHODS on which `dvc repro` has run once (shared by
    every test that reads a reproduced project; treat as read-only, copy to change).

    Under pytest-xdist (``make test`` runs two workers) the first worker that needs it
    builds it in the run's shared temporary folder, under a file lock, and the other
    reuses it: the pipeline behind it runs once per test run, not once per worker."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        root = tmp_path_factory.mktemp("reproduced") / "project"
        _build_reproduced(root)
        return root
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp().parent / "reproduced"  # one per test run
    root, done = shared / "project", shared / "done"
    with FileLock(str(shared) + ".lock"):
        if not done.is_file():
            shutil.rmtree(shared, ignore_errors=True)  # what a failed attempt left
            _build_reproduced(root)
            done.write_text("ok")
    return root
