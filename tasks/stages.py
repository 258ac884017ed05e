"""One Prefect task per pipeline stage, built on :func:`reprolab.stages.run_stage`.

A stage DVC reports as up to date is skipped; a stage that ran is committed to DVC, so
`dvc repro` after a Prefect run has nothing to do. No retries here: a stage failure is
deterministic (bad input, a bug), and retrying would only repeat it.
"""

from __future__ import annotations

from pathlib import Path

from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from reprolab import dvcstate
from reprolab.stages import run_stage


@task(name="stage", task_run_name="{stage}@{slug}", retries=0)
def stage_task(stage: str, slug: str | None, root: str) -> dict:
    logger = get_run_logger()
    name = dvcstate.stage_name(stage, slug)
    project = Path(root)
    if dvcstate.is_up_to_date(project, name):
        logger.info("%s is up to date in DVC: skipped", name)
        return {"stage": name, "skipped": True}
    logger.info("running %s", name)
    result = run_stage(stage, slug, project)
    dvcstate.commit(project, name)
    logger.info("%s done and committed to dvc.lock", name)
    return {"stage": name, "skipped": False, "result": result if stage != "report" else None}


@task(name="publish-claims", retries=2, retry_delay_seconds=2)
def publish_claims(root: str) -> None:
    """Publish the claims table (written by the report stage) as Prefect artifacts."""
    import pandas as pd

    folder = Path(root) / "data" / "reports"
    create_markdown_artifact(
        markdown=(folder / "claims.md").read_text(),
        key="claims-report",
        description="paper vs measured",
    )
    table = pd.read_csv(folder / "claims.csv").fillna("")
    cols = ["method", "claim", "precision", "paper", "measured", "interval", "verdict", "profile"]
    create_table_artifact(table=table[cols].to_dict("records"), key="claims-table")
