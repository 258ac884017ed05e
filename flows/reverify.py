"""Nightly re-verification: rerun the pipeline and flag every verdict that changed.

``reverify(profile)`` copies the project (its committed and new files, not data/) into
a scratch folder at ``profile`` (the workspace, its data/ and dvc.lock are untouched),
runs ``reproduce_all`` there (one Prefect task per DVC stage, MLflow runs in the
project's own store), and compares the report's verdicts with the last completed
re-verification at that profile (:mod:`reprolab.ops.reverify`). Every run is recorded in the
MLflow experiment ``reverify`` (claims table, changes, the tag
``reprolab.verdicts_changed``); the changes are published as the Prefect artifact
``verdict-changes``; any change marks the flow run failed, so the dashboard and a
notification rule see it. The first run at a profile is the baseline.

    python -c "from flows.reverify import reverify; reverify('smoke')"
    prefect deployment run reverify/nightly -p profile=paper     # when served
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import yaml
from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.runtime import flow_run

from flows.reproduce import _environ, _root, reproduce_all
from reprolab import config
from reprolab.core import tracking
from reprolab.ops import reverify as rv
from reprolab.ops import scratch
from reprolab.paths import reports_dir

PROFILES = ("smoke", "paper")


class VerdictsChanged(RuntimeError):
    """Raised at the end of a re-verification that found changed verdicts."""


@flow(name="reverify", flow_run_name="reverify-{profile}")
def reverify(
    profile: str = "smoke",
    methods: list[str] | None = None,
    root: str | None = None,
    keep_copy: bool = False,
) -> dict:
    """Rerun ``methods`` (default: all configured) at ``profile`` in a scratch copy of
    the project at ``root`` and compare every verdict with the last completed run's."""
    logger = get_run_logger()
    project = _root(root)
    if profile not in PROFILES:
        raise ValueError(f"profile: {profile!r} is not one of {list(PROFILES)}")
    params = yaml.safe_load((project / "params.yaml").read_text())
    chosen = list(methods or (params.get("methods") or {}))
    cut = scratch.cut_params(params, chosen, None, profile)
    work = Path(tempfile.mkdtemp(prefix=f"reprolab-reverify-{profile}-"))
    scratch.copy_project(project, work, cut)
    config.load(work / "params.yaml")  # bad params are named here, before any compute
    commit, dirty = scratch.commit_of(project)
    logger.info(
        "re-verifying %s at the %s profile (commit %s%s) in %s",
        ", ".join(chosen),
        profile,
        commit[:8],
        ", with uncommitted changes" if dirty else "",
        work,
    )
    tracking.load_env(project)  # the copy's stages track into the project's store
    with _environ(MLFLOW_TRACKING_URI=os.environ["MLFLOW_TRACKING_URI"]):
        reproduce_all(methods=chosen, root=str(work))
        outcome = rv.check(
            project,
            reports_dir(work) / "claims.csv",
            profile,
            tags={
                "prefect.flow_run_id": str(flow_run.id),
                "git.commit": commit,
                "git.dirty": str(dirty).lower(),
                "reprolab.methods": ",".join(chosen),
            },
        )
    create_markdown_artifact(
        markdown=outcome.markdown,
        key="verdict-changes",
        description=f"reprolab re-verification at the {profile} profile",
    )
    if keep_copy:
        logger.info("scratch copy kept in %s", work)
    else:
        shutil.rmtree(work, ignore_errors=True)
    result = {
        "profile": profile,
        "methods": chosen,
        "mlflow_run_id": outcome.run_id,
        "baseline_run_id": outcome.baseline_run_id,
        "changed": outcome.changed,
        "changes": outcome.changes.to_dict("records"),
    }
    if outcome.changed:
        logger.error(outcome.markdown)
        raise VerdictsChanged(
            f"{outcome.changed} verdict(s) changed since the last re-verification at the "
            f"{profile} profile (MLflow run {outcome.run_id}, artifact changes.md)"
        )
    logger.info(outcome.markdown.strip())
    return result
