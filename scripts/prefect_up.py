"""Check, within seconds, what ``make trigger`` needs before it runs a deployment:

    python scripts/prefect_up.py <api-url> [<flow>/<deployment>]

1. a Prefect server answers at the API URL (else: how to start one; exit 1);
2. the deployment exists on it (else: which ones do, and that ``make serve`` registers
   them; exit 1);
3. a process is serving it: the process serving it (``make serve``, a runner) polls the
   server for its runs every 10 s (``PREFECT_RUNNER_POLL_FREQUENCY``), which records the
   time as its ``last_polled`` and marks it READY; about a minute after the polls stop
   the server marks it NOT_READY. Not READY, or not polled for
   :data:`POLLED_WITHIN_S`: a warning that the run will wait as Late until ``make
   serve`` runs (exit 0: the run is created and starts when it is served).

``prefect deployment run`` alone waits, then reports a missing deployment as not found,
and says nothing about one that nobody serves. Standard library only (no Prefect
import), so it answers at once.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.parse
import urllib.request
from datetime import UTC, datetime

TIMEOUT_S = 3
#: a deployment not polled for longer than this is not served (the runner of
#: ``make serve`` polls every 10 s; the server marks it NOT_READY only after 60 s)
POLLED_WITHIN_S = 30


def _get(url: str):
    with urllib.request.urlopen(url, timeout=TIMEOUT_S) as resp:
        return json.loads(resp.read() or b"null")


def _post(url: str, body: dict):
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=TIMEOUT_S) as resp:
        return json.loads(resp.read() or b"null")


def known_deployments(api: str) -> list[str]:
    """``<flow>/<deployment>`` of every deployment on the server (empty when unknown)."""
    try:
        deployments = _post(f"{api}/deployments/filter", {"limit": 200})
        flows = _post(f"{api}/flows/filter", {"limit": 200})
    except Exception:
        return []
    names = {f["id"]: f["name"] for f in flows}
    return sorted(f"{names.get(d['flow_id'], '?')}/{d['name']}" for d in deployments)


def polled_ago(deployment: dict, now: datetime | None = None) -> float | None:
    """Seconds since a runner last polled for ``deployment``'s runs (None: never)."""
    if not deployment.get("last_polled"):
        return None
    polled = datetime.fromisoformat(deployment["last_polled"].replace("Z", "+00:00"))
    if polled.tzinfo is None:
        polled = polled.replace(tzinfo=UTC)
    return ((now or datetime.now(UTC)) - polled).total_seconds()


def served(deployment: dict, now: datetime | None = None) -> bool:
    """Whether a process is serving ``deployment`` (the API's deployment object): it is
    READY and was polled within :data:`POLLED_WITHIN_S`."""
    ago = polled_ago(deployment, now)
    return deployment.get("status") == "READY" and ago is not None and ago <= POLLED_WITHIN_S


def check_deployment(api: str, name: str) -> int:
    """Exit status for ``name`` (``<flow>/<deployment>``) on the server at ``api``: 1 when
    it does not exist; else 0, with a warning when no process serves it."""
    flow, _, deployment = name.partition("/")
    if not flow or not deployment:
        print(f"DEPLOYMENT={name!r}: expected <flow>/<deployment>", file=sys.stderr)
        return 1
    quoted = "/".join(urllib.parse.quote(part, safe="") for part in (flow, deployment))
    try:
        found = _get(f"{api}/deployments/name/{quoted}")
    except urllib.error.HTTPError as exc:
        if exc.code != 404:
            print(f"could not look up {name} ({exc}); triggering it anyway", file=sys.stderr)
            return 0
        known = known_deployments(api)
        print(
            f"no deployment {name} on the Prefect server at {api}"
            + (f" (it has: {', '.join(known)})" if known else " (it has none)")
            + ": `make serve` registers reproduce-all/nightly, reproduce-method/on-demand "
            "and reverify/nightly",
            file=sys.stderr,
        )
        return 1
    except Exception as exc:
        print(f"could not look up {name} ({exc}); triggering it anyway", file=sys.stderr)
        return 0
    if not served(found):
        ago = polled_ago(found)
        polled = "never polled" if ago is None else f"last polled {ago:.0f} s ago"
        print(
            f"warning: no `make serve` process is serving {name} (status "
            f"{found.get('status')}, {polled}): the run will wait as Late; "
            "start `make serve` in another terminal",
            file=sys.stderr,
        )
    return 0


def main(url: str, deployment: str | None = None) -> int:
    api = url.rstrip("/")
    try:
        urllib.request.urlopen(api + "/health", timeout=TIMEOUT_S)
    except Exception as exc:
        print(
            f"no Prefect server at {url} ({exc}): start one with `make prefect-server`, "
            "then serve the deployments with `make serve`",
            file=sys.stderr,
        )
        return 1
    return check_deployment(api, deployment) if deployment else 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:3]))
