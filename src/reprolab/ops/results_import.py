"""``python -m reprolab mlflow import-results``: the committed paper-profile results
(``docs/results/<slug>/`` and its held-out blocks ``seeds-*``, confirmatory runs
``confirm-*`` and replays ``replay``) as MLflow runs in the project's store, so that a
fresh clone's MLflow UI compares the verdicts that count without rerunning them.

One run per results folder (one that holds a ``claims.json``), in the method's
experiment (the one its chain runs use), named as the project names runs
(``desk_reject · held-out · paper · seeds 5-9``, :func:`reprolab.core.tracking.run_name`),
started at the results' date, with:

- tags to filter by: ``reprolab.kind`` = ``results``, ``method``, ``profile`` (and
  ``evidence`` on a smoke result), ``paper_run`` (exploratory, confirmatory, held-out
  block, replay: the values a live paper run tags its runs with), ``registration``,
  ``seeds`` (as ranges), ``paper_commit``, ``date``; per claim ``verdict.<claim>.<precision>``
  (the word) and ``paper.<claim>`` (the paper's value);
- params: ``verdict.<claim>``, each claim's headline verdict as a word
  (:func:`reprolab.core.tracking.verdict_params`), ``seeds``, ``n_seeds``;
- metrics: ``claim.<claim>.<precision>.value`` / ``.ci_low`` / ``.ci_high`` and
  ``verdict_side.<claim>.<precision>`` (as the evaluate stage logs them), and the
  variants' mean metrics of ``metrics.json``;
- artifacts: ``claims.json``, ``claims.md``, ``run.json``.

Idempotent: a run carries the folder (``reprolab.results_folder``) and its claims.json's
SHA-256 (``reprolab.claims_sha256``); a folder whose run holds the same hash is skipped,
one whose claims.json changed is imported again and its older run deleted (MLflow's
soft delete: it stays restorable, ``mlflow gc`` removes it for good).

The store is the project's, from ``mlflow.env`` as every entry point resolves it
(:func:`reprolab.core.tracking.load_env`; an ``MLFLOW_TRACKING_URI`` already set wins).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

#: the tag holding a run's results folder (relative to the project root) and its hash
FOLDER_TAG = "reprolab.results_folder"
HASH_TAG = "reprolab.claims_sha256"
#: ``reprolab.kind`` of an imported run (beside chain, stage, unit)
KIND = "results"
#: the folders under docs/results/ that are not a method's results
NOT_METHODS = {"ledger"}


class ResultsImportError(RuntimeError):
    """The results cannot be imported (a folder or file that is not what a paper run
    writes, a store that cannot be used); the message names it."""


@dataclass(frozen=True)
class Folder:
    """One results folder: the method, where it is, and what kind of run wrote it."""

    slug: str
    path: Path
    kind: str  # exploratory / confirmatory / held-out block / replay

    @property
    def label(self) -> str:
        """The run name's middle part: results, held-out, confirmatory, replay."""
        return {"exploratory": "results", "held-out block": "held-out"}.get(self.kind, self.kind)


def folders(results: Path) -> list[Folder]:
    """Every results folder under ``results`` (docs/results): each method's pooled run
    and the folders within it that hold a claims.json, sorted."""
    found = []
    for method in sorted(p for p in results.iterdir() if p.is_dir()):
        if method.name in NOT_METHODS or method.name.startswith("."):
            continue
        if (method / "claims.json").is_file():
            found.append(Folder(method.name, method, "exploratory"))
        for sub in sorted(p for p in method.iterdir() if p.is_dir()):
            if not (sub / "claims.json").is_file():
                continue
            if sub.name.startswith("seeds-"):
                kind = "held-out block"
            elif sub.name.startswith("confirm-"):
                kind = "confirmatory"
            elif sub.name == "replay":
                kind = "replay"
            else:
                kind = sub.name
            found.append(Folder(method.name, sub, kind))
    return found


def _read_json(path: Path) -> dict:
    if not path.is_file():
        return {}
    try:
        value = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ResultsImportError(f"{path}: not JSON ({err})") from None
    if not isinstance(value, dict):
        raise ResultsImportError(f"{path}: expected a JSON object, got {type(value).__name__}")
    return value


def _finite(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def describe(folder: Folder, root: Path) -> dict:
    """What the run of ``folder`` holds: name, tags, params, metrics, start time, artifacts."""
    from reprolab.contract import seed_ranges
    from reprolab.core.tracking import (
        claim_metrics,
        flatten,
        profile_tags,
        run_name,
        verdict_params,
    )
    from reprolab.evidence.judging import entries

    claims_path = folder.path / "claims.json"
    try:
        claims = entries.load(claims_path)
    except entries.EntryError as err:
        raise ResultsImportError(str(err)) from None
    run = _read_json(folder.path / "run.json")
    metrics_json = _read_json(folder.path / "metrics.json")
    profile = str(
        run.get("profile") or next((e.profile for e in claims if e.profile), "") or "paper"
    )
    kind = str(run.get("kind") or folder.kind)
    if kind == "sequential":  # run.json's name for the exploratory rounds
        kind = folder.kind
    seeds = sorted({int(s) for s in run.get("seeds") or ()}) or sorted(
        {s for e in claims for s in e.measured.seeds}
    )
    rel = folder.path.resolve().relative_to(root.resolve()).as_posix()
    tags = {
        **profile_tags(profile),
        "reprolab.kind": KIND,
        "reprolab.slug": folder.slug,
        "reprolab.profile": profile,
        FOLDER_TAG: rel,
        HASH_TAG: hashlib.sha256(claims_path.read_bytes()).hexdigest(),
        "method": folder.slug,
        "paper_run": kind,
        "seeds": seed_ranges(seeds),
    }
    registration = run.get("registration") or next(
        (e.confirmatory for e in claims if e.confirmatory), None
    )
    if registration:
        tags["registration"] = str(registration)
    if run.get("commit"):
        tags["paper_commit"] = str(run["commit"])
        tags["reprolab.git_commit"] = str(run["commit"])
    if run.get("date"):
        tags["date"] = str(run["date"])
    if run.get("stop"):
        tags["stop"] = str(run["stop"])[:4000]
    raw = [e.as_dict() for e in claims]
    for e in claims:
        tags[f"verdict.{e.id}.{e.precision}"] = e.verdict
        if e.paper_value:
            tags[f"paper.{e.id}"] = str(e.paper_value)[:4000]
        if e.central and e.headline:
            tags["central"] = e.id
    params = {
        **verdict_params(raw, profile),
        "seeds": json.dumps(seeds),
        "n_seeds": str(len(seeds)),
    }
    metrics = {k: v for k, v in claim_metrics(raw).items() if _finite(v)}
    for e in claims:
        for end in ("ci_low", "ci_high"):
            value = getattr(e.measured, end)
            if _finite(value):
                metrics[f"claim.{e.id}.{e.precision}.{end}"] = value
    for key, value in flatten(metrics_json.get("variants") or {}).items():
        try:
            number = float(value)
        except ValueError:
            continue
        if math.isfinite(number):
            metrics.setdefault(key, number)
    if _finite(run.get("compute_minutes")):
        metrics["compute_minutes"] = float(run["compute_minutes"])
    # run.json's date is when the run ended; its duration in the UI is its compute (the
    # runs' own time, not the wall time with waits between rounds)
    start = end = None
    if run.get("date"):
        try:
            end = int(datetime.fromisoformat(str(run["date"])).timestamp() * 1000)
        except ValueError:
            end = None
    if end is not None:
        minutes = run.get("compute_minutes")
        start = end - int(round(float(minutes) * 60_000)) if _finite(minutes) else end
    return {
        "name": run_name(folder.slug, folder.label, profile, seeds),
        "tags": tags,
        "params": params,
        "metrics": metrics,
        "start_time": start,
        "end_time": end,
        "artifacts": [
            folder.path / n
            for n in ("claims.json", "claims.md", "run.json")
            if (folder.path / n).is_file()
        ],
        "headline_columns": [("params", f"verdict.{e.id}") for e in claims if e.headline],
    }


def _description(slug: str) -> str:
    """The experiment's note: the paper's title, when the method is registered."""
    from reprolab import registry

    try:
        return registry.get(slug).title
    except Exception:  # an unregistered or unimportable method: no note
        return ""


def imported_runs(tracker) -> list:
    """Every live run imported into ``tracker``'s experiment (all pages)."""
    runs, token = [], None
    while True:
        page = tracker.client.search_runs(
            [tracker.experiment_id],
            filter_string=f"tags.`reprolab.kind` = '{KIND}'",
            max_results=1000,
            page_token=token,
        )
        runs += list(page)
        token = page.token
        if not token:
            return runs


def import_results(
    root: Path, results: Path | None = None, say=print, done=print
) -> dict[str, int]:
    """Import every results folder under ``results`` (default ``root/docs/results``)
    into the store of ``MLFLOW_TRACKING_URI`` (from ``root/mlflow.env`` unless already
    set); returns the counts ``added``, ``replaced``, ``unchanged``. ``say`` gets a line
    per folder, ``done`` the first line and the summary."""
    from mlflow.entities import Metric, Param, RunTag

    from reprolab.core import tracking

    results = results or root / "docs" / "results"
    if not results.is_dir():
        raise ResultsImportError(f"{results}: no results folder (docs/results of the project)")
    tracking.load_env(root)
    uri = os.environ["MLFLOW_TRACKING_URI"]
    tracking.preflight(uri)
    tracking.follow_moved_store(uri)
    found = folders(results)
    if not found:
        raise ResultsImportError(f"{results}: no results folder holds a claims.json")
    done(f"importing {len(found)} results folders from {results} into {uri}")
    counts = {"added": 0, "replaced": 0, "unchanged": 0}
    trackers: dict[str, tracking.Tracker] = {}
    imported: dict[str, list] = {}  # folder -> the runs imported from it before
    for i, folder in enumerate(found, 1):
        what = describe(folder, root)
        if folder.slug not in trackers:
            trackers[folder.slug] = tracking.Tracker(
                root, folder.slug, KIND, what["tags"]["profile"], _description(folder.slug)
            )
            # one query per method: every run imported into its experiment before
            for run in imported_runs(trackers[folder.slug]):
                imported.setdefault(run.data.tags.get(FOLDER_TAG, ""), []).append(run)
        tracker = trackers[folder.slug]
        client = tracker.client
        rel = what["tags"][FOLDER_TAG]
        held = imported.get(rel, [])
        same = [r for r in held if r.data.tags.get(HASH_TAG) == what["tags"][HASH_TAG]]
        where = f"[{i}/{len(found)}] {rel}"
        if same:
            counts["unchanged"] += 1
            say(f"{where}: up to date (run {same[0].info.run_id})")
            continue
        run = client.create_run(
            tracker.experiment_id,
            start_time=what["start_time"],
            tags=what["tags"],
            run_name=what["name"],
        )
        run_id = run.info.run_id
        try:
            params = [Param(k, v) for k, v in what["params"].items()]
            for j in range(0, len(params), 100):
                client.log_batch(run_id, params=params[j : j + 100])
            stamp = what["start_time"] or int(datetime.now().timestamp() * 1000)
            items = [Metric(k, float(v), stamp, 0) for k, v in what["metrics"].items()]
            for j in range(0, len(items), 1000):
                client.log_batch(run_id, metrics=items[j : j + 1000])
            for path in what["artifacts"]:
                client.log_artifact(run_id, str(path))
        except Exception:
            client.set_terminated(run_id, "FAILED")
            client.delete_run(run_id)  # a half-written run is not kept as imported
            raise
        client.log_batch(run_id, tags=[RunTag("reprolab.imported", "true")])
        client.set_terminated(run_id, "FINISHED", end_time=what["end_time"])
        for old in held:
            client.delete_run(old.info.run_id)
        if held:
            counts["replaced"] += 1
            say(f"{where}: claims.json changed, imported again as {what['name']!r} (run {run_id})")
        else:
            counts["added"] += 1
            say(f"{where}: imported as {what['name']!r} (run {run_id})")
        experiment = client.get_experiment(tracker.experiment_id)
        if tracking.VIEW_TAG not in experiment.tags and what["headline_columns"]:
            # a fresh store: the experiment opens on the verdicts, as an evaluated one does
            tracker.share_view(
                [
                    *what["headline_columns"],
                    ("tags", "paper_run"),
                    ("tags", "seeds"),
                    ("tags", tracking.PROFILE_TAG),
                ]
            )
    ui = os.environ.get("REPROLAB_MLFLOW_UI", "http://127.0.0.1:5000")
    done(
        f"{counts['added']} added, {counts['replaced']} re-imported, {counts['unchanged']} "
        f"up to date; filter them in the MLflow UI (make ui, {ui}) with "
        f"tags.`reprolab.kind` = '{KIND}'"
    )
    return counts


USAGE = "python -m reprolab mlflow import-results [--results DIR] [-q]"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="reprolab mlflow",
        description="MLflow helpers of the project. import-results: load the committed "
        "docs/results/<slug>/ folders (pooled, seeds-*, confirm-*, replay) into the project's "
        "MLflow store (mlflow.env), one run per folder; a second call adds nothing.",
    )
    sub = parser.add_subparsers(dest="action", required=True)
    p = sub.add_parser("import-results", help="load docs/results into the project's MLflow store")
    p.add_argument(
        "--results", type=Path, help="the results folder (default: docs/results of the project)"
    )
    p.add_argument("-q", "--quiet", action="store_true", help="print only the summary line")
    args = parser.parse_args(argv)
    from reprolab.core.tracking import TrackingUnavailableError
    from reprolab.paths import project_root

    def say(line: str) -> None:
        if not args.quiet:
            print(line, flush=True)

    try:
        root = project_root(Path.cwd())
        import_results(root, args.results.resolve() if args.results else None, say)
    except KeyboardInterrupt:
        print("reprolab mlflow import-results: interrupted", file=sys.stderr)
        return 130
    except (ResultsImportError, TrackingUnavailableError, FileNotFoundError) as exc:
        print(f"reprolab mlflow import-results: {exc}", file=sys.stderr)
        return 2
    return 0
