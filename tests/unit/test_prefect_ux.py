"""The Prefect entry points as a user meets them (issue 49, item 7), without a server:

- ``make serve`` builds a per-method deployment, ``reproduce-method/on-demand``;
- a run of some methods publishes the claims of those methods only;
- the claims artifact links the full report (a markdown link);
- the ephemeral server's start-up timeout is set in one place (``flows/__init__.py``),
  applied to the tests (tests/conftest.py), and a run that times out says what to do;
- ``make trigger``'s check (scripts/prefect_up.py) fails on a missing deployment and
  warns when nothing serves it.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import re
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

import flows
from tests.conftest import ROOT

TIMEOUT_ERROR = (
    "Timed out while attempting to connect to ephemeral Prefect API server. "
    "Ephemeral server process exited with code 1."
)


# --- the per-method deployment ------------------------------------------------------


def test_serve_builds_a_per_method_deployment(tmp_path: Path):
    from flows.serve import deployments

    built = {f"{d.flow_name}/{d.name}": d for d in deployments(str(tmp_path))}
    assert set(built) == {
        "reproduce-all/nightly",
        "reproduce-method/on-demand",
        "reverify/nightly",
    }
    method = built["reproduce-method/on-demand"]
    assert method.parameters == {"root": str(tmp_path)}  # computes where it is served
    assert "slug" in method._parameter_openapi_schema.required  # the method, given per run
    assert not method.schedules  # on demand: the nightly run covers every method


# --- a run publishes the claims of the methods it ran --------------------------------


def _claim(slug: str, claim: str) -> dict:
    return {
        "method": slug,
        "claim": claim,
        "precision": "fp32",
        "verdict": "reproduced",
        "measured": "0.1",
        "interval": "[0.0, 0.2]",
        "paper": "better",
        "profile": "smoke",
    }


def _project_with_claims(root: Path, slugs: list[str]) -> Path:
    """A project whose report stage wrote claims.csv for ``slugs`` and whose evaluate
    stages wrote each method's claims.json (two claims each)."""
    from reprolab.paths import MethodPaths, reports_dir

    rows = [_claim(slug, f"{slug}-c{i}") for slug in slugs for i in (1, 2)]
    reports_dir(root).mkdir(parents=True)
    pd.DataFrame(rows).to_csv(reports_dir(root) / "claims.csv", index=False)
    for slug in slugs:
        folder = MethodPaths(root, slug).eval
        folder.mkdir(parents=True)
        claims = [
            {
                "id": r["claim"],
                "precision": "fp32",
                "verdict": "reproduced",
                "measured": {"value": None, "summary": "tiny"},
                "paper_value": "better",
                "profile": "smoke",
            }
            for r in rows
            if r["method"] == slug
        ]
        (folder / "claims.json").write_text(json.dumps(claims))
    return root


def test_claims_artifacts_hold_only_the_methods_run(tmp_path: Path, monkeypatch):
    from tasks import stages

    project = _project_with_claims(tmp_path, ["desk_reject", "ensloss", "dp_noise"])
    published: dict[str, object] = {}
    monkeypatch.setattr(
        stages, "create_markdown_artifact", lambda markdown, **kw: published.update(md=markdown)
    )
    monkeypatch.setattr(
        stages, "create_table_artifact", lambda table, **kw: published.update(table=table)
    )

    result = stages.publish_claims.fn(str(project), ["desk_reject"])

    assert {row["method"] for row in published["table"]} == {"desk_reject"}
    assert [row["claim"] for row in published["table"]] == ["desk_reject-c1", "desk_reject-c2"]
    assert result["rows"] == 2
    assert "## desk_reject" in published["md"]
    assert "ensloss" not in published["md"] and "dp_noise" not in published["md"]
    table = pd.read_csv(project / "data" / "reports" / "claims.csv", dtype=str)
    assert set(stages.claims_of(table, ["ensloss"])["method"]) == {"ensloss"}


def test_reproduce_all_publishes_the_methods_it_ran(tmp_path: Path, monkeypatch):
    import flows.reproduce as fr

    ran, published = [], {}
    configured = SimpleNamespace(
        slugs=["desk_reject", "ensloss", "dp_noise"], method=lambda slug: None
    )
    monkeypatch.setattr(fr, "config", SimpleNamespace(load=lambda path: configured))
    monkeypatch.setattr(fr, "get_run_logger", lambda: logging.getLogger("test"))
    monkeypatch.setattr(fr, "reproduce_method", lambda slug, root: ran.append(slug) or [])
    monkeypatch.setattr(fr.dvcstate, "shared", lambda project: [])
    monkeypatch.setattr(
        fr, "publish_claims", lambda root, *methods: published.update(methods=methods)
    )

    fr.reproduce_all.fn(methods=["desk_reject"], root=str(tmp_path), executor="local")

    assert ran == ["desk_reject"]
    assert published["methods"] == (["desk_reject"],)


def test_method_flow_holds_the_workspace_once_per_process(tmp_path: Path):
    """reproduce-method on its own holds the workspace; inside reproduce-all (which
    holds it) it goes on instead of waiting for itself."""
    import fcntl

    from flows.reproduce import _workspace
    from reprolab.ops.dvcstate import WORKSPACE_LOCK

    with (
        _workspace(tmp_path, "outer", None),
        _workspace(tmp_path, "inner", None),  # the same process: no wait
        open(tmp_path / WORKSPACE_LOCK) as other,
        pytest.raises(BlockingIOError),
    ):
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held, by this process
    with open(tmp_path / WORKSPACE_LOCK) as other:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free again


# --- the report link --------------------------------------------------------------------


def test_full_report_is_a_markdown_link():
    from tasks.stages import compact_markdown

    markdown = compact_markdown({"ensloss": []}, "/srv/project/data/reports/claims.html")
    line = next(x for x in markdown.splitlines() if x.startswith("Full report"))
    assert re.search(
        r"\[/srv/project/data/reports/claims\.html\]"
        r"\(file:///srv/project/data/reports/claims\.html\)",
        line,
    ), line
    assert "`" not in line  # not a code span


# --- the ephemeral server's start-up timeout --------------------------------------------


def test_ephemeral_startup_timeout_is_set_by_the_project():
    from prefect import settings

    name = flows.EPHEMERAL_STARTUP_SETTING
    assert name == "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
    assert hasattr(settings, name)  # a setting this Prefect has
    assert flows.EPHEMERAL_STARTUP_S >= 60  # generous: Prefect's default is 20
    # the tests' process (tests/conftest.py imports flows before anything imports
    # Prefect) and the processes they start (which inherit the environment)
    assert os.environ[name]
    assert getattr(settings, name).value() == int(os.environ[name])
    assert "import flows" in (ROOT / "tests" / "conftest.py").read_text()


def test_ephemeral_startup_timeout_applies_after_prefect_was_imported():
    env = {k: v for k, v in os.environ.items() if k != flows.EPHEMERAL_STARTUP_SETTING}
    code = (
        "from prefect.settings import PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS as s\n"
        "before = s.value()\n"
        "import flows\n"
        "print(before, s.value())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["20", str(flows.EPHEMERAL_STARTUP_S)]


def test_ephemeral_timeout_ends_with_a_hint_naming_the_setting(capsys):
    hint = flows.ephemeral_hint(RuntimeError(TIMEOUT_ERROR))
    assert hint and "\n" not in hint and flows.EPHEMERAL_STARTUP_SETTING in hint
    try:  # raised from inside the flow engine's own error
        try:
            raise RuntimeError(TIMEOUT_ERROR)
        except RuntimeError as exc:
            raise ValueError("engine") from exc
    except ValueError as exc:
        assert flows.ephemeral_hint(exc) == hint
    assert flows.ephemeral_hint(RuntimeError("something else")) is None

    flows._excepthook(RuntimeError, RuntimeError(TIMEOUT_ERROR), None)
    assert capsys.readouterr().err.strip().splitlines()[-1] == hint


def test_a_flow_that_cannot_reach_the_ephemeral_server_says_what_to_do(tmp_path: Path):
    """The real RuntimeError of Prefect (the server given 0 s to start), at a flow call in
    a process that imported flows: its last line is the hint."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(
        PREFECT_HOME=str(tmp_path / "prefect-home"),
        PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="0",
        PREFECT_UI_ENABLED="false",
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
    )
    code = "import flows\nfrom prefect import flow\n\n@flow\ndef f():\n    pass\n\nf()\n"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.returncode == 1
    hints = [x for x in out.stderr.splitlines() if x.startswith("reprolab flows:")]
    assert hints and flows.EPHEMERAL_STARTUP_SETTING + "=0 s" in hints[0], out.stderr[-3000:]


# --- make trigger's check ---------------------------------------------------------------


def _prefect_up():
    spec = importlib.util.spec_from_file_location("prefect_up", ROOT / "scripts/prefect_up.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def fake_api():
    """A stand-in Prefect API: reproduce-all/nightly is served (READY, just polled),
    reverify/nightly is not (NOT_READY, polled 10 minutes ago)."""
    now = datetime.now(UTC)
    flows_ = [{"id": "f1", "name": "reproduce-all"}, {"id": "f2", "name": "reverify"}]
    deployments = {
        "reproduce-all/nightly": {
            "name": "nightly",
            "flow_id": "f1",
            "status": "READY",
            "last_polled": now.isoformat(),
        },
        "reverify/nightly": {
            "name": "nightly",
            "flow_id": "f2",
            "status": "NOT_READY",
            "last_polled": (now - timedelta(minutes=10)).isoformat(),
        },
    }

    class Handler(BaseHTTPRequestHandler):
        def _send(self, code: int, body) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # noqa: N802
            if self.path == "/api/health":
                return self._send(200, True)
            prefix = "/api/deployments/name/"
            name = self.path[len(prefix) :] if self.path.startswith(prefix) else None
            if name in deployments:
                return self._send(200, deployments[name])
            return self._send(404, {"detail": "Deployment not found"})

        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.path == "/api/deployments/filter":
                return self._send(200, list(deployments.values()))
            if self.path == "/api/flows/filter":
                return self._send(200, flows_)
            return self._send(404, {})

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/api"
    server.shutdown()
    server.server_close()


def test_trigger_check_fails_on_a_missing_deployment(fake_api, capsys):
    up = _prefect_up()
    assert up.main(fake_api, "reproduce-method/nightly") == 1
    err = capsys.readouterr().err
    assert "no deployment reproduce-method/nightly" in err
    assert "reproduce-all/nightly, reverify/nightly" in err  # what it has
    assert "make serve" in err


def test_trigger_check_warns_when_nothing_serves_the_deployment(fake_api, capsys):
    up = _prefect_up()
    assert up.main(fake_api, "reverify/nightly") == 0  # the run is created; it waits
    err = capsys.readouterr().err
    assert "no `make serve` process is serving reverify/nightly" in err
    assert "Late" in err and "start `make serve` in another terminal" in err

    assert up.main(fake_api, "reproduce-all/nightly") == 0
    assert capsys.readouterr().err == ""  # served: nothing to say


def test_trigger_check_reads_a_stale_poll_as_not_served():
    up = _prefect_up()
    now = datetime.now(UTC)
    ready = {"status": "READY", "last_polled": now.isoformat()}
    assert up.served(ready, now)
    assert not up.served({**ready, "last_polled": None}, now)
    assert not up.served(ready, now + timedelta(seconds=up.POLLED_WITHIN_S + 1))
