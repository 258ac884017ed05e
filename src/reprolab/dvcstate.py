"""What DVC knows about the stages, for entry points other than `dvc repro`.

The Prefect flows read the chain of a method from dvc.yaml (one DAG, declared once),
skip a stage DVC reports as up to date, and after running a stage in-process record it
with `dvc commit`, so `dvc status` agrees afterwards and nothing is computed twice.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("DVC_NO_ANALYTICS", "1")


def stage_name(stage: str, slug: str | None) -> str:
    return f"{stage}@{slug}" if slug else stage


def chain(root: Path, slug: str) -> list[str]:
    """The stages of one method in dependency order, as dvc.yaml declares them."""
    from dvc.repo import Repo

    with Repo(str(root)) as repo:
        names = [s.addressing for s in repo.index.stages]
    mine = [n for n in names if n.endswith(f"@{slug}")]
    if not mine:
        raise KeyError(f"dvc.yaml has no stages for method {slug!r}")
    return mine


def is_up_to_date(root: Path, name: str) -> bool:
    from dvc.repo import Repo

    with Repo(str(root)) as repo:
        return not repo.status(targets=[name])


def commit(root: Path, name: str) -> None:
    """Record the stage's current deps and outs in dvc.lock and the DVC cache."""
    from dvc.repo import Repo

    with Repo(str(root)) as repo:
        repo.commit(name, force=True)
