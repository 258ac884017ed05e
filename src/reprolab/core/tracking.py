"""MLflow tracking: one experiment per method, a parent run per execution of a method's
chain, a child run per stage, and grandchild runs per unit (task x variant x seed).

Settings come from ``mlflow.env`` (KEY=VALUE) at the project root; variables already
in the environment win. A relative SQLite path in the tracking URI is resolved against
the project root so every entry point (DVC stage, Prefect task, test, ``make ui``)
talks to the same store. A tracking server that is not there is reported within
seconds, before any compute, instead of hanging in MLflow's retry loop.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

ENV_FILE = "mlflow.env"
PARENT_ENV = "REPROLAB_PARENT_RUN_ID"
FLOW_RUN_ENV = "REPROLAB_PREFECT_FLOW_RUN_ID"
CHAIN_END_STAGE = "evaluate"


#: MLflow 3's experiment-type tag (its UI reads it to choose the experiment's start page)
EXPERIMENT_KIND = "mlflow.experimentKind"
#: the experiment's description in the MLflow UI (its experiment list and page)
NOTE_TAG = "mlflow.note.content"
#: query of every UI link: the run pages and runs tables of model training, not the GenAI
#: overview MLflow 3 opens by default
UI_WORKFLOW = "workflowType=machine_learning"
#: the runs-table view each method's experiment carries: MLflow's "share view" state, an
#: experiment tag ``mlflow.sharedViewState.<key>`` the UI opens with ``?viewStateShareKey``
VIEW_KEY = "reprolab"
VIEW_TAG = f"mlflow.sharedViewState.{VIEW_KEY}"
#: tags every run carries: its profile and, on a smoke run, what its verdicts are worth
PROFILE_TAG = "profile"
EVIDENCE_TAG = "evidence"
SMOKE = "smoke"
SMOKE_EVIDENCE = "smoke: machinery check, not evidence"
#: the metric a stage run (and, summed, its chain run) records its own wall time in
COMPUTE_METRIC = "compute_seconds"


#: the tags a paper run hands its stages (JSON: ``paper_run`` exploratory / confirmatory
#: / held-out block / replay, ``registration``, ``paper_commit``; ``reprolab.evidence.running.paper``)
RUN_TAGS_ENV = "REPROLAB_RUN_TAGS"


def profile_tags(profile: str) -> dict[str, str]:
    """``profile`` = smoke / paper on every run, and ``evidence`` on a smoke run: its
    verdicts check the machinery, they are not evidence; plus the paper run's own tags
    (:data:`RUN_TAGS_ENV`), so its runs can be filtered by kind and registration."""
    tags = {PROFILE_TAG: profile}
    if profile == SMOKE:
        tags[EVIDENCE_TAG] = SMOKE_EVIDENCE
    extra = os.environ.get(RUN_TAGS_ENV, "")
    if extra:
        try:
            tags.update({str(k): str(v) for k, v in json.loads(extra).items()})
        except (ValueError, AttributeError):
            raise TrackingUnavailableError(
                f"{RUN_TAGS_ENV} is not a JSON object: {extra!r}"
            ) from None
    return tags


def shown_verdict(verdict: str, profile: str) -> str:
    """A verdict as it is shown: 'reproduced (smoke)' on the smoke profile, else as it is."""
    return f"{verdict} ({SMOKE})" if profile == SMOKE else verdict


def run_name(method: str, stage: str, profile: str, seeds: Iterable[int] = ()) -> str:
    """A run's name in the runs table: what ran, on which profile and seeds, e.g.
    ``desk_reject · evaluate · smoke · seeds 0-1`` (no seeds part when there are none)."""
    from reprolab.contract import seed_ranges

    seeds = sorted({int(s) for s in seeds})
    parts = [method, stage, profile, *([f"seeds {seed_ranges(seeds)}"] if seeds else [])]
    return " · ".join(parts)


def verdict_params(claims: Iterable[dict], profile: str) -> dict[str, str]:
    """``verdict.<claim>`` -> the headline verdict as a word (at fp32, or at the scheme a
    quantization claim is about), marked on the smoke profile (:func:`shown_verdict`).
    MLflow params, so the runs table shows them as words beside the metrics; the
    per-precision verdicts stay tags (``verdict.<claim>.<precision>``)."""
    return {
        f"verdict.{c['id']}": shown_verdict(c["verdict"], profile)
        for c in claims
        if c.get("headline", c.get("precision") == "fp32")
    }


def runs_view_url(experiment_id: str) -> str:
    """The experiment's runs table with the project's columns (verdicts, profile)."""
    return f"#/experiments/{experiment_id}/runs?viewStateShareKey={VIEW_KEY}&{UI_WORKFLOW}"


def run_url(experiment_id: str, run_id: str) -> str:
    """A run's page in the model-training view. Every UI link the project prints or
    writes is built here or by :func:`runs_view_url`, so each carries :data:`UI_WORKFLOW`."""
    return f"#/experiments/{experiment_id}/runs/{run_id}?{UI_WORKFLOW}"


def view_state(columns: list[tuple[str, str]]) -> str:
    """MLflow's shared-view JSON for a runs table showing ``columns`` ((kind, name)
    pairs, kind ``tags`` / ``metrics`` / ``params``), newest runs first."""
    import json

    return json.dumps(
        {
            "selectedColumns": [f"{kind}.`{name}`" for kind, name in columns],
            "orderByKey": "attributes.start_time",
            "orderByAsc": False,
        }
    )


class TrackingUnavailableError(RuntimeError):
    """The MLflow tracking store named in mlflow.env cannot be reached."""


def load_env(root: Path) -> dict[str, str]:
    """Load ``mlflow.env`` into ``os.environ`` (existing variables win); return it."""
    from dotenv import dotenv_values

    path = root / ENV_FILE
    if not path.is_file():
        raise TrackingUnavailableError(f"{path} not found: it holds MLFLOW_TRACKING_URI")
    values = {k: v for k, v in dotenv_values(path).items() if v is not None}
    for key, value in values.items():
        os.environ.setdefault(key, value)
    uri = os.environ.get("MLFLOW_TRACKING_URI")
    if not uri:
        raise TrackingUnavailableError(f"{path}: MLFLOW_TRACKING_URI is not set")
    os.environ["MLFLOW_TRACKING_URI"] = resolve_uri(uri, root)
    return values


def artifact_root(root: Path) -> Path | None:
    """Where new experiments keep their artifacts: next to the SQLite store in use (so a
    scratch copy tracking into its project's store writes artifacts there too); with a
    tracking server (http, https), wherever the server keeps them (None: its artifact
    root, proxied); else ``root/.mlflow/artifacts``."""
    uri = os.environ.get("MLFLOW_TRACKING_URI", "")
    prefix = "sqlite:///"
    if uri.startswith(prefix + "/"):
        return Path(uri[len(prefix) :]).parent / "artifacts"
    if uri.startswith(("http://", "https://")):
        return None
    return root / ".mlflow" / "artifacts"


def resolve_uri(uri: str, root: Path) -> str:
    """Make a relative ``sqlite:///rel/path.db`` absolute against the project root."""
    prefix = "sqlite:///"
    if uri.startswith(prefix) and not uri.startswith(prefix + "/"):
        return prefix + str((root / uri[len(prefix) :]).resolve())
    return uri


def preflight(uri: str, timeout: float = 3.0) -> None:
    """Fail fast, naming the URI, when the tracking store cannot be used."""
    parsed = urlparse(uri)
    if parsed.scheme in ("http", "https"):
        host = parsed.hostname or "127.0.0.1"
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        hint = (
            f"MLflow tracking server {uri} (MLFLOW_TRACKING_URI from mlflow.env) is not "
            "reachable; start it (`make ui`) or point MLFLOW_TRACKING_URI at a SQLite "
            "file such as sqlite:///.mlflow/mlflow.db"
        )
        try:
            with socket.create_connection((host, port), timeout=timeout):
                pass
            with urllib.request.urlopen(f"{uri.rstrip('/')}/health", timeout=timeout) as resp:
                if resp.status != 200:
                    raise TrackingUnavailableError(f"{hint} (health check answered {resp.status})")
        except (OSError, urllib.error.URLError) as exc:
            raise TrackingUnavailableError(f"{hint} ({exc})") from None
    elif parsed.scheme == "sqlite":
        Path(uri[len("sqlite:///") :]).parent.mkdir(parents=True, exist_ok=True)


def git_state(root: Path) -> dict[str, str]:
    def git(*args: str) -> str:
        try:
            out = subprocess.run(
                ["git", *args], cwd=root, capture_output=True, text=True, timeout=10
            )
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return out.stdout.strip() if out.returncode == 0 else ""

    commit = git("rev-parse", "HEAD") or "unknown"
    # the code and settings against the commit; dvc.lock is left out: a run rewrites it
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!dvc.lock")
    return {"reprolab.git_commit": commit, "reprolab.git_dirty": str(bool(dirty)).lower()}


def dvc_hashes(root: Path, inputs: Iterable[Path]) -> dict[str, str]:
    """The md5 DVC recorded (in dvc.lock) for each input path, as MLflow tags."""
    lock_path = root / "dvc.lock"
    recorded: dict[str, str] = {}
    if lock_path.is_file():
        lock = yaml.safe_load(lock_path.read_text()) or {}
        for stage in (lock.get("stages") or {}).values():
            for out in stage.get("outs") or []:
                recorded[out["path"]] = out.get("md5", "")
    tags = {}
    for path in inputs:
        rel = path.relative_to(root).as_posix()
        tags[f"dvc.md5.{rel}"] = recorded.get(rel, "not-in-dvc.lock")
    return tags


def flatten(obj: Any, prefix: str = "") -> dict[str, str]:
    """{"a": {"b": 1}} -> {"a.b": "1"}; lists become JSON strings."""
    out: dict[str, str] = {}
    if isinstance(obj, dict):
        for key, value in obj.items():
            out.update(flatten(value, f"{prefix}{key}."))
    else:
        text = json.dumps(obj) if isinstance(obj, list | tuple) else str(obj)
        out[prefix[:-1]] = text[:6000]
    return out


@contextmanager
def store_init_lock(uri: str) -> Iterator[None]:
    """For a SQLite store, one process at a time opens it for the first time: MLflow
    creates (or migrates) a store's tables when a process first touches it, and two
    processes doing so at once on a fresh file fail (``duplicate column name``), as do two
    creating the same experiment. Stages run concurrently under the Dask and Prefect
    executors. A server-backed store serialises this itself."""
    if not uri.startswith("sqlite:///"):
        yield
        return
    import fcntl

    db = Path(uri[len("sqlite:///") :])
    db.parent.mkdir(parents=True, exist_ok=True)
    with open(db.parent / f"{db.name}.init-lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class Tracker:
    """Tracking for one stage of one method (or the report, with slug 'report')."""

    def __init__(
        self, root: Path, experiment: str, stage: str, profile: str, description: str = ""
    ) -> None:
        from mlflow.tracking import MlflowClient

        uri = os.environ["MLFLOW_TRACKING_URI"]
        self.root = root
        self.experiment = experiment
        self.stage = stage
        self.profile = profile
        self._opened = time.perf_counter()  # compute_seconds counts from here
        with store_init_lock(uri):  # the store's tables and the experiment, created once
            self.client = MlflowClient(tracking_uri=uri)
            self.experiment_id = self._experiment(experiment, description)
        self.parent_id: str | None = None
        self.owns_parent = False
        self.run_id: str | None = None
        self._base_tags = {
            **git_state(root),
            **profile_tags(profile),
            "reprolab.profile": profile,
            "reprolab.slug": experiment,
        }
        flow_run = os.environ.get(FLOW_RUN_ENV)
        if flow_run:
            self._base_tags["prefect.flow_run_id"] = flow_run

    def _experiment(self, name: str, description: str = "") -> str:
        """The experiment's id, created on first use; ``description`` (what the
        experiment holds, e.g. the paper's title) is its note in the MLflow UI's
        experiment list, set once."""
        found = self.client.get_experiment_by_name(name)
        if found is not None:
            if description and NOTE_TAG not in found.tags:
                self.client.set_experiment_tag(found.experiment_id, NOTE_TAG, description)
            return found.experiment_id
        base = artifact_root(self.root)
        artifacts = (base / name).resolve().as_uri() if base is not None else None
        try:
            # model training, not GenAI (MLflow 3 reads the kind when it picks an
            # experiment's page); links also carry ``?workflowType=machine_learning``
            return self.client.create_experiment(
                name,
                artifact_location=artifacts,
                tags={
                    EXPERIMENT_KIND: "custom_model_development",
                    **({NOTE_TAG: description} if description else {}),
                },
            )
        except Exception:  # created concurrently by another process
            found = self.client.get_experiment_by_name(name)
            if found is None:
                raise
            return found.experiment_id

    def _chain_parent(self, params: dict[str, Any] | None = None) -> str:
        """The chain run this stage belongs to (created by the first stage that runs,
        named after the method, the profile and the seeds of ``params``)."""
        env_parent = os.environ.get(PARENT_ENV)
        if env_parent:
            return env_parent
        runs = self.client.search_runs(
            [self.experiment_id],
            filter_string="tags.`reprolab.kind` = 'chain' and attributes.status = 'RUNNING'",
            order_by=["attributes.start_time DESC"],
            max_results=1,
        )
        if runs:
            return runs[0].info.run_id
        run = self.client.create_run(
            self.experiment_id,
            run_name=run_name(
                self.experiment, "chain", self.profile, (params or {}).get("seeds") or ()
            ),
            tags={
                **self._base_tags,
                **machine_tags(),
                "reprolab.kind": "chain",
                "reprolab.entry": "dvc",
            },
        )
        self.owns_parent = True
        return run.info.run_id

    def start(self, params: dict[str, Any], inputs: Iterable[Path] = (), chain: bool = True) -> str:
        self.parent_id = self._chain_parent(params) if chain else None
        if self.parent_id and not self.owns_parent:
            self._close_orphans(self.parent_id)
        tags = {
            **self._base_tags,
            **dvc_hashes(self.root, inputs),
            "reprolab.kind": "stage",
            "reprolab.stage": self.stage,
        }
        if self.parent_id:
            tags["mlflow.parentRunId"] = self.parent_id
        run = self.client.create_run(self.experiment_id, run_name=self.stage, tags=tags)
        self.run_id = run.info.run_id
        self.log_params(self.run_id, params)
        if self.parent_id and self.owns_parent:
            # the chain run a stage opened carries the setting too, so chains of different
            # settings can be told apart and compared
            self.log_params(self.parent_id, params)
        return self.run_id

    def _close_orphans(self, parent_id: str) -> None:
        """Mark KILLED the runs of this stage that a killed process left RUNNING."""

        def running_children(run_id: str, extra: str = "") -> list:
            return self.client.search_runs(
                [self.experiment_id],
                filter_string=f"tags.`mlflow.parentRunId` = '{run_id}' "
                f"and attributes.status = 'RUNNING'{extra}",
            )

        for stale in running_children(parent_id, f" and tags.`reprolab.stage` = '{self.stage}'"):
            for child in running_children(stale.info.run_id):
                self.client.set_terminated(child.info.run_id, "KILLED")
            self.client.set_terminated(stale.info.run_id, "KILLED")

    def finish(self, ok: bool) -> None:
        status = "FINISHED" if ok else "FAILED"
        try:
            self._log_compute_seconds()
        finally:
            if self.run_id:
                self.client.set_terminated(self.run_id, status)
            env_parent = os.environ.get(PARENT_ENV)
            if self.parent_id and not env_parent and (not ok or self.stage == CHAIN_END_STAGE):
                self.client.set_terminated(self.parent_id, status)

    def _log_compute_seconds(self) -> None:
        """``compute_seconds``: this stage's wall time, from opening its tracker to its
        end, on its run; on the chain run, the sum over the chain's stages so far (one
        step per stage), so the chain shows the compute apart from its wall-clock
        duration, which also holds the waits between its stages. A chain's stages run
        one after another, so reading the sum and adding to it races with nothing."""
        if not self.run_id:
            return
        seconds = time.perf_counter() - self._opened
        self.log_metrics(self.run_id, {COMPUTE_METRIC: seconds})
        if self.parent_id:
            history = self.client.get_metric_history(self.parent_id, COMPUTE_METRIC)
            last = max(history, key=lambda m: (m.step, m.timestamp), default=None)
            total = (last.value if last else 0.0) + seconds
            self.log_metrics(self.parent_id, {COMPUTE_METRIC: total}, step=len(history))

    @contextmanager
    def unit_run(self, name: str, params: dict[str, Any], tags: dict[str, str]) -> Iterator[str]:
        run = self.client.create_run(
            self.experiment_id,
            run_name=name,
            tags={
                **self._base_tags,
                **tags,
                "reprolab.kind": "unit",
                "reprolab.stage": self.stage,
                "mlflow.parentRunId": self.run_id or "",
            },
        )
        run_id = run.info.run_id
        self.log_params(run_id, params)
        ok = False
        try:
            yield run_id
            ok = True
        finally:
            self.client.set_terminated(run_id, "FINISHED" if ok else "FAILED")

    def log_params(self, run_id: str, params: dict[str, Any]) -> None:
        from mlflow.entities import Param

        items = [Param(k, v) for k, v in flatten(params).items()]
        for i in range(0, len(items), 100):
            self.client.log_batch(run_id, params=items[i : i + 100])

    def log_metrics(self, run_id: str, metrics: dict[str, float], step: int = 0) -> None:
        self.log_history(run_id, [{**metrics, "step": step}])

    def log_history(self, run_id: str, history: list[dict[str, float]]) -> None:
        """Per-epoch metrics; each row has an 'epoch' (or 'step') key used as the step."""
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        items = []
        for row in history:
            step = int(row.get("epoch", row.get("step", 0)))
            for key, value in row.items():
                if key in ("epoch", "step") or value is None:
                    continue
                items.append(Metric(key, float(value), now, step))
        for i in range(0, len(items), 1000):
            self.client.log_batch(run_id, metrics=items[i : i + 1000])

    def set_tags(self, run_id: str, tags: dict[str, str]) -> None:
        from mlflow.entities import RunTag

        items = [RunTag(k, str(v)) for k, v in tags.items()]
        for i in range(0, len(items), 100):
            self.client.log_batch(run_id, tags=items[i : i + 100])

    def log_artifact(self, run_id: str, path: Path, subdir: str | None = None) -> None:
        if path.exists():
            self.client.log_artifact(run_id, str(path), subdir)

    def share_view(self, columns: list[tuple[str, str]]) -> None:
        """Make ``runs_view_url`` open this experiment's runs table on ``columns``."""
        self.client.set_experiment_tag(self.experiment_id, VIEW_TAG, view_state(columns))

    def run_url(self, run_id: str) -> str:
        return run_url(self.experiment_id, run_id)


#: the folder of artifacts that sits next to a project's SQLite store
ARTIFACTS_DIR = "/.mlflow/artifacts"
_followed: set[str] = set()


def follow_moved_store(uri: str) -> dict[str, str]:
    """A SQLite store that was copied or moved with its project still records the old
    folder's artifact locations (MLflow stores them absolute), so its runs would write
    their artifacts into the original project. Rewrite each such location (experiments
    and runs) under ``.../.mlflow/artifacts`` to the artifacts folder next to this store;
    returns {old prefix: new prefix} (empty when nothing moved). Locations elsewhere (a
    server's, a folder the user chose) are left as they are."""
    import sqlite3

    prefix = "sqlite:///"
    if not uri.startswith(prefix + "/") or uri in _followed:
        return {}
    db = Path(uri[len(prefix) :])
    if not db.is_file():
        return {}
    here = (db.parent / "artifacts").resolve().as_uri()
    if not here.endswith(ARTIFACTS_DIR):
        return {}
    moved: dict[str, str] = {}
    with contextlib.closing(sqlite3.connect(db, timeout=60)) as con, con:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not {"experiments", "runs"} <= tables:
            return {}
        for (location,) in con.execute("SELECT DISTINCT artifact_location FROM experiments"):
            cut = (location or "").find(ARTIFACTS_DIR + "/")
            if location and location.startswith("file://") and cut >= 0:
                old = location[: cut + len(ARTIFACTS_DIR)]
                if old != here:
                    moved[old] = here
        for old, new in moved.items():
            for table, column in (("experiments", "artifact_location"), ("runs", "artifact_uri")):
                con.execute(
                    f"UPDATE {table} SET {column} = ? || substr({column}, ?) "
                    f"WHERE substr({column}, 1, ?) = ?",
                    (new, len(old) + 1, len(old) + 1, old + "/"),
                )
    _followed.add(uri)
    return moved


def machine_tags() -> dict[str, str]:
    from reprolab.core.machine import tags

    return tags()


def open_tracker(
    root: Path, experiment: str, stage: str, profile: str, description: str = ""
) -> Tracker:
    load_env(root)
    preflight(os.environ["MLFLOW_TRACKING_URI"])
    follow_moved_store(os.environ["MLFLOW_TRACKING_URI"])
    return Tracker(root, experiment, stage, profile, description)


def log(msg: str) -> None:
    """Progress output of long work (stderr, unbuffered, timestamped)."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def verdict_side(verdict: str) -> float:
    """The side of the bound a verdict's interval found, the value of the metric
    ``verdict_side.<claim>.<precision>``: +1 the claimed side (reproduced, at any size:
    ``reproduced_smaller`` too), -1 the other side (not_reproduced), 0 neither
    (inconclusive, no_effect, out_of_reach; the tag ``verdict.<claim>.<precision>``
    tells them apart). A number, so the runs table can sort and chart by it; the word is
    the tag and, for the headline, the param ``verdict.<claim>``."""
    from reprolab.evidence.judging.entries import SUPPORTED, VERDICTS

    if verdict not in VERDICTS:
        raise ValueError(f"unknown verdict {verdict!r}")
    return 1.0 if verdict in SUPPORTED else -1.0 if verdict == "not_reproduced" else 0.0


def claim_metrics(claims: list[dict]) -> dict[str, float]:
    """Per claim and precision: its measured value (``claim.<claim>.<precision>.value``)
    and its :func:`verdict_side` (``verdict_side.<claim>.<precision>``)."""
    out = {}
    for c in claims:
        out[f"claim.{c['id']}.{c['precision']}.value"] = c["measured"]["value"]
        out[f"verdict_side.{c['id']}.{c['precision']}"] = verdict_side(c["verdict"])
    return out
