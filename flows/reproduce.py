"""Prefect flows over the same stage functions DVC runs.

- ``reproduce_method(slug)``: the stages of one method as dvc.yaml declares them
  (prepare -> train -> quantize -> evaluate), each a visible task, inside one MLflow
  chain run tagged with the flow-run id.
- ``reproduce_all(methods)``: every method (sequentially: training is CPU-bound), then
  the stages shared by all methods (the report), then the claims table published as
  Prefect markdown + table artifacts.

Both compute in ``root`` (default: the project around the working directory). Runs
without a server (ephemeral Prefect) or against one (``flows/serve.py``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from prefect import flow, get_run_logger
from prefect.runtime import flow_run

from reprolab import config, dvcstate, registry
from reprolab.core import tracking
from reprolab.paths import project_root
from tasks.stages import publish_claims, stage_task


def _root(root: str | None) -> Path:
    return Path(root).resolve() if root else project_root()


@contextmanager
def _environ(**values: str) -> Iterator[None]:
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


@flow(name="reproduce-method", flow_run_name="reproduce-{slug}")
def reproduce_method(slug: str, root: str | None = None) -> list[dict]:
    project = _root(root)
    registry.check_slug(slug)
    cfg = config.load(project / "params.yaml")  # bad params fail here, before compute
    stages = dvcstate.chain(project, slug)
    logger = get_run_logger()
    logger.info("%s in %s: %s (%s profile)", slug, project, " -> ".join(stages), cfg.profile)

    run_id = str(flow_run.id)
    tracker = tracking.open_tracker(project, slug, "chain", cfg.profile)
    parent = tracker.client.create_run(
        tracker.experiment_id,
        run_name=f"chain-prefect-{slug}-{run_id[:8]}",
        tags={
            **tracking.git_state(project),
            "reprolab.kind": "chain",
            "reprolab.entry": "prefect",
            "reprolab.profile": cfg.profile,
            "reprolab.slug": slug,
            "prefect.flow_run_id": run_id,
            "prefect.root_flow_run_id": str(flow_run.root_flow_run_id or run_id),
        },
    ).info.run_id
    ok = False
    try:
        # The stages' MLflow runs become children of this chain run (tracking.Tracker).
        with _environ(**{tracking.PARENT_ENV: parent, tracking.FLOW_RUN_ENV: run_id}):
            results = [stage_task(name, str(project)) for name in stages]
        ok = True
        return results
    finally:
        tracker.client.set_terminated(parent, "FINISHED" if ok else "FAILED")


@flow(name="reproduce-all")
def reproduce_all(methods: list[str] | None = None, root: str | None = None) -> dict:
    project = _root(root)
    configured = config.load(project / "params.yaml")
    chosen = list(methods or configured.slugs)
    for slug in chosen:
        configured.method(slug)  # unknown or not configured: named before any compute
    run_id = str(flow_run.id)
    chains = {slug: reproduce_method(slug, str(project)) for slug in chosen}
    with _environ(**{tracking.FLOW_RUN_ENV: run_id}):
        shared = [stage_task(name, str(project)) for name in dvcstate.shared(project)]
    published = publish_claims(str(project))
    return {
        "flow_run_id": run_id,
        "root": str(project),
        "methods": chosen,
        "stages": [*(r for rs in chains.values() for r in rs), *shared],
        "artifacts": published,
    }
