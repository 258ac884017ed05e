"""Paper-profile runs: sequential rounds of ``dvc repro`` in a scratch copy, the
preregistration ledger before them, commit-ready results into docs/results/ after them.

    make paper METHODS="ensloss bit_dgdm"          # rounds until decided or budget spent
    make paper METHODS=ensloss AMEND="why"          # a claim or setting changed after results
    make paper METHODS=ensloss SEEDS=100,101,102    # a held-out block, compared with the pool
    make paper METHODS=ensloss REPLAY=1             # one dvc repro with run.json's seeds
    make paper RESUME=/tmp/reprolab-paper-xxxx      # go on with a killed run in its copy

What a run does:

1. **Ledger first** (:mod:`reprolab.evidence.ledger`): a claim with no ledger entry is registered;
   one whose definition (or the paper-profile config) changed after it was registered
   stops the run unless ``--amend "why"`` is given, which records the amendment. Both
   are written before any compute.
2. **Rounds** (:mod:`reprolab.evidence.running.rounds`): the project is copied (``reprolab.ops.scratch``) at
   ``profile: paper`` with the first look's seeds; each round is ``reprolab check`` then
   ``dvc repro`` there (its stages fork from a stage worker preloaded in the copy,
   stopped when the rounds end); after it, each undecided claim that more seeds can
   decide gets the seeds of its plan's next look, on the units it reads; finished units
   are reused.
   A method stops when every claim is decided, its plan is exhausted, or the next round
   would take its measured compute past ``evidence.budget_minutes``.
3. **Results**, per method, into ``docs/results/<slug>/`` (a held-out block into
   ``<slug>/seeds-<...>/`` with ``stability.md``): the claims report (``claims.md``,
   ``claims.html``, figures), ``claims.json`` (each entry with its ``evidence``: the
   round it was decided in, or why not and the seeds and minutes it would need),
   ``metrics.json``, ``metrics.csv`` (gzipped above 1 MiB) and ``run.json`` (date, commit, machine with its
   CPU model and vector extensions, the rounds, the seeds, and the method's params.yaml
   section as run: with it a plain ``dvc repro`` reproduces the last round). Nothing is
   written there unless the run succeeded; a method's results are replaced as a whole.
   Then the scoreboard ``docs/results/README.md`` and the method READMEs' verdicts blocks
   are regenerated (the blocks only when the results go to ``docs/results``).

A killed run loses nothing that was finished: before each round the copy records the
run's state (``.paper/state.json``: the commit, the rounds so far, the next round's
params), and ``--resume <copy>`` goes on from the round that was cut short. Its train
stage keeps the units that round finished (``data/.partial``) and resumes the one that
was training from its last epoch; their training time, the interrupted unit's epochs
before the kill, and the units the killed attempt evaluated (the evaluation memo) count
in the round's compute.
``run.json`` lists the resumptions. A run that its evidence budget stopped goes on the
same way after the budget is raised in params.yaml (an amendment in the ledger): only
``evidence.budget_minutes`` is taken over from params.yaml, and only for a method whose
config changed in nothing else.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from reprolab import registry
from reprolab.core.machine import machine
from reprolab.evidence import ledger
from reprolab.evidence.judging.claims import DECISIVE, opposite
from reprolab.evidence.running import compare, rounds
from reprolab.ops import children, scratch, worker

Log = Callable[[str], None]

#: a run's state in its copy, written before each round (what ``--resume`` reads)
STATE = Path(".paper") / "state.json"
#: a results folder's sub-folder of probe records (``make probe``): kept across runs
PROBES = "probes"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _print(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] paper: {msg}", flush=True)


class PaperError(RuntimeError):
    """A paper run cannot start (bad arguments, a changed definition without --amend)."""


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()


@dataclass
class MethodRounds:
    """What the rounds did for one method."""

    slug: str
    rounds: list[dict] = field(default_factory=list)
    decided_round: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    stop: str = ""
    minutes: float = 0.0
    done: bool = False


def driver_modules() -> list[str]:
    """The reprolab modules this driver can import, found by walking the imports (at
    module level and inside functions) from this module."""
    import ast
    import importlib.util

    def spec_of(name: str):
        try:
            return importlib.util.find_spec(name)
        except (ImportError, AttributeError, ValueError):  # a name, not a module
            return None

    seen: dict[str, None] = {}
    todo = [__name__]
    while todo:
        name = todo.pop()
        spec = None if name in seen else spec_of(name)
        if spec is None or not str(spec.origin).endswith(".py"):
            continue
        seen[name] = None
        for node in ast.walk(ast.parse(Path(spec.origin).read_text())):
            if isinstance(node, ast.Import):
                todo += [a.name for a in node.names if a.name.split(".")[0] == "reprolab"]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("reprolab"):
                todo += [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
    return sorted(seen)


def preload() -> None:
    """Import every module the driver can use, and every method's spec, before a run:
    its rounds run the copy's own code, but the driver runs from the working tree, and a
    module it imported only when it collects the results would otherwise be read from a
    tree edited meanwhile, beside modules of the older version already loaded."""
    import importlib

    for name in driver_modules():
        importlib.import_module(name)
    for slug in registry.slugs():
        registry.get(slug)


@dataclass
class PaperRun:
    root: Path
    methods: list[str]
    seeds: list[int] | None = None  # a held-out block: one look at these seeds
    amend: str = ""
    replay: bool = False
    out: Path | None = None
    work: Path | None = None
    #: a killed run's copy to go on with (its ``.paper/state.json``)
    resume: Path | None = None
    log: Log = _print
    max_rounds: int = 20
    #: a confirmatory run: the method's latest registration (``reprolab.evidence.running.confirm``), run
    #: exactly as registered; set from ``confirm=True`` by :meth:`__post_init__`
    confirm: bool = False
    registration: dict | None = field(default=None, init=False)
    #: called after each round with (round number, per-method MethodRounds)
    on_round: Callable[[int, dict[str, MethodRounds]], None] | None = None
    #: the copy the run works in, once it has one (what a resume names)
    copy: Path | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        self.out = Path(self.out) if self.out else self.root / "docs" / "results"
        for slug in self.methods:
            registry.check_slug(slug)
        if self.seeds is not None and self.replay:
            raise PaperError("--seeds (a held-out block) and --replay do not go together")
        if self.confirm and (self.seeds is not None or self.replay or len(self.methods) != 1):
            raise PaperError(
                "CONFIRM=1 runs one method's registration as registered: one method, no "
                "SEEDS or REPLAY"
            )
        if self.resume is not None and (self.seeds is not None or self.replay):
            raise PaperError(
                "--resume goes on with a run as it was started: no --seeds or --replay "
                "(--amend only records a raised evidence budget)"
            )

    # ------------------------------------------------------------------ params
    def _raw(self) -> dict:
        return yaml.safe_load((self.root / "params.yaml").read_text())

    def first_params(self) -> dict:
        """params.yaml cut to the methods at ``profile: paper``, at the first look (the
        seeds earlier rounds added are dropped: the rounds start again), or the held-out
        block (one look at ``seeds``), or run.json's recorded sections (replay)."""
        seeds = self.seeds
        if self.registration is not None:  # the registered seeds, in the registered plan
            seeds = list(self.registration["seeds"])
        params = scratch.cut_params(self._raw(), self.methods, seeds, "paper")
        for slug in self.methods:
            section = copy.deepcopy(params["methods"][slug] or {})
            paper = section.get("paper") or {}
            ev = dict(paper.get("evidence") or {})
            ev.pop("added", None)
            if self.registration is not None:
                ev["first"] = self.registration["plan"]["first"]
            if self.seeds is not None:  # a block of its own: every seed in one look
                ev.update(first=None, max_seeds=None)
            if self.replay:
                recorded = self._recorded(slug)
                paper = recorded.get("paper") or {}
                ev = dict(paper.get("evidence") or {})
            paper = {k: v for k, v in paper.items() if k != "evidence"}
            section["paper"] = {**paper, **({"evidence": ev} if ev else {})}
            params["methods"][slug] = section
        return params

    def _recorded(self, slug: str) -> dict:
        path = self.out / slug / "run.json"
        if not path.is_file():
            raise PaperError(f"--replay: {path} is missing (run `make paper METHODS={slug}`)")
        info = json.loads(path.read_text())
        if "params" not in info:
            raise PaperError(f"--replay: {path} records no params section (an older run)")
        if info.get("seeds_paper") and info["seeds_paper"] != self._raw()["seeds"]["paper"]:
            raise PaperError(
                f"--replay: {path} ran with seeds.paper {info['seeds_paper']}, params.yaml "
                f"has {self._raw()['seeds']['paper']}"
            )
        return info["params"]

    # ------------------------------------------------------------------ ledger
    def check_ledger(self) -> list[ledger.Change]:
        """The claims whose definitions are new or changed; raises on a change without
        a reason. A held-out block or a replay registers nothing."""
        raw = self._raw()
        changes = []
        for slug in self.methods:
            found, _, _ = ledger.compare(self.root, slug, raw)
            changes += found
        changed = [c for c in changes if c.kind == "changed"]
        if changed and not self.amend:
            lines = "\n".join(f"  - {c.describe()}" for c in changed)
            raise PaperError(
                "claim definitions changed after their results were registered:\n"
                f'{lines}\nrun again with --amend "why" (make paper ... AMEND="why") to '
                "record the amendment in docs/results/ledger/, or undo the change"
            )
        return changes

    def record_ledger(self, changes: list[ledger.Change]) -> None:
        commit = _git(self.root, "rev-parse", "HEAD")
        raw = self._raw()
        for slug in self.methods:
            mine = [c for c in changes if c.slug == slug]
            _, cfg, cfg_hash = ledger.compare(self.root, slug, raw)
            ledger.record(self.root, slug, mine, cfg, cfg_hash, commit, self.amend)
            if mine:
                self.log(
                    f"{slug}: ledger: {sum(c.kind == 'new' for c in mine)} registered, "
                    f"{sum(c.kind == 'changed' for c in mine)} amended"
                )

    # ------------------------------------------------------------------ rounds
    def run(self) -> dict[str, MethodRounds]:
        preload()
        if self.resume is not None:
            return self._resume()
        block = self.seeds is not None
        if self.confirm:  # the registration is the definition: the ledger holds it already
            from reprolab.evidence.running import confirm

            slug = self.methods[0]
            entry = confirm.latest(self.root, slug)
            try:
                confirm.verify(self.root, slug, entry)
            except confirm.ConfirmError as exc:
                raise PaperError(str(exc)) from None
            self.registration = entry
        elif not block and not self.replay:
            changes = self.check_ledger()
            self.record_ledger(changes)
        params = self.first_params()
        work = self.work or Path(tempfile.mkdtemp(prefix="reprolab-paper-"))
        if work.exists() and any(work.iterdir()):
            raise PaperError(f"--work {work} is not empty")
        self.copy = work
        work.mkdir(parents=True, exist_ok=True)
        commit = _git(self.root, "rev-parse", "HEAD")
        dirty = bool(_git(self.root, "status", "--porcelain", "--", ".", ":!docs/results"))
        scratch.copy_project(self.root, work, params)
        what = (
            "held-out block"
            if block
            else "replay"
            if self.replay
            else f"confirmatory rounds ({self.registration['id']})"
            if self.registration
            else "sequential rounds"
        )
        self.log(f"{', '.join(self.methods)}: paper profile, {what}, in {work}")
        state = {slug: MethodRounds(slug) for slug in self.methods}
        run = {"commit": commit, "dirty": dirty, "wall": 0.0, "resumed": []}
        return self._rounds(work, params, state, run, first=1)

    def _resume(self) -> dict[str, MethodRounds]:
        work = self.copy = Path(self.resume)
        path = work / STATE
        if not path.is_file():
            raise PaperError(f"--resume: {path} is missing (not a paper run's copy, or older)")
        saved = json.loads(path.read_text())
        if sorted(saved["methods"]) != sorted(self.methods):
            raise PaperError(
                f"--resume: {work} ran {', '.join(saved['methods'])}, not {', '.join(self.methods)}"
            )
        kind = saved.get("kind", "sequential")
        if kind == "held-out block":  # goes on with the block's own seeds (a copy from
            # before they were saved beside the kind ran them as its paper profile's)
            seeds = saved.get("seeds") or saved["params"]["seeds"]["paper"]
            self.seeds = [int(s) for s in seeds]
        elif kind == "replay":
            self.replay = True
        elif kind == "confirmatory":  # the same registration, whatever the ledger says now
            self.confirm, self.registration = True, saved["registration"]
        if kind not in ("sequential", "confirmatory") and self.amend:
            raise PaperError(f"--resume: {work} holds a {kind}: it has no budget to amend")
        changed = _git(work, "status", "--porcelain", "--", "src", "dvc.yaml", "flows", "tasks")
        if changed:
            raise PaperError(f"--resume: the code in {work} changed since it ran:\n{changed}")
        # a budget amended since (recorded in the ledger, AMEND="why") applies: it limits
        # the compute, not the plan's looks, so a run its budget stopped can go on
        params, raised = (
            self._amended_budgets(saved["params"])
            if kind == "sequential"
            else (saved["params"], [])
        )
        if raised:
            self.record_ledger(self.check_ledger())
        elif self.amend:
            raise PaperError(
                "--amend with --resume records a raised evidence budget, and params.yaml "
                f"raises none for {', '.join(self.methods)} (a change beyond the budget "
                "needs a new run)"
            )
        state = {slug: MethodRounds(**saved["state"][slug]) for slug in self.methods}
        run = {k: saved[k] for k in ("commit", "dirty", "wall")}
        for key in ("round_started", "measured"):  # the cut-short round's compute
            if key in saved:
                run[key] = saved[key]
        run["resumed"] = [
            *saved.get("resumed", []),
            {"date": _now(), "round": saved["round"]},
        ]
        self.log(f"{', '.join(self.methods)}: resuming round {saved['round']} in {work}")
        return self._rounds(work, params, state, run, first=saved["round"])

    def _amended_budgets(self, saved: dict) -> tuple[dict, list[str]]:
        """The copy's params, with each method's ``evidence.budget_minutes`` taken from
        params.yaml where that is all that changed in the method's paper-profile config
        (anything else changed leaves the copy's params as they were); and the methods
        whose budget it took."""
        from reprolab import config

        fresh = self.first_params()
        params = copy.deepcopy(saved)
        raised = []

        def plain(p: dict, slug: str) -> tuple[dict, float]:
            cfg = config.validate(p).method(slug).model_dump(mode="json")
            ev = cfg.pop("evidence", {}) or {}
            budget = ev.pop("budget_minutes", None)
            ev.pop("added", None)
            return {**cfg, "evidence": ev}, budget

        for slug in self.methods:
            (old_cfg, old_budget), (new_cfg, new_budget) = plain(saved, slug), plain(fresh, slug)
            if new_budget == old_budget or old_cfg != new_cfg:
                continue
            section = params["methods"][slug].setdefault("paper", {}) or {}
            section.setdefault("evidence", {})["budget_minutes"] = new_budget
            params["methods"][slug]["paper"] = section
            raised.append(slug)
            self.log(f"{slug}: evidence budget {old_budget:g} -> {new_budget:g} min (params.yaml)")
        return params, raised

    def _save(self, work: Path, params, state, run, number: int) -> None:
        """What a resumed run needs to go on with round ``number``."""
        path = work / STATE
        path.parent.mkdir(exist_ok=True)
        kind = "held-out block" if self.seeds is not None else "replay" if self.replay else ""
        kind = "confirmatory" if self.registration is not None else kind
        tmp = path.with_suffix(".tmp")
        tmp.write_text(
            json.dumps(
                {
                    "methods": self.methods,
                    "kind": kind or "sequential",
                    "seeds": self.seeds,
                    **({"registration": self.registration} if self.registration else {}),
                    "round": number,
                    "params": params,
                    "state": {slug: asdict(st) for slug, st in state.items()},
                    **run,
                },
                indent=1,
            )
        )
        tmp.replace(path)

    def _rounds(
        self, work: Path, params: dict, state: dict[str, MethodRounds], run: dict, first: int
    ) -> dict[str, MethodRounds]:
        env = {
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONPATH": str(work / "src"),
            # the project's own tracking store (mlflow.env resolved against the project,
            # not the copy): the runs that give the verdicts can be compared in `make ui`
            "MLFLOW_TRACKING_URI": self.tracking_uri(),
            "REPROLAB_RUN_TAGS": json.dumps(self.run_tags(run)),
        }
        # a worker shared by checkouts preloads their code, not the copy's: the copy's own
        env.pop(worker.SOCKET_ENV, None)
        with self._copy_worker(work, env):
            self._round_loop(work, params, state, run, first, env)
        self._collect(work, params, state, run)
        self.log(f"MLflow runs of this paper run: {env['MLFLOW_TRACKING_URI']} (make ui)")
        if self.work is None and self.resume is None:  # a temporary copy: nothing to resume
            shutil.rmtree(work, ignore_errors=True)
            self.log(f"removed the copy {work}")
        return state

    def tracking_uri(self) -> str:
        """The project's MLflow store: the environment's MLFLOW_TRACKING_URI, else
        mlflow.env's, a relative SQLite path resolved against the project."""
        from dotenv import dotenv_values

        from reprolab.core.tracking import ENV_FILE, resolve_uri

        uri = os.environ.get("MLFLOW_TRACKING_URI") or (
            dotenv_values(self.root / ENV_FILE).get("MLFLOW_TRACKING_URI") or ""
        )
        if not uri:
            raise PaperError(f"{self.root / ENV_FILE}: MLFLOW_TRACKING_URI is not set")
        return resolve_uri(uri, self.root)

    def run_tags(self, run: dict) -> dict[str, str]:
        """The MLflow tags every run of this paper run carries (REPROLAB_RUN_TAGS)."""
        kind = (
            "held-out block"
            if self.seeds is not None
            else "replay"
            if self.replay
            else "confirmatory"
            if self.registration is not None
            else "exploratory"
        )
        tags = {"paper_run": kind, "paper_commit": str(run.get("commit", ""))}
        if self.registration is not None:
            tags["registration"] = self.registration["id"]
        return tags

    @contextlib.contextmanager
    def _copy_worker(self, work: Path, env: dict[str, str]):
        """A stage worker (:mod:`reprolab.ops.worker`) preloaded in the copy, with the
        copy's code on its path, for the rounds' stages: each then forks from it instead
        of importing torch and Lightning afresh (about 5 s a stage on 2 cores). Stopped
        when the rounds end, however they end (Ctrl-C, SIGTERM, an error); a driver
        killed with SIGKILL leaves it to its idle timeout (10 minutes), and ``--resume``
        of the copy reuses it. ``REPROLAB_WORKER=off`` runs without one; a worker that
        does not start leaves the stages in-process, as without one."""
        if worker.mode(env) == "off":
            yield
            return
        command = [sys.executable, "-m", "reprolab", "worker"]
        started = subprocess.run(
            [*command, "start", "--idle", "600"], cwd=work, env=env, capture_output=True, text=True
        )
        if started.returncode != 0:
            tail = (started.stderr or started.stdout).strip().splitlines()[-1:]
            self.log(f"no stage worker in the copy, stages run in-process ({' '.join(tail)})")
        try:
            yield
        finally:
            if started.returncode == 0:
                subprocess.run([*command, "stop"], cwd=work, env=env, capture_output=True)

    def _round_loop(
        self,
        work: Path,
        params: dict,
        state: dict[str, MethodRounds],
        run: dict,
        first: int,
        env: dict[str, str],
    ) -> None:
        from reprolab.paths import MethodPaths

        block = self.seeds is not None
        for number in range(first, self.max_rounds + 1):
            if run.get("round_started", {}).get("round") != number:
                run["round_started"] = {"round": number, "time": time.time()}
            self._save(work, params, state, run, number)
            (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
            subprocess.run(
                [sys.executable, "-m", "reprolab", "check"], cwd=work, env=env, check=True
            )
            self.log(f"round {number}: dvc repro")
            t0 = time.perf_counter()
            returncode = children.run_group(["dvc", "repro"], cwd=work, env=env)
            seconds = time.perf_counter() - t0
            run["wall"] += seconds
            if returncode == 0 and run.get("measured", {}).get("round") != number:
                # what the round's stages spent, measured once: a resume of a round whose
                # dvc repro had finished reruns stages that then reuse its units, and
                # would count almost nothing
                run["measured"] = {
                    "round": number,
                    "minutes": {
                        slug: _round_minutes(
                            MethodPaths(work, slug).runtime, run["round_started"]["time"]
                        )
                        for slug in state
                    },
                }
            # a resume of this round (killed while collecting it) keeps the time spent
            self._save(work, params, state, run, number)
            if returncode != 0:
                raise PaperError(
                    f"dvc repro failed in round {number} after {seconds:.0f} s; nothing written "
                    f'to {self.out} (go on with: make paper METHODS="{" ".join(self.methods)}" '
                    f"RESUME={work})"
                )
            grew = False
            for slug, st in state.items():
                if st.done:
                    continue
                grew |= self._after_round(
                    work, params, slug, st, number, seconds, run["measured"]["minutes"][slug]
                )
            if self.on_round is not None:
                self.on_round(number, state)
            if not grew or block or self.replay:
                break

    def _after_round(
        self,
        work: Path,
        params: dict,
        slug: str,
        st: MethodRounds,
        number: int,
        wall: float,
        minutes: float,
    ) -> bool:
        """Record round ``number`` of ``slug`` (``minutes`` of compute, measured when its
        dvc repro first finished) and add the next round's seeds to ``params``; False
        when the method is done."""
        from reprolab import config
        from reprolab.core import io
        from reprolab.paths import MethodPaths

        paths = MethodPaths(work, slug)
        claims = io.read_json(paths.eval / "claims.json")
        project = config.validate(params)
        cfg = project.method(slug)
        spec = registry.get(slug)
        st.minutes += minutes
        heads = rounds.headline(claims)
        for cid, result in heads.items():
            if result["verdict"] in DECISIVE and cid not in st.decided_round:
                st.decided_round[cid] = number
        avoid = set()
        decision, reasons = rounds.plan_round(spec, cfg, list(project.seeds), claims, avoid)
        st.reasons = reasons
        entry = {
            "round": number,
            "seeds": sorted({s for c in heads.values() for s in c["measured"].get("seeds", [])}),
            "compute_minutes": round(minutes, 2),
            "dvc_repro_seconds": round(wall, 1),
            "verdicts": {cid: r["verdict"] for cid, r in heads.items()},
        }
        st.rounds.append(entry)
        decided = sum(r["verdict"] in DECISIVE for r in heads.values())
        self.log(
            f"{slug}: round {number}: {decided} of {len(heads)} claims decided, "
            f"{minutes:.1f} min of compute ({st.minutes:.1f} of {cfg.evidence.budget_minutes:g})"
        )
        if self.seeds is not None or self.replay:
            st.done, st.stop = True, "a single look"
            return False
        if not decision.added:
            st.done = True
            undecided = {r for r in reasons.values() if r != "decided"}
            st.stop = (
                "every claim decided"
                if not undecided
                else "no more seeds can decide the rest: " + "; ".join(sorted(undecided))
            )
            return False
        units = _trained_units(paths)
        seconds = rounds.unit_seconds(paths.runtime)
        eval_per_unit = rounds.evaluate_seconds_per_unit(paths.runtime, len(units))
        estimate = rounds.round_minutes(decision.added, units, seconds)
        estimate += len(rounds.new_units(decision.added, units)) * eval_per_unit / 60.0
        if st.minutes + estimate > cfg.evidence.budget_minutes:
            st.done = True
            st.stop = (
                f"evidence budget: the next round ({len(decision.grow)} claim(s), about "
                f"{rounds.fmt_minutes(estimate)}) would exceed {cfg.evidence.budget_minutes:g} "
                f"min ({st.minutes:.0f} spent)"
            )
            self.log(f"{slug}: stops: {st.stop}")
            return False
        section = params["methods"][slug].setdefault("paper", {}) or {}
        params["methods"][slug]["paper"] = section
        ev = section.setdefault("evidence", {})
        ev.setdefault("added", []).extend(decision.added)
        entry["next"] = decision.added
        entry["next_estimate_minutes"] = round(estimate, 1)
        self.log(
            f"{slug}: round {number + 1} adds seeds for {', '.join(sorted(decision.grow))} "
            f"(about {rounds.fmt_minutes(estimate)})"
        )
        return True

    # ------------------------------------------------------------------ results
    def _collect(self, work: Path, params: dict, state: dict[str, MethodRounds], run: dict) -> None:
        from reprolab.core import io
        from reprolab.paths import MethodPaths
        from reprolab.stages import report

        block = self.seeds is not None
        for slug, st in state.items():
            paths = MethodPaths(work, slug)
            claims = io.read_json(paths.eval / "claims.json")
            claims = self._annotate(work, params, slug, st, claims)
            io.write_json(paths.eval / "claims.json", claims)
            used = sorted({s for c in claims for s in c["measured"].get("seeds", [])})
            sub = f"seeds-{'-'.join(map(str, self.seeds))}" if block else ""
            for c in claims:  # what the run itself gave (a later re-reading keeps it)
                c["verdict_on_file"] = c["verdict"]
            if self.registration is not None:
                sub = f"confirm-{self.registration['id']}"
                for c in claims:
                    c["confirmatory"] = self.registration["id"]
            io.write_json(paths.eval / "claims.json", claims)
            dest = self.out / slug / ("replay" if self.replay else sub)
            info = {
                "method": slug,
                "profile": "paper",
                "kind": "held-out block"
                if block
                else "replay"
                if self.replay
                else "confirmatory"
                if self.registration
                else "sequential",
                **(
                    {"registration": self.registration["id"]}
                    if self.registration is not None
                    else {}
                ),
                "seeds": used,
                "seeds_paper": params["seeds"]["paper"],
                "rounds": st.rounds,
                "stop": st.stop,
                "compute_minutes": round(st.minutes, 1),
                "params": params["methods"][slug],
                "date": _now(),
                "commit": run["commit"],
                "dirty": run["dirty"],
                "machine": machine(),
                "dvc_repro_seconds_all_methods": round(run["wall"], 1),
                "methods_in_run": self.methods,
                **({"resumed": run["resumed"]} if run.get("resumed") else {}),
            }
            tmp = dest.with_name(dest.name + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            try:  # a crash while the folder is filled leaves nothing half-written
                (tmp / "plots").mkdir(parents=True)
                for name in ("claims.json", "metrics.json"):
                    shutil.copy2(paths.eval / name, tmp / name)
                timed = paths.runtime / "claims.json"
                if timed.is_file() and io.read_json(timed):
                    # claims on wall time: evaluate keeps them out of the DVC-tracked
                    # claims.json (they differ on every run); the results keep them beside it
                    from reprolab.evidence.running.scoreboard import TIMED_CLAIMS

                    shutil.copy2(timed, tmp / TIMED_CLAIMS)
                compare.store_metrics(paths.eval / "metrics.csv", tmp)
                for png in sorted((paths.eval / "plots").glob("*.png")):
                    shutil.copy2(png, tmp / "plots" / png.name)
                report.write_views(work, [slug], tmp)
                (tmp / "run.json").write_text(json.dumps(info, indent=2) + "\n")
                if block and (self.out / slug / "claims.json").is_file():
                    text, summary = compare_blocks(self.out / slug, tmp)
                    (tmp / "stability.md").write_text(text)
                    (tmp / "stability.json").write_text(json.dumps(summary, indent=2) + "\n")
                    self.log(
                        f"{slug}: held-out block: {summary['disagree']} decisive verdict(s) "
                        f"disagree with the pooled run's (stability.md)"
                    )
                if self.replay:
                    same = compare_replay(self.out / slug, tmp)
                    (tmp / "replay.json").write_text(json.dumps(same, indent=2) + "\n")
                    self.log(
                        f"{slug}: replay: {same['verdicts_differ']} verdict(s) differ from the "
                        f"recorded run, largest value difference {same['max_value_difference']:.3g}"
                    )
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            replace_results(dest, tmp)
            self.log(f"{slug}: results in {dest}")
        if not self.replay:  # a held-out block changes the scoreboard's held-out column
            from reprolab.evidence.running import scoreboard

            scoreboard.write(self.root, self.out)
            if self.out.resolve() == (self.root / "docs" / "results").resolve():
                for path in scoreboard.write_readmes(self.root, self.out):
                    self.log(f"verdicts block updated: {path} (then dvc repro: validate reads it)")

    def _annotate(
        self, work: Path, params: dict, slug: str, st: MethodRounds, claims: list[dict]
    ) -> list[dict]:
        """Each claims.json entry gets its ``evidence``: rounds, the round it was decided
        in, or why it was not and the seeds and minutes it would need."""
        from reprolab.paths import MethodPaths

        paths = MethodPaths(work, slug)
        spec = registry.get(slug)
        by_id = {c.id: c for c in spec.claims}
        units = _trained_units(paths)
        seconds = rounds.unit_seconds(paths.runtime)
        heads = rounds.headline(claims)
        out = []
        for c in claims:
            head = heads.get(c["id"], c)
            m = head["measured"]
            info: dict[str, Any] = {
                "rounds": len(st.rounds),
                "decided_round": st.decided_round.get(c["id"]),
                "seeds": m.get("seeds", []),
                "rule": (m.get("sequential") or {}).get("rule", "fixed n"),
            }
            if head["verdict"] == "inconclusive":
                info["why"] = st.reasons.get(c["id"]) or st.stop
                need = m.get("needs_seeds")
                if need is not None:
                    per_seed = rounds.seconds_per_seed(
                        units, seconds, rounds.scope(spec, by_id[c["id"]])
                    )
                    info["needs_seeds"] = need
                    info["needs_minutes"] = rounds.needs_minutes(
                        need, len(m.get("seeds", [])), per_seed
                    )
            out.append({**c, "evidence": info})
        return out


def _trained_units(paths) -> list:
    from reprolab.contract import Unit
    from reprolab.core import io

    listing = paths.checkpoints / "units.json"
    if not listing.is_file():
        return []
    return [Unit.from_json(u) for u in io.read_json(listing)["units"]]


def _round_minutes(runtime: Path, started: float = math.inf) -> float:
    """The compute a round spent on one method, in minutes (see
    :func:`reprolab.stages.runtime.machine_seconds`)."""
    from reprolab.stages.runtime import machine_seconds

    return machine_seconds(runtime, started) / 60.0


def replace_results(dest: Path, new: Path) -> None:
    """Put the freshly written results folder ``new`` in ``dest``'s place. A rerun
    replaces what it writes and keeps every folder it did not write: held-out blocks
    (the scoreboard ignores one whose seeds the new pool used), replays (of the run they
    name), confirmatory runs, and the probes that chose the setting."""
    if dest.exists():
        for old in sorted(p for p in dest.iterdir() if p.is_dir()):
            if not (new / old.name).exists():
                old.rename(new / old.name)
        shutil.rmtree(dest)
    new.rename(dest)


def compare_replay(recorded: Path, replay: Path) -> dict:
    """A replay (one ``dvc repro`` with run.json's params) against the recorded run: how
    many verdicts and values differ (none on the machine that recorded it)."""
    a = {(c["id"], c["precision"]): c for c in json.loads((recorded / "claims.json").read_text())}
    b = {(c["id"], c["precision"]): c for c in json.loads((replay / "claims.json").read_text())}
    differ, worst = [], 0.0
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key, {}).get("verdict"), b.get(key, {}).get("verdict")
        if va != vb:
            differ.append({"claim": key[0], "precision": key[1], "recorded": va, "replay": vb})
        xa = a.get(key, {}).get("measured", {}).get("value")
        xb = b.get(key, {}).get("measured", {}).get("value")
        if isinstance(xa, int | float) and isinstance(xb, int | float) and xa == xa and xb == xb:
            worst = max(worst, abs(xa - xb))
    return {"verdicts_differ": len(differ), "differences": differ, "max_value_difference": worst}


def compare_blocks(pooled: Path, block: Path) -> tuple[str, dict]:
    """A held-out block's verdicts next to the pooled run's: a decisive verdict of the
    block that disagrees with the pooled verdict is flagged."""
    a = {(c["id"], c["precision"]): c for c in json.loads((pooled / "claims.json").read_text())}
    b = {(c["id"], c["precision"]): c for c in json.loads((block / "claims.json").read_text())}
    seeds_a = json.loads((pooled / "run.json").read_text())["seeds"]
    seeds_b = json.loads((block / "run.json").read_text())["seeds"]
    overlap = sorted(set(seeds_a) & set(seeds_b))
    lines = [
        f"# Held-out block: seeds {seeds_b} against the pooled run (seeds {seeds_a})",
        "",
        *(
            [f"**The block shares seeds {overlap} with the pooled run: it is not held out.**", ""]
            if overlap
            else []
        ),
        "| claim | precision | pooled verdict | block verdict | pooled value | block value | agrees |",
        "|---|---|---|---|---|---|---|",
    ]
    differ = disagree = 0
    flagged = []
    for key in sorted(set(a) | set(b)):
        va = a.get(key, {}).get("verdict", "absent")
        vb = b.get(key, {}).get("verdict", "absent")
        ma = a.get(key, {}).get("measured", {}).get("value", float("nan"))
        mb = b.get(key, {}).get("measured", {}).get("value", float("nan"))
        differ += va != vb
        # the block disagrees when it decides the other way (or decides where the pool
        # decided the other way); an inconclusive block is only less evidence
        other_side = opposite(va, vb)
        disagree += other_side
        if other_side:
            flagged.append(key[0])
        mark = "yes" if va == vb else "**no (opposite)**" if other_side else "no"
        lines.append(f"| {key[0]} | {key[1]} | {va} | {vb} | {ma:.4g} | {mb:.4g} | {mark} |")
    lines += [
        "",
        f"Verdicts that differ: {differ}; decided the opposite way: {disagree}.",
    ]
    summary = {
        "pooled_seeds": seeds_a,
        "block_seeds": seeds_b,
        "overlap": overlap,
        "differ": differ,
        "disagree": disagree,
        "disagreeing_claims": sorted(set(flagged)),
    }
    return "\n".join(lines) + "\n", summary


def main(argv: list[str], root: Path) -> int:
    """``python -m reprolab paper``: the paper profile of some methods (see the module
    docstring); 2 on a refused run, 130 when interrupted."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="reprolab paper", description=__doc__.split("\n\n")[0].replace("\n", " ")
    )
    parser.add_argument("methods", nargs="+", help="method slugs (see `python -m reprolab list`)")
    parser.add_argument("--seeds", help="a held-out block: comma-separated seeds, one look")
    parser.add_argument("--amend", default="", help="why a claim or its setting changed")
    parser.add_argument("--replay", action="store_true", help="one run with run.json's seeds")
    parser.add_argument(
        "--confirm",
        action="store_true",
        help="run the method's committed registration exactly (python -m reprolab confirm)",
    )
    parser.add_argument(
        "--ledger-only",
        action="store_true",
        help="record registrations and amendments (with --amend) in the ledger, run nothing",
    )
    parser.add_argument("--out", type=Path, default=root / "docs" / "results")
    parser.add_argument("--work", type=Path, help="where the copy is run (default: temp)")
    parser.add_argument(
        "--resume", type=Path, help="a killed run's copy: go on from the round it cut short"
    )
    args = parser.parse_args(argv)
    from reprolab.ops.children import exit_on_signals

    try:
        seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else None
    except ValueError:
        parser.error(f"--seeds: expected integers separated by commas, got {args.seeds!r}")
    run = None
    try:
        run = PaperRun(
            root,
            args.methods,
            seeds=seeds,
            amend=args.amend,
            replay=args.replay,
            confirm=args.confirm,
            out=args.out,
            work=args.work,
            resume=args.resume,
        )
        if args.ledger_only:
            run.record_ledger(run.check_ledger())
        else:
            exit_on_signals()  # SIGTERM / SIGHUP stop the dvc repro it waits on, as Ctrl-C
            run.run()
    except (PaperError, registry.UnknownMethodError) as exc:
        print(f"paper: error: {exc}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, SystemExit) as exc:
        code = exc.code if isinstance(exc, SystemExit) else 130
        if run is not None and run.copy is not None:
            print(
                f"paper: stopped; the units finished so far are kept in {run.copy} (go on "
                f'with: make paper METHODS="{" ".join(args.methods)}" RESUME={run.copy})',
                file=sys.stderr,
            )
        return code if isinstance(code, int) else 1
    return 0
