"""What DVC knows about the stages, for entry points other than `dvc repro`.

The Prefect flows read the stages from dvc.yaml through DVC's API (one DAG, declared
once), skip a stage DVC reports as up to date, and after running a stage in-process
record it with `dvc commit`, so `dvc status` agrees afterwards and nothing is computed
twice. Nothing here needs a Prefect server, and DVC stage commands never need Prefect.
DVC resolves stage names against the working directory, so each call runs in ``root``.
:func:`pending` (``python -m reprolab status``) says which stages a ``dvc repro`` would
run now, following a change down the DAG.
Each call waits for DVC's repository lock (as ``dvc --wait-for-lock`` does) instead of
failing when another process holds it: flows that run methods concurrently record their
stages one at a time, and dvc.lock is only ever written by the holder of the lock.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import asdict, dataclass, field
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


# ---------------------------------------------------------------------------------------
# `python -m reprolab status`: what a `dvc repro` would rerun now
#
# `dvc status` lists the stages whose own deps changed, not what they feed: after a
# params.yaml edit only `validate`. A stage downstream reruns when an input it depends
# on changes; this follows the DAG from the changed stages, stage by stage, upstream first.
# What validate will write is known without running it (`config.config_files`), so
# after a params or method-code edit only the stages whose data/config file changes
# follow it; any other changed stage is taken to change its outputs, so everything
# downstream of it is listed.


@dataclass
class Pending:
    """What a ``dvc repro`` would run now."""

    #: stage -> what ``dvc status`` reports for it (its own deps, params, outs changed)
    changed: dict[str, str]
    #: every stage that would run, upstream first
    rerun: list[str]
    #: stage -> why it would run (for a stage of ``rerun`` not in ``changed``)
    why: dict[str, str] = field(default_factory=dict)
    #: how many stages dvc.yaml holds
    total: int = 0
    #: what stops the run early (an invalid params.yaml), if anything
    stops: str = ""


def _touches(dep: str, paths: set[str]) -> bool:
    """Whether a dependency path (file or folder) covers or lies in one of ``paths``."""
    return any(p == dep or p.startswith(dep + "/") or dep.startswith(p + "/") for p in paths)


def validate_writes(root: Path, folder: Path | None = None) -> tuple[set[str], str]:
    """The files under data/config/ (or ``folder``) that the validate stage would change
    (written differently, new, or no longer written), computed without writing, as paths
    relative to the project; and, for an invalid params.yaml, the error (validate stops
    the run there: nothing after it runs)."""
    from reprolab import config
    from reprolab.core.io import json_text

    try:
        want = config.config_files(root)
    except config.ConfigError as exc:
        return set(), f"params.yaml is invalid, dvc repro stops at validate: {exc}"
    folder = folder or root / config.CONFIG_DIR
    have = {p.name for p in folder.iterdir() if p.is_file()} if folder.is_dir() else set()
    changed = {
        name
        for name, content in want.items()
        if name not in have or (folder / name).read_text() != json_text(content)
    }
    changed |= have - set(want)
    return {f"{config.CONFIG_DIR.as_posix()}/{name}" for name in changed}, ""


def pending(root: Path) -> Pending:
    """The stages a ``dvc repro`` of ``root`` would run now: those ``dvc status``
    reports and every stage downstream whose inputs they change (see above)."""
    import networkx as nx
    from dvc.repo import lock_repo

    root = Path(root).resolve()
    with contextlib.chdir(root), _repo(root) as repo:
        changed = {name: describe({name: c}) for name, c in repo.status().items()}
        with lock_repo(repo):
            graph = repo.index.graph  # an edge from each stage to the stages it depends on
            order = list(
                nx.lexicographical_topological_sort(
                    graph.reverse(copy=True), key=lambda s: s.addressing
                )
            )
            out = Pending(changed=changed, rerun=[], total=len(order))
            running: set[str] = set(changed)
            for stage in order:
                name = stage.addressing
                if name not in running:
                    continue
                out.rerun.append(name)
                writes: set[str] | None = None  # unknown: every output may change
                if name == "validate" and [o.def_path for o in stage.outs] == ["data/config"]:
                    writes, out.stops = validate_writes(root)
                for down in graph.predecessors(stage):  # the stages that depend on it
                    if down.addressing in running:
                        continue
                    deps = {os.path.relpath(d.fs_path, root) for d in down.deps}
                    hit = sorted(p for p in writes or () if any(_touches(d, {p}) for d in deps))
                    if writes is None:
                        out.why[down.addressing] = f"after {name}"
                    elif hit:
                        shown = ", ".join(hit[:3]) + (", ..." if len(hit) > 3 else "")
                        out.why[down.addressing] = f"{shown} changes"
                    else:
                        continue
                    running.add(down.addressing)
    return out


def format_pending(p: Pending, shown: int = 12, width: int = 110) -> str:
    """The report of :func:`pending`: the stages ``dvc status`` names (the first
    ``shown``, each cut at ``width`` characters), then every stage that would run, one
    line per method, then why the downstream ones run."""
    if not p.rerun:
        return f"Everything is up to date: `dvc repro` would run none of the {p.total} stages.\n"

    def cut(line: str) -> str:
        return line if len(line) <= width else line[: width - 3] + "..."

    lines = [f"`dvc repro` (make run) would run {len(p.rerun)} of {p.total} stages.", ""]
    lines.append("Changed now (dvc status):")
    for name, what in list(p.changed.items())[:shown]:
        lines.append(cut(f"  {name}: {what}" if what else f"  {name}"))
    if len(p.changed) > shown:
        lines.append(f"  ... and {len(p.changed) - shown} more (dvc status lists them all)")
    if p.stops:
        lines += ["", p.stops]
    groups: dict[str, list[str]] = {}  # a method's stages on one line, upstream first
    for name in p.rerun:
        stage, slug = split_name(name)
        if slug is None:
            groups.setdefault(stage, [])
        elif stage == "assets":
            groups.setdefault("assets", []).append(slug)
        else:
            groups.setdefault(slug, []).append(stage)
    lines += ["", "Would run, per method (upstream first):"]
    lines += [f"  {k}: {', '.join(v)}" if v else f"  {k}" for k, v in groups.items()]
    follow = [n for n in p.rerun if n in p.why]
    if follow:
        lines += ["", "Why the stages after the changed ones run:"]
        lines += [cut(f"  {n}: {p.why[n]}") for n in follow[:shown]]
        if len(follow) > shown:
            lines.append(f"  ... and {len(follow) - shown} more (--json lists them all)")
        lines += [
            "",
            "A stage after one that reruns is listed; dvc repro still skips it when what it",
            "reads comes out the same. validate's files (data/config) are compared exactly.",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    """``python -m reprolab status [--json]``."""
    import argparse
    import json
    import sys

    parser = argparse.ArgumentParser(
        prog="reprolab status",
        description="which DVC stages a `dvc repro` would run now: what `dvc status` "
        "reports and every stage downstream of it that its change reaches, per method",
    )
    parser.add_argument("--json", action="store_true", help="print the answer as JSON")
    args = parser.parse_args(argv)
    from reprolab.paths import project_root

    try:
        root = project_root(Path.cwd())
        p = pending(root)
    except FileNotFoundError as exc:
        print(f"reprolab status: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # DVC's own errors (a broken dvc.yaml, no DVC repository)
        if type(exc).__module__.split(".")[0] != "dvc":
            raise
        print(f"reprolab status: DVC: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(asdict(p), indent=2))
    else:
        print(format_pending(p), end="")
    return 0
