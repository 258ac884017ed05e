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


def copy_project(dest: Path, ensloss: dict | None = None) -> Path:
    """Copy the project's files (tracked and new, not ignored) into ``dest`` as a fresh
    git repo with one commit, params shrunk to the tiny EnsLoss config (and every other
    method to the tiny config its spec declares for tests)."""
    from reprolab import registry

    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file() and not rel.startswith("data/"):
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
    (dest / "dvc.lock").unlink(missing_ok=True)
    params = yaml.safe_load((dest / "params.yaml").read_text())
    params["profile"] = "smoke"
    for slug in registry.slugs():
        if slug != "ensloss":
            params["methods"][slug]["smoke"] = dict(registry.get(slug).test_overrides)
    params["methods"]["ensloss"]["smoke"] = dict(TINY_ENSLOSS if ensloss is None else ensloss)
    (dest / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    (dest / "data").mkdir(exist_ok=True)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "copy"]):
        subprocess.run(
            ["git", *args],
            cwd=dest,
            check=True,
            capture_output=True,
            env={
                **os.environ,
                "GIT_AUTHOR_NAME": "t",
                "GIT_AUTHOR_EMAIL": "t@t",
                "GIT_COMMITTER_NAME": "t",
                "GIT_COMMITTER_EMAIL": "t@t",
            },
        )
    return dest


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A fresh tiny copy of the project (nothing computed yet)."""
    return copy_project(tmp_path / "project")


@pytest.fixture(scope="session")
def reproduced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny copy on which `dvc repro` has run once (shared, treat as read-only)."""
    root = copy_project(tmp_path_factory.mktemp("reproduced") / "project")
    run(["dvc", "repro"], root)
    return root
