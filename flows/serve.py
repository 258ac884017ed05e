"""Serve the deployments of ``reproduce-all``, ``reproduce-method`` and ``reverify``
against a Prefect server.

    make prefect-server            # terminal 1: prefect server start --host 127.0.0.1
    make serve                     # terminal 2: this file, with PREFECT_API_URL set
    make trigger DEPLOYMENT=reproduce-method/on-demand PARAMS='{"slug": "desk_reject"}'

Three deployments (:func:`deployments`), each runnable by hand
(``prefect deployment run <name>``, ``make trigger``), one run at a time:

- ``reproduce-all/nightly`` (``REPROLAB_NIGHTLY_CRON``, default 03:00, in ``REPROLAB_SCHEDULE_TZ``, default UTC) brings the
  project this is served from up to date (``dvc repro`` as Prefect tasks) and republishes
  the claims report; its ``executor`` parameter (default: ``REPROLAB_EXECUTOR`` of the
  serving process, else ``local``) runs methods one after another (``local``) or
  concurrently on Dask (``dask``, ``tcp://scheduler:8786``), e.g.
  ``prefect deployment run reproduce-all/nightly -p executor=dask``;
- ``reproduce-method/on-demand`` (no schedule: the nightly run covers every method) runs
  one method's stages, its ``slug`` parameter (required), and publishes that method's
  claims only (artifact ``claims-<slug>``);
- ``reverify/nightly`` (``REPROLAB_REVERIFY_CRON``, default 04:00 UTC) reruns the pipeline
  in a scratch copy at the ``profile`` parameter (default ``smoke``) and fails when a
  verdict differs from the last re-verification's (``flows/reverify.py``).
"""

from __future__ import annotations

import os

from prefect import serve
from prefect.schedules import Cron

from flows.reproduce import reproduce_all, reproduce_method
from flows.reverify import reverify
from reprolab.paths import project_root

DEFAULT_CRON = "0 3 * * *"
DEFAULT_REVERIFY_CRON = "0 4 * * *"
#: the schedules' timezone (an IANA name), shown with each schedule in the UI
DEFAULT_TIMEZONE = "UTC"


def schedule_timezone() -> str:
    return os.environ.get("REPROLAB_SCHEDULE_TZ") or DEFAULT_TIMEZONE


def nightly_cron() -> str:
    return os.environ.get("REPROLAB_NIGHTLY_CRON") or DEFAULT_CRON


def reverify_cron() -> str:
    return os.environ.get("REPROLAB_REVERIFY_CRON") or DEFAULT_REVERIFY_CRON


def nightly_deployment(root: str | None = None):
    return reproduce_all.to_deployment(
        name="nightly",
        schedule=Cron(nightly_cron(), timezone=schedule_timezone()),
        parameters={"root": str(root or project_root())},
        description=(
            f"Re-run the whole reprolab pipeline and republish the claims report "
            f"({nightly_cron()}, {schedule_timezone()}); "
            "executor: local (methods one after another), dask or tcp://scheduler:8786 "
            "(methods concurrently on Dask)"
        ),
        tags=["reprolab", "nightly"],
    )


def reverify_deployment(root: str | None = None, profile: str = "smoke"):
    return reverify.to_deployment(
        name="nightly",
        schedule=Cron(reverify_cron(), timezone=schedule_timezone()),
        parameters={"root": str(root or project_root()), "profile": profile},
        description=(
            f"Rerun the pipeline in a scratch copy; fail when a verdict changed "
            f"({reverify_cron()}, {schedule_timezone()})"
        ),
        tags=["reprolab", "nightly", "reverify"],
    )


def method_deployment(root: str | None = None):
    """``reproduce-method/on-demand``: one method, named by the run's ``slug`` parameter
    (required; no schedule, the nightly ``reproduce-all`` run covers every method)."""
    return reproduce_method.to_deployment(
        name="on-demand",
        parameters={"root": str(root or project_root())},
        description=(
            "Reproduce one method (parameter slug, e.g. desk_reject) and publish its claims; "
            'make trigger DEPLOYMENT=reproduce-method/on-demand PARAMS=\'{"slug": "desk_reject"}\''
        ),
        tags=["reprolab", "on-demand"],
    )


def deployments(root: str | None = None) -> list:
    """The deployments ``make serve`` serves, built without contacting a server:
    ``reproduce-all/nightly``, ``reproduce-method/on-demand``, ``reverify/nightly``."""
    return [nightly_deployment(root), method_deployment(root), reverify_deployment(root)]


def main() -> None:
    # limit=1: runs share one workspace (data/, dvc.lock) and two cores, so they never
    # overlap.
    serve(*deployments(), limit=1)


if __name__ == "__main__":
    main()
