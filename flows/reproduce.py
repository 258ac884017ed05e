"""Prefect flows over the same stage functions DVC runs.

- ``reproduce_method(slug)``: prepare -> train -> quantize -> evaluate of one method,
  each a visible task, inside one MLflow chain run tagged with the flow-run id.
- ``reproduce_all(methods)``: every method (sequentially: training is CPU-bound) and
  then the report, published as Prefect artifacts.
"""

from __future__ import annotations

import os
from pathlib import Path

from prefect import flow, get_run_logger
from prefect.runtime import flow_run

from reprolab import config, dvcstate, registry
from reprolab.core import tracking
from reprolab.paths import project_root
from tasks.stages import publish_claims, stage_task


def _root(root: str | None) -> Path:
    return Path(root).resolve() if root else project_root()


@flow(name="reproduce-method", flow_run_name="reproduce-{slug}")
def reproduce_method(slug: str, root: str | None = None) -> list[dict]:
    project = _root(root)
    registry.check_slug(slug)
    cfg = config.load(project / "params.yaml")  # bad params fail here, before compute
    stages = dvcstate.chain(project, slug)
    logger = get_run_logger()
    logger.info("%s: %s (%s profile)", slug, " -> ".join(stages), cfg.profile)

    tracker = tracking.open_tracker(project, slug, "chain", cfg.profile)
    parent = tracker.client.create_run(
        tracker.experiment_id,
        run_name=f"chain-prefect-{flow_run.name or flow_run.id}",
        tags={
            **tracking.git_state(project),
            "reprolab.kind": "chain",
            "reprolab.entry": "prefect",
            "reprolab.profile": cfg.profile,
            "prefect.flow_run_id": str(flow_run.id),
        },
    ).info.run_id
    os.environ[tracking.PARENT_ENV] = parent
    os.environ[tracking.FLOW_RUN_ENV] = str(flow_run.id)
    ok = False
    try:
        results = [stage_task(name.split("@")[0], slug, str(project)) for name in stages]
        ok = True
        return results
    finally:
        tracker.client.set_terminated(parent, "FINISHED" if ok else "FAILED")
        os.environ.pop(tracking.PARENT_ENV, None)


@flow(name="reproduce-all")
def reproduce_all(methods: list[str] | None = None, root: str | None = None) -> dict:
    project = _root(root)
    chosen = methods or registry.slugs()
    for slug in chosen:
        registry.check_slug(slug)
    for slug in chosen:
        reproduce_method(slug, str(project))
    os.environ[tracking.FLOW_RUN_ENV] = str(flow_run.id)
    report = stage_task("report", None, str(project))
    publish_claims(str(project))
    return {"methods": chosen, "report": report}
