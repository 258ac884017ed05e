"""Serve the scheduled deployment of ``reproduce-all`` against a Prefect server.

    make prefect-server            # terminal 1: prefect server start --host 127.0.0.1
    make serve                     # terminal 2: this file, with PREFECT_API_URL set

The deployment ``reproduce-all/nightly`` re-verifies every claim at 03:00 every night
(cron, server's time zone) and can be triggered by hand:
``prefect deployment run reproduce-all/nightly``.
"""

from __future__ import annotations

import os

from prefect import serve

from flows.reproduce import reproduce_all

NIGHTLY_CRON = os.environ.get("REPROLAB_NIGHTLY_CRON", "0 3 * * *")


def nightly_deployment():
    return reproduce_all.to_deployment(
        name="nightly",
        cron=NIGHTLY_CRON,
        description="Re-run the whole reprolab pipeline and republish the claims report",
        tags=["reprolab", "nightly"],
    )


if __name__ == "__main__":
    serve(nightly_deployment())
