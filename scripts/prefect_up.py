"""Exit 0 when a Prefect server answers at the given API URL within 3 seconds; else say
how to start one and exit 1 (``make trigger`` runs this first: ``prefect deployment run``
alone waits, then reports the deployment as not found)."""

from __future__ import annotations

import sys
import urllib.request


def main(url: str) -> int:
    try:
        urllib.request.urlopen(url.rstrip("/") + "/health", timeout=3)
    except Exception as exc:
        print(
            f"no Prefect server at {url} ({exc}): start one with `make prefect-server`, "
            "then serve the deployments with `make serve`",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
