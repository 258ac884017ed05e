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

from reprolab.ops import dvcstate
from reprolab.paths import reports_dir
from reprolab.stages import run_stage

CLAIM_COLUMNS = [
    "method",
    "claim",
    "precision",
    "paper",
    "measured",
    "interval",
    "verdict",
    "profile",
]


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
def stage_task(name: str, root: str, env: dict[str, str] | None = None) -> dict:
    """Run the DVC stage ``name`` (e.g. ``train@ensloss``, ``report``) unless up to date,
    with the environment variables ``env`` set while it runs."""
    with environ(**(env or {})):
        return _stage(name, root)


def _stage(name: str, root: str) -> dict:
    logger = get_run_logger()
    project = Path(root)
    changes = dvcstate.status(project, name)
    if not changes:
        logger.info("%s is up to date in DVC: skipped", name)
        return {"stage": name, "skipped": True}
    logger.info("running %s (%s)", name, dvcstate.describe(changes))
    stage, slug = dvcstate.split_name(name)
    started = time.perf_counter()
    run_stage(stage, slug, project)
    seconds = round(time.perf_counter() - started, 2)
    dvcstate.commit(project, name)
    logger.info("%s done in %.1f s and committed to dvc.lock", name, seconds)
    return {"stage": name, "skipped": False, "seconds": seconds}


@task(
    name="publish-claims",
    retries=2,
    retry_delay_seconds=2,
    cache_policy=NO_CACHE,
    persist_result=False,
)
def publish_claims(root: str) -> dict:
    """Publish the claims table (written by the report stage) as Prefect artifacts."""
    import pandas as pd

    folder = reports_dir(Path(root))
    markdown_id = create_markdown_artifact(
        markdown=(folder / "claims.md").read_text(),
        key="claims-report",
        description="reprolab claims: paper vs measured",
    )
    table = pd.read_csv(folder / "claims.csv", dtype=str, keep_default_na=False)
    table_id = create_table_artifact(
        table=table[CLAIM_COLUMNS].to_dict("records"),
        key="claims-table",
        description="reprolab claims: one row per claim and precision",
    )
    return {
        "markdown_artifact": str(markdown_id),
        "table_artifact": str(table_id),
        "rows": len(table),
    }
