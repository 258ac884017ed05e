"""Serve the scheduled deployment of ``reproduce-all`` against a Prefect server.

    make prefect-server            # terminal 1: prefect server start --host 127.0.0.1
    make serve                     # terminal 2: this file, with PREFECT_API_URL set

The deployment ``reproduce-all/nightly`` re-verifies every claim on the cron schedule
``REPROLAB_NIGHTLY_CRON`` (default 03:00 every night, UTC) and can be triggered by hand:
``prefect deployment run reproduce-all/nightly``. Its runs compute in the project this
is served from (the ``root`` parameter's default), one run at a time.
"""

from __future__ import annotations

import os

from prefect import serve

from flows.reproduce import reproduce_all
from reprolab.paths import project_root

DEFAULT_CRON = "0 3 * * *"


def nightly_cron() -> str:
    return os.environ.get("REPROLAB_NIGHTLY_CRON") or DEFAULT_CRON


def nightly_deployment(root: str | None = None):
    return reproduce_all.to_deployment(
        name="nightly",
        cron=nightly_cron(),
        parameters={"root": str(root or project_root())},
        description="Re-run the whole reprolab pipeline and republish the claims report",
        tags=["reprolab", "nightly"],
    )


def main() -> None:
    # limit=1: runs share one workspace (data/, dvc.lock), so they never overlap.
    serve(nightly_deployment(), limit=1)


if __name__ == "__main__":
    main()
