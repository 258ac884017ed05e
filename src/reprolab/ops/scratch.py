"""A scratch copy of the project: the committed code at one profile, its own data/.

Used where a run must not touch the workspace: ``python -m reprolab paper`` (paper-profile
results for docs/results) and the ``reverify`` Prefect flow (nightly re-verification of
every verdict). The copy holds the tracked and untracked, not ignored, files of the
project except ``data/`` and ``dvc.lock``, a params.yaml cut to the chosen methods at the
chosen profile, and ``data/raw`` linked read-only to the project's (``make data``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml


def _git(root: Path, *args: str, env: dict | None = None) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True, env=env
    ).stdout


def cut_params(
    params: dict, methods: list[str], seeds: list[int] | None = None, profile: str = "paper"
) -> dict[str, Any]:
    """params.yaml cut to ``methods`` at ``profile`` (and ``seeds``, if given), with the
    shared assets those methods read."""
    from reprolab import registry

    sections = params.get("methods") or {}
    missing = [m for m in methods if m not in sections]
    if missing:
        raise SystemExit(
            f"{', '.join(missing)} not under methods: in params.yaml (there: {', '.join(sections)})"
        )
    out = {**params, "profile": profile, "methods": {m: sections[m] for m in methods}}
    if seeds is not None:
        out["seeds"] = {**params["seeds"], profile: seeds}
    wanted = {a for m in methods for a in registry.get(m).assets}
    assets = params.get("assets") or {}
    kept = {k: v for k, v in assets.items() if k in wanted}
    if not kept and assets:  # dvc.yaml's assets@ foreach needs one entry: the cheapest
        first = next(iter(assets))  # build of one asset (its code defaults, not paper's)
        cheap = registry.asset(first).config_model().model_dump(mode="json")
        kept = {first: {"smoke": {}, "paper": cheap}}
    out["assets"] = kept
    return out


def copy_project(root: Path, dest: Path, params: dict, link_raw: bool = True) -> None:
    """Copy the project at ``root`` into ``dest`` (see the module docstring) and commit
    it to a fresh git repository there (DVC wants one). ``link_raw=False`` leaves out
    the link to ``data/raw`` (the tests' tiny copies read only bundled data)."""
    files = _git(root, "ls-files", "-co", "--exclude-standard", "-z").split("\0")
    for rel in filter(None, files):
        src = root / rel
        if src.is_file() and not rel.startswith("data/"):
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
    (dest / "dvc.lock").unlink(missing_ok=True)
    (dest / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    raw = root / "data" / "raw"
    (dest / "data").mkdir(exist_ok=True)
    if (
        link_raw and raw.is_dir()
    ):  # Fashion-MNIST from `make data`: read-only input, linked not copied
        (dest / "data" / "raw").symlink_to(raw.resolve())
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "reprolab",
        "GIT_AUTHOR_EMAIL": "reprolab@localhost",
        "GIT_COMMITTER_NAME": "reprolab",
        "GIT_COMMITTER_EMAIL": "reprolab@localhost",
    }
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "scratch copy"]):
        _git(dest, *args, env=env)


def commit_of(root: Path) -> tuple[str, bool]:
    """The project's HEAD commit and whether its working tree differs from it."""
    return _git(root, "rev-parse", "HEAD").strip(), bool(_git(root, "status", "--porcelain"))
