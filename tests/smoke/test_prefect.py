"""The Prefect path, end to end, on tiny project copies of one method (EnsLoss; the
reproduced copy adds dp_noise): the flows are the same code for every method, and
tests/contract runs every registered method's hooks.

- ephemeral Prefect (no server): `reproduce_all` runs every stage as a visible task,
  commits it to DVC (so `dvc status`/`dvc repro` agree) and tracks one MLflow chain run
  tagged with the flow-run id; after `dvc repro` the same flow recomputes nothing;
- a real local Prefect server: `python -m flows.serve` registers `reproduce-all/nightly`
  with its cron, a run triggered by hand computes in the copy and publishes the claims
  as markdown + table artifacts; both processes are stopped, nothing is left running.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import run, tool_env

pytestmark = pytest.mark.pipeline

METHOD_STAGES = ["prepare@ensloss", "train@ensloss", "quantize@ensloss", "evaluate@ensloss"]
# a method's chain starts from the stages it depends on: validate and the shared assets
CHAIN = ["validate", "assets@images", *METHOD_STAGES]
ALL_STAGES = [*CHAIN, "report"]

# Runs the all-methods flow in ephemeral mode (no server: Prefect starts a temporary
# one in-process), then reads back what Prefect recorded, as one JSON line.
EPHEMERAL = """
import json, sys, time
from prefect import get_client
from flows.reproduce import reproduce_all

state = reproduce_all(methods=["ensloss"], root=sys.argv[1], return_state=True)
result = state.result() if state.is_completed() else None
with get_client(sync_client=True) as client:
    deadline = time.monotonic() + 60  # task runs are recorded from events: may lag
    while True:
        flows, tasks = client.read_flow_runs(), client.read_task_runs()
        done = [t for t in tasks if t.state and t.state.is_final()]
        if len(done) == len(tasks) >= 7 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    deadline = time.monotonic() + 30  # logs are written in batches: may lag too
    while True:
        every, page = [], None
        while page is None or len(page) == 200:  # the API returns 200 at most per call
            page = client.read_logs(limit=200, offset=len(every))
            every += page
        logs = [l.message for l in every if "[fp32]: " in l.message]
        if logs or time.monotonic() > deadline:
            break
        time.sleep(1)
print("RESULT " + json.dumps({
    "state": state.type.value,
    "result": result,
    "flow_runs": [
        {"id": str(f.id), "name": f.name, "flow_id": str(f.flow_id), "state": f.state.type.value}
        for f in flows
    ],
    "task_runs": [
        {"name": t.name, "flow_run_id": str(t.flow_run_id), "state": t.state.type.value,
         "state_name": t.state.name}
        for t in tasks
    ],
    "verdict_logs": logs,
}))
"""


def prefect_env(home: Path, **extra: str) -> dict[str, str]:
    """Environment of a Prefect child process: its own PREFECT_HOME, no telemetry, no UI;
    no PREFECT_API_URL unless given (ephemeral mode)."""
    env = tool_env(
        {
            "PREFECT_HOME": str(home),
            "PREFECT_UI_ENABLED": "false",
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
            **extra,
        }
    )
    if "PREFECT_API_URL" not in extra:
        env.pop("PREFECT_API_URL", None)
    env.pop("PREFECT_PROFILE", None)
    env.pop("PREFECT_API_KEY", None)
    return env


def run_flow_ephemeral(root: Path, home: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", EPHEMERAL, str(root)],
        cwd=root,
        env=prefect_env(home),
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, (
        f"flow exited {proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}"
        f"\n--- stderr\n{proc.stderr[-6000:]}"
    )
    out = json.loads(lines[-1][len("RESULT ") :])
    assert out["state"] == "COMPLETED", proc.stderr[-6000:]
    return out


def mlflow_runs(root: Path) -> list:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{root / '.mlflow' / 'mlflow.db'}")
    ids = [e.experiment_id for e in client.search_experiments()]
    return client.search_runs(ids, max_results=1000)


def assert_dvc_clean(root: Path) -> None:
    status = run(["dvc", "status"], root)
    assert "Data and pipelines are up to date" in status.stdout, status.stdout
    repro = run(["dvc", "repro"], root)
    assert "Running stage" not in repro.stdout, repro.stdout
    for name in ALL_STAGES:
        assert f"Stage '{name}' didn't change, skipping" in repro.stdout, repro.stdout


def repro_other_methods(root: Path) -> None:
    """Bring every method of the copy but EnsLoss up to date with DVC, so that the flows
    below (run for EnsLoss only) leave the *whole* pipeline up to date. (The default
    copy runs EnsLoss only, so this is a no-op there; it keeps the tests right for a
    copy of more methods.)"""
    import yaml

    methods = yaml.safe_load((root / "params.yaml").read_text())["methods"]
    targets = [f"evaluate@{slug}" for slug in methods if slug != "ensloss"]
    if targets:
        run(["dvc", "repro", *targets], root)


def test_ephemeral_flow_runs_every_stage_and_leaves_dvc_up_to_date(project: Path, tmp_path):
    repro_other_methods(project)
    out = run_flow_ephemeral(project, tmp_path / "prefect-home")

    # Every stage ran (none skipped) as a visible, completed Prefect task run.
    result = out["result"]
    assert result["root"] == str(project.resolve())
    assert [s["stage"] for s in result["stages"]] == ALL_STAGES
    assert not any(s["skipped"] for s in result["stages"])
    task_runs = {t["name"]: t for t in out["task_runs"]}
    for name in ALL_STAGES:
        assert task_runs.get(name, {}).get("state") == "COMPLETED", out["task_runs"]
    assert {"publish-claims", "publish-claims-ensloss"} <= set(task_runs), out["task_runs"]
    top = result["flow_run_id"]
    # runs are named after what they run: the method, the profile, the date
    method_run = next(f for f in out["flow_runs"] if f["name"].startswith("ensloss (smoke) "))
    assert next(f for f in out["flow_runs"] if f["id"] == top)["name"].startswith(
        "reproduce-all: ensloss (smoke) "
    )
    # the evaluate task's log holds a verdict line per headline claim
    claims = json.loads((project / "data" / "eval" / "ensloss" / "claims.json").read_text())
    for c in claims:
        if c["headline"]:
            line = f"{c['id']}{' (central)' if c['central'] else ''} [fp32]: "
            expect = line + c["verdict"].replace("_", " ").upper()
            assert any(m.startswith(expect) for m in out["verdict_logs"]), (expect, out)
    assert {task_runs[n]["flow_run_id"] for n in CHAIN} == {method_run["id"]}
    assert task_runs["report"]["flow_run_id"] == top
    assert result["artifacts"]["rows"] > 0

    # DVC agrees: the stages were committed, `dvc repro` has nothing to do.
    assert (project / "dvc.lock").is_file()
    assert_dvc_clean(project)

    # MLflow: one chain run for the Prefect flow run, the stages its children.
    runs = mlflow_runs(project)  # (the other methods' chains came from `dvc repro`)
    chains = [
        r
        for r in runs
        if r.data.tags.get("reprolab.kind") == "chain"
        and r.data.tags.get("reprolab.entry") == "prefect"
    ]
    assert len(chains) == 1, [r.data.tags for r in chains]
    chain = chains[0]
    assert chain.info.status == "FINISHED"
    # the chain run carries the method's setting, so chains can be compared
    assert chain.data.params["profile"] == "smoke"
    resolved = json.loads((project / "data" / "config" / "ensloss.json").read_text())
    assert chain.data.params["method.epochs"] == str(resolved["method"]["epochs"])
    assert chain.data.tags["reprolab.entry"] == "prefect"
    assert chain.data.tags["prefect.flow_run_id"] == method_run["id"]
    assert chain.data.tags["prefect.root_flow_run_id"] == top
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == chain.info.run_id]
    # (validate records nothing; an asset's build is tracked in the 'assets' experiment)
    assert sorted(r.info.run_name for r in children) == sorted(
        n.split("@")[0] for n in METHOD_STAGES
    )
    for child in children:
        assert child.info.status == "FINISHED"
        assert child.data.tags["reprolab.kind"] == "stage"
        assert child.data.tags["prefect.flow_run_id"] == method_run["id"]


def test_ephemeral_flow_after_dvc_repro_recomputes_nothing(reproduced: Path, tmp_path):
    root = tmp_path / "project"
    shutil.copytree(reproduced, root, symlinks=True)  # the fixture stays read-only
    lock = (root / "dvc.lock").read_bytes()
    outputs = sorted(p for p in (root / "data").rglob("*") if p.is_file())
    mtimes = {p: p.stat().st_mtime_ns for p in outputs}
    stage_runs = sum(r.data.tags.get("reprolab.kind") == "stage" for r in mlflow_runs(root))

    out = run_flow_ephemeral(root, tmp_path / "prefect-home")

    stages = out["result"]["stages"]
    assert [s["stage"] for s in stages] == ALL_STAGES
    assert all(s["skipped"] for s in stages), stages
    task_runs = {t["name"]: (t["state"], t["state_name"]) for t in out["task_runs"]}
    # a skipped stage says so in the UI: a Completed state named Skipped
    assert all(task_runs.get(n) == ("COMPLETED", "Skipped") for n in ALL_STAGES), task_runs
    assert (root / "dvc.lock").read_bytes() == lock
    assert {p: p.stat().st_mtime_ns for p in outputs} == mtimes
    runs = mlflow_runs(root)
    assert sum(r.data.tags.get("reprolab.kind") == "stage" for r in runs) == stage_runs
    # nothing ran, so the flow leaves no (empty) chain run in MLflow
    prefect_chain = [r for r in runs if r.data.tags.get("reprolab.entry") == "prefect"]
    assert prefect_chain == []
    assert_dvc_clean(root)


# --- a real local Prefect server ------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(cmd: list[str], cwd: Path, env: dict, log: Path) -> subprocess.Popen:
    """Start a long-running process in its own process group, output to ``log``."""
    with log.open("wb") as fh:
        return subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
        )


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM, grace: float = 20) -> None:
    """Signal the whole process group; SIGKILL it when it does not exit in time."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        except ProcessLookupError:
            pass
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # children that outlived their parent


def processes_with(marker: str) -> list[int]:
    """Ids of live processes whose environment contains ``marker`` (our PREFECT_HOME)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker.encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def tail(path: Path, n: int = 6000) -> str:
    return path.read_text(errors="replace")[-n:] if path.is_file() else ""


def wait_for(check, timeout: float, what: str, logs: list[Path], procs=()):
    """Poll ``check`` until it returns something truthy; fail (with the logs) on timeout
    or when one of ``procs`` exits meanwhile."""
    deadline = time.monotonic() + timeout
    problem = f"timed out waiting for {what}"
    while time.monotonic() < deadline:
        dead = [p.args for p in procs if p.poll() is not None]
        if dead:
            problem = f"{dead} exited while waiting for {what}"
            break
        value = check()
        if value:
            return value
        time.sleep(0.5)
    dump = "\n".join(f"--- {p.name}\n{tail(p)}" for p in logs)
    raise AssertionError(f"{problem}\n{dump}")


def test_served_deployment_runs_in_the_copy_and_publishes_claims(project: Path, tmp_path):
    from prefect.client.orchestration import SyncPrefectClient
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId
    from prefect.exceptions import ObjectNotFound

    repro_other_methods(project)
    home = tmp_path / "prefect-home"
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    cron = "17 4 * * 1"
    env = prefect_env(
        home,
        PREFECT_API_URL=api,
        PREFECT_RUNNER_POLL_FREQUENCY="1",
        REPROLAB_NIGHTLY_CRON=cron,
    )
    server_log, serve_log = tmp_path / "server.log", tmp_path / "serve.log"
    logs = [server_log, serve_log]
    procs: list[subprocess.Popen] = []
    leftovers: list[int] = []

    def healthy() -> bool:
        try:
            with urllib.request.urlopen(f"{api}/health", timeout=2) as resp:
                return resp.status == 200
        except OSError:
            return False

    try:
        server = start(
            ["prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
            project,
            env,
            server_log,
        )
        procs.append(server)
        wait_for(healthy, 90, "the Prefect server's /api/health", logs, [server])

        serve = start([sys.executable, "-m", "flows.serve"], project, env, serve_log)
        procs.append(serve)
        with SyncPrefectClient(api) as client:

            def deployment():
                try:
                    return client.read_deployment_by_name("reproduce-all/nightly")
                except ObjectNotFound:
                    return None

            dep = wait_for(deployment, 90, "deployment reproduce-all/nightly", logs, procs)
            assert [s.schedule.cron for s in dep.schedules] == [cron]
            assert dep.schedules[0].active
            assert dep.schedules[0].schedule.timezone == "UTC"
            assert dep.parameters == {"root": str(project.resolve())}  # served from the copy

            params = json.dumps({"methods": ["ensloss"], "root": str(project)})
            trigger = run(
                ["prefect", "deployment", "run", "reproduce-all/nightly", "--params", params],
                project,
                env=env,
                timeout=120,
            )
            match = re.search(r"UUID: ([0-9a-f-]{36})", trigger.stdout)
            assert match, trigger.stdout
            run_id = match.group(1)

            def finished():
                state = client.read_flow_run(run_id).state
                return state if state and state.is_final() else None

            state = wait_for(finished, 300, f"flow run {run_id}", logs, procs)
            assert state.is_completed(), f"{state}\n{tail(serve_log)}"
            flow_run = client.read_flow_run(run_id)
            assert flow_run.parameters == {"methods": ["ensloss"], "root": str(project)}

            artifacts = client.read_artifacts(
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[run_id]))
            )
            kinds = {a.key: a.type for a in artifacts}
            assert kinds == {"claims-report": "markdown", "claims-table": "table"}, kinds
            by_key = {a.key: a for a in artifacts}
            compact = by_key["claims-report"].data
            assert "| claim | precision | verdict | measured [interval] | paper |" in compact
            assert "## ensloss" in compact and "claims.html" in compact
            rows = by_key["claims-table"].data
            rows = json.loads(rows) if isinstance(rows, str) else rows
            assert rows and {"method", "claim", "verdict"} <= set(rows[0])
            # every method with claims in the copy (EnsLoss by this flow, the rest by DVC)
            evaluated = {p.parent.name for p in (project / "data" / "eval").glob("*/claims.json")}
            assert "ensloss" in evaluated and {r["method"] for r in rows} == evaluated

        # It computed in the copy: its outputs, its DVC lock, its MLflow store.
        assert (project / "data" / "reports" / "claims.md").is_file()
        chains = [
            r
            for r in mlflow_runs(project)
            if r.data.tags.get("prefect.root_flow_run_id") == run_id
            and r.data.tags.get("reprolab.kind") == "chain"
        ]
        assert len(chains) == 1
        status = run(["dvc", "status"], project)
        assert "Data and pipelines are up to date" in status.stdout, status.stdout
    finally:
        for proc in reversed(procs):  # the runner first: it pauses its schedule on exit
            stop(proc)
        leftovers = processes_with(f"PREFECT_HOME={home}\0")
        for pid in leftovers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert all(p.poll() is not None for p in procs)
    assert not leftovers, f"processes left running: {leftovers}"
