"""One Prefect task per pipeline stage, built on :func:`reprolab.stages.run_stage`.

A stage DVC reports as up to date is skipped; a stage that ran is committed to DVC
(`dvc commit -f <stage>`), so `dvc status` agrees and `dvc repro` after a Prefect run
has nothing to do. DVC is the cache: Prefect caches nothing and persists no results.

A stage task may run in the flow's process or on a Dask worker (``reproduce_all`` with a
Dask executor runs methods concurrently). Everything it needs from the flow's process
(the MLflow store and chain run, the flow-run id) comes as ``env``, set for the stage
and restored after it, so a long-lived worker serves any project. Its DVC calls (status
before, commit after) wait for DVC's repository lock: stages of different methods
compute at the same time, and DVC records them one at a time.

No retries on stages: a stage failure is deterministic (bad input, a bug) and retrying
would only repeat it. Publishing the artifacts talks to the Prefect API, which can fail
transiently, so that task retries.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.states import Completed, State

from reprolab.core.tracking import SMOKE, shown_verdict
from reprolab.ops import dvcstate
from reprolab.paths import reports_dir
from reprolab.stages import run_stage

#: the Prefect table artifact's columns: the answer first, the paper's long text last
CLAIM_COLUMNS = [
    "method",
    "claim",
    "precision",
    "verdict",
    "measured",
    "interval",
    "paper",
    "profile",
]
#: a cell of the compact markdown artifact is cut to this many characters
CELL_CHARS = 70
#: the compact artifact's first line when a smoke verdict is in it
SMOKE_BANNER = (
    "**Smoke profile: its verdicts check the machinery; they are not evidence.** "
    "Each smoke verdict is marked (smoke)."
)


def _shown(c: dict) -> str:
    """A claim's verdict in words, marked '(smoke)' on the smoke profile."""
    return shown_verdict(c["verdict"].replace("_", " "), str(c.get("profile", "")))


@contextmanager
def environ(**values: str) -> Iterator[None]:
    """Set environment variables for the stages run in this process; restore after."""
    before = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@task(
    name="stage",
    task_run_name="{name}",
    retries=0,
    cache_policy=NO_CACHE,
    persist_result=False,
)
def stage_task(name: str, root: str, env: dict[str, str] | None = None) -> dict | State:
    """Run the DVC stage ``name`` (e.g. ``train@ensloss``, ``report``) unless up to date,
    with the environment variables ``env`` set while it runs."""
    with environ(**(env or {})):
        return _stage(name, root)


def _stage(name: str, root: str) -> dict | State:
    logger = get_run_logger()
    project = Path(root)
    changes = dvcstate.status(project, name)
    stage, slug = dvcstate.split_name(name)
    if not changes:
        logger.info("%s is up to date in DVC: skipped", name)
        _log_verdicts(logger, project, stage, slug)
        # a state of its own in the UI (not "Completed"); the flow reads it with outcome()
        return Completed(name="Skipped", message=f"{name} is up to date in DVC")
    logger.info("running %s (%s)", name, dvcstate.describe(changes))
    started = time.perf_counter()
    run_stage(stage, slug, project)
    seconds = round(time.perf_counter() - started, 2)
    dvcstate.commit(project, name)
    logger.info("%s done in %.1f s and committed to dvc.lock", name, seconds)
    _log_verdicts(logger, project, stage, slug)
    return {"stage": name, "skipped": False, "seconds": seconds}


def outcome(name: str, value) -> dict:
    """A stage task's result as a dict: what it returned when it ran, and
    ``{"stage": name, "skipped": True}`` for a skipped stage (whose task ends in the
    ``Skipped`` state: a direct call returns that state, a future's result None)."""
    if value is None or isinstance(value, State):
        return {"stage": name, "skipped": True}
    return value


def _log_verdicts(logger, project: Path, stage: str, slug: str | None) -> None:
    """An evaluate stage's headline verdicts, one line each, into the task's log."""
    if stage != "evaluate" or not slug:
        return
    for line in verdict_lines(_claims(project, slug)):
        logger.info("%s", line)


def _claims(project: Path, slug: str) -> list[dict]:
    from reprolab.core import io
    from reprolab.paths import MethodPaths

    paths = MethodPaths(project, slug)
    claims = []
    for path in (paths.eval / "claims.json", paths.runtime / "claims.json"):
        if path.is_file():
            claims += io.read_json(path)
    return claims


def _cut(text: str, n: int = CELL_CHARS) -> str:
    text = " ".join(str(text).split()).replace("|", "/")
    return text if len(text) <= n else text[: n - 1] + "…"


def _measured(m: dict) -> str:
    """The value and its interval; what the check said when there is no value (a claim
    not tested: its reason)."""
    import math

    from reprolab.stages.report import format_interval, format_value

    value = m.get("value")
    if not isinstance(value, int | float) or not math.isfinite(value):
        return _cut(m.get("summary") or "no value")
    return f"{format_value(value)} {format_interval(m)}"


def verdict_lines(claims: list[dict]) -> list[str]:
    """``<claim> [<precision>]: <VERDICT>, measured <value> [<interval>] (paper: ...)``
    for each headline claim, the central one marked, a smoke verdict ``<VERDICT> (smoke)``."""
    out = []
    for c in claims:
        if not c.get("headline", c.get("precision") == "fp32"):
            continue
        star = " (central)" if c.get("central") else ""
        verdict = _shown({**c, "verdict": c["verdict"].upper()})  # REPRODUCED (smoke)
        out.append(
            f"{c['id']}{star} [{c['precision']}]: {verdict}, "
            f"measured {_measured(c['measured'])} (paper: {_cut(c.get('paper_value', ''))})"
        )
    return out


def report_link(report: str) -> str:
    """The full report as a markdown link, ``[<path>](file:///<path>)``: the Prefect UI
    renders it as a link showing the path (a relative link would resolve against the
    UI's own address)."""
    path = Path(report).absolute()
    return f"[{path}]({path.as_uri()})"


def claims_of(table, methods):
    """The rows of the claims table (``claims.csv``, every method of the report) of
    ``methods`` only: the ones a flow ran."""
    return table[table["method"].isin(list(methods))]


def compact_markdown(by_method: dict[str, list[dict]], report: str) -> str:
    """The artifact a user reads first: per method, one row per claim and precision with
    the verdict, then measured and paper (cut to :data:`CELL_CHARS`); figures and long
    texts are in the full report (linked). A smoke verdict is marked '(smoke)',
    under a banner line saying smoke verdicts are no evidence."""
    smoke = any(c.get("profile") == SMOKE for claims in by_method.values() for c in claims)
    lines = [
        "# reprolab claims: verdict, measured, paper",
        "",
        *([SMOKE_BANNER, ""] if smoke else []),
        f"Full report (figures, the paper's setting, the evidence rules): {report_link(report)}",
    ]
    for slug, claims in by_method.items():
        lines += [
            "",
            f"## {slug}",
            "",
            "| claim | precision | verdict | measured [interval] | paper |",
            "|---|---|---|---|---|",
        ]
        for c in claims:
            star = " **(central)**" if c.get("central") else ""
            lines.append(
                f"| {c['id']}{star} | {c['precision']} | **{_shown(c)}** "
                f"| {_measured(c['measured'])} | {_cut(c.get('paper_value', ''))} |"
            )
    return "\n".join(lines) + "\n"


def table_rows(table) -> list[dict]:
    """The table artifact's rows (:data:`CLAIM_COLUMNS` of claims.csv), a smoke row's
    verdict marked '(smoke)' beside its profile column."""
    rows = table[CLAIM_COLUMNS].to_dict("records")
    for row in rows:
        row["verdict"] = shown_verdict(row["verdict"], row["profile"])
    return rows


@task(
    name="publish-claims",
    task_run_name="publish-claims",
    retries=2,
    retry_delay_seconds=2,
    cache_policy=NO_CACHE,
    persist_result=False,
)
def publish_claims(root: str, methods: list[str] | None = None) -> dict:
    """Publish the claims of ``methods`` (default: every configured method) from the
    table the report stage wrote as Prefect artifacts, no other method's."""
    import pandas as pd

    from reprolab import config

    project = Path(root)
    folder = reports_dir(project)
    slugs = list(methods or config.load(project / "params.yaml").slugs)
    markdown_id = create_markdown_artifact(
        markdown=compact_markdown(
            {s: _claims(project, s) for s in slugs}, str(folder / "claims.html")
        ),
        key="claims-report",
        description="reprolab claims: verdict, measured, paper",
    )
    table = pd.read_csv(folder / "claims.csv", dtype=str, keep_default_na=False)
    table = claims_of(table, slugs)
    table_id = create_table_artifact(
        table=table_rows(table),
        key="claims-table",
        description="reprolab claims: one row per claim and precision",
    )
    return {
        "markdown_artifact": str(markdown_id),
        "table_artifact": str(table_id),
        "rows": len(table),
    }


@task(
    name="publish-method-claims",
    task_run_name="publish-claims-{slug}",
    retries=2,
    retry_delay_seconds=2,
    cache_policy=NO_CACHE,
    persist_result=False,
)
def publish_method_claims(slug: str, root: str) -> str:
    """One method's verdicts as a compact markdown artifact (``claims-<slug>``), from its
    evaluate stage's claims (no report stage needed)."""
    project = Path(root)
    report = reports_dir(project) / "claims.html"
    artifact = create_markdown_artifact(
        markdown=compact_markdown({slug: _claims(project, slug)}, str(report)),
        key=f"claims-{slug.replace('_', '-')}",
        description=f"{slug}: verdict, measured, paper",
    )
    return str(artifact)
