"""What DVC knows about the stages, for entry points other than `dvc repro`.

The Prefect flows read the stages from dvc.yaml through DVC's API (one DAG, declared
once), skip a stage DVC reports as up to date, and after running a stage in-process
record it with `dvc commit`, so `dvc status` agrees afterwards and nothing is computed
twice. Nothing here needs a Prefect server, and DVC stage commands never need Prefect.
DVC resolves stage names against the working directory, so each call runs in ``root``.
Each call waits for DVC's repository lock (as ``dvc --wait-for-lock`` does) instead of
failing when another process holds it: flows that run methods concurrently record their
stages one at a time, and dvc.lock is only ever written by the holder of the lock.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

os.environ.setdefault("DVC_NO_ANALYTICS", "1")


def _repo(root: Path):
    from dvc.repo import Repo

    return Repo(str(root), _wait_for_lock=True)


def stage_name(stage: str, slug: str | None) -> str:
    return f"{stage}@{slug}" if slug else stage


def split_name(name: str) -> tuple[str, str | None]:
    """``"train@ensloss"`` -> ``("train", "ensloss")``; ``"report"`` -> ``("report", None)``."""
    stage, _, slug = name.partition("@")
    return stage, slug or None


def stages(root: Path) -> list[str]:
    """Every stage of dvc.yaml, upstream before downstream (ties broken by name)."""
    import networkx as nx
    from dvc.repo import lock_repo

    with contextlib.chdir(root), _repo(root) as repo, lock_repo(repo):
        # DVC's graph has an edge from each stage to the stages producing its deps.
        upstream_first = repo.index.graph.reverse(copy=True)
        order = nx.lexicographical_topological_sort(upstream_first, key=lambda s: s.addressing)
        return [stage.addressing for stage in order]


def setup(root: Path) -> list[str]:
    """The stages every method's chain starts from: ``validate`` and the assets."""
    return [n for n in stages(root) if n == "validate" or split_name(n)[0] == "assets"]


def chain(root: Path, slug: str) -> list[str]:
    """The stages of one method (``<stage>@<slug>``) in dependency order, after the
    setup stages they depend on (validate, assets)."""
    mine = [n for n in stages(root) if split_name(n)[1] == slug and split_name(n)[0] != "assets"]
    if not mine:
        raise KeyError(f"dvc.yaml has no stages for method {slug!r}")
    return [*setup(root), *mine]


def shared(root: Path) -> list[str]:
    """The stages downstream of every method (the report), in dependency order."""
    return [n for n in stages(root) if split_name(n)[1] is None and n != "validate"]


def status(root: Path, name: str) -> dict:
    """`dvc status <name>`: empty when the stage is up to date."""
    with contextlib.chdir(root), _repo(root) as repo:
        return repo.status(targets=[name])


def describe(changes: dict) -> str:
    """A one-line summary of what `dvc status` reported, for logs."""
    parts = []
    for entries in changes.values():
        for entry in entries:
            if isinstance(entry, dict):
                for kind, paths in entry.items():
                    parts.append(f"{kind}: {', '.join(paths)}" if isinstance(paths, dict) else kind)
            else:
                parts.append(str(entry))
    return "; ".join(parts)


def is_up_to_date(root: Path, name: str) -> bool:
    return not status(root, name)


def commit(root: Path, name: str) -> None:
    """`dvc commit -f <name>`: record the stage's current deps, params and outs in
    dvc.lock and put its outs in the DVC cache, as `dvc repro` does after running it.

    ``force`` because the stage is new or changed by definition (it just ran); without
    it DVC would ask for confirmation.
    """
    with contextlib.chdir(root), _repo(root) as repo:
        repo.commit(name, force=True)
    left = status(root, name)
    if left:
        raise RuntimeError(f"{name}: still changed in DVC after `dvc commit`: {left}")
