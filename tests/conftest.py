"""Shared fixtures: a throw-away copy of the project for tests that run the pipeline."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

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


def tool_env(extra: dict[str, str] | None = None) -> dict[str, str]:
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
    env.update(extra or {})
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
    from reprolab.scratch import copy_project as copy

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    copy(ROOT, dest, tiny_params(params, methods, ensloss), link_raw=False)
    return dest


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A fresh tiny copy of the project with EnsLoss only (nothing computed yet)."""
    return copy_project(tmp_path / "project")


@pytest.fixture(scope="session")
def reproduced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny copy of PIPELINE_METHODS on which `dvc repro` has run once (shared by
    every test that reads a reproduced project; treat as read-only, copy to change).

    Under pytest-xdist (``make test`` runs two workers) the first worker that needs it
    builds it in the run's shared temporary folder, under a file lock, and the other
    reuses it: the pipeline behind it runs once per test run, not once per worker."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        root = tmp_path_factory.mktemp("reproduced") / "project"
        copy_project(root, methods=PIPELINE_METHODS)
        run(["dvc", "repro"], root)
        return root
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp().parent / "reproduced"  # one per test run
    root, done = shared / "project", shared / "done"
    with FileLock(str(shared) + ".lock"):
        if not done.is_file():
            shutil.rmtree(shared, ignore_errors=True)  # what a failed attempt left
            copy_project(root, methods=PIPELINE_METHODS)
            run(["dvc", "repro"], root)
            done.write_text("ok")
    return root
