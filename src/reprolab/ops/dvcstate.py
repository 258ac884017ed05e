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


#: the lock a flow run holds on the workspace (data/, dvc.lock) while it runs
WORKSPACE_LOCK = ".dvc/tmp/reprolab-workspace.lock"


@contextlib.contextmanager
def workspace_lock(root: Path, holder: str, log=None):
    """Hold the project's workspace for one flow run at a time. A run that finds it held
    says by whom (the holder's description, pid and start time) through ``log`` and waits
    until it is free; the lock goes with its process, so a killed run never leaves it
    held. (Serving with ``limit=1`` keeps one server's runs apart; this keeps apart runs
    of two servers, or a run triggered by hand, on one checkout.)"""
    import fcntl
    import json
    import time

    path = Path(root) / WORKSPACE_LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            try:
                held = json.loads(handle.read() or "{}")
            except ValueError:
                held = {}
            if log is not None:
                log(
                    f"waiting: the workspace {root} is held by {held.get('holder', 'another run')} "
                    f"(pid {held.get('pid', '?')}, since {held.get('since', '?')}); this run "
                    "starts when that one ends"
                )
            started = time.monotonic()
            fcntl.flock(handle, fcntl.LOCK_EX)
            if log is not None:
                log(f"the workspace is free after {time.monotonic() - started:.0f} s: starting")
        handle.seek(0)
        handle.truncate()
        since = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        handle.write(json.dumps({"holder": holder, "pid": os.getpid(), "since": since}))
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            handle.flush()
            fcntl.flock(handle, fcntl.LOCK_UN)
