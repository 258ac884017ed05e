"""What a reader sees, in a real headless browser (Debian's chromium): the claims report
and the MLflow runs table of the reproduced tiny project.

Screenshots go to ``test-artifacts/`` (``REPROLAB_TEST_ARTIFACTS`` overrides) for a person
to look at; the assertions read the DOM chromium rendered:

- claims.html: the per-method summary table comes before the claims table, the verdict
  legend is there, every figure is inline (a data: URI or a file next to the report) and
  nothing is fetched from the network (the browser runs with every host unresolvable);
- the MLflow UI at the report's link for a method (``core.tracking.runs_view_url``): the
  runs table of model training, not MLflow 3's GenAI overview, with a column per claim's
  fp32 verdict and the verdict values in it;
- the Prefect UI's page of the claims artifact a method's flow run publishes: its
  verdicts readable at 1,400 px, without scrolling sideways.

The screenshots under docs/screenshots/ are these (``mlflow-runs.png``,
``prefect-artifact.png``) and those of scripts/screenshots.py.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import BIN, ROOT, tool_env

pytestmark = [pytest.mark.slow, pytest.mark.pipeline]

ARTIFACTS = Path(os.environ.get("REPROLAB_TEST_ARTIFACTS", ROOT / "test-artifacts"))


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail("no chromium: `bash scripts/system_deps.sh --browser` installs Debian's")


def browse(url: str, shot: Path, size: str = "1600,1200", wait_ms: int = 0) -> str:
    """Render ``url``; write a screenshot to ``shot``; return the rendered DOM."""
    shot.parent.mkdir(parents=True, exist_ok=True)
    common = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        f"--window-size={size}",
        # nothing outside the machine: a fetch from any other host fails
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    ]
    if wait_ms:
        common.append(f"--virtual-time-budget={wait_ms}")
    subprocess.run([*common, f"--screenshot={shot}", url], capture_output=True, timeout=120)
    dom = subprocess.run([*common, "--dump-dom", url], capture_output=True, text=True, timeout=120)
    assert shot.is_file() and dom.stdout, dom.stderr[-2000:]
    return dom.stdout


def not_blank(png: Path) -> None:
    from PIL import Image, ImageStat

    stat = ImageStat.Stat(Image.open(png).convert("L"))
    assert stat.stddev[0] > 10, f"{png} looks blank (grey-level stddev {stat.stddev[0]:.1f})"


def test_claims_report_in_a_browser(reproduced):
    report = reproduced / "data" / "reports" / "claims.html"
    html = report.read_text()
    srcs = re.findall(r"""\bsrc=["']([^"']+)["']""", html)
    assert srcs, "the report shows no figure"
    for src in srcs:  # inline, or a file shipped next to the report
        assert src.startswith("data:image/") or (report.parent / src).is_file(), src
    assert not re.search(r"""\b(?:src|href)=["'](?:https?:)?//(?!127\.0\.0\.1|localhost)""", html)

    dom = browse(report.as_uri(), ARTIFACTS / "claims-report.png", "1400,2200")
    not_blank(ARTIFACTS / "claims-report.png")
    summary, claims = dom.find("Summary"), dom.find(">Claims<")
    assert 0 <= summary < claims, "the summary table must come first"
    for method in ("ensloss", "dp_noise"):
        assert re.search(rf">{method}</a>", dom[summary:claims]), method
    for verdict in ("reproduced", "not_reproduced", "inconclusive"):
        assert verdict in dom[:claims]  # the legend says what each verdict means


def test_mlflow_ui_opens_the_runs_table_with_verdict_columns(reproduced, tmp_path):
    from mlflow.tracking import MlflowClient

    from reprolab.core import tracking
    from tests.smoke.test_prefect import free_port, start, stop

    store = tmp_path / "mlflow.db"  # the UI may migrate the store: a copy, not the fixture's
    shutil.copy(reproduced / ".mlflow" / "mlflow.db", store)
    client = MlflowClient(tracking_uri=f"sqlite:///{store}")
    exp = client.get_experiment_by_name("ensloss")
    port = free_port()
    log = tmp_path / "ui.log"
    ui = start(
        [str(BIN / "mlflow"), "ui", "--backend-store-uri", f"sqlite:///{store}"]
        + ["--host", "127.0.0.1", "--port", str(port)],
        tmp_path,
        tool_env(),
        log,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            assert ui.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
        url = f"{base}/{tracking.runs_view_url(exp.experiment_id)}"
        # MLflow lays its metric columns out before its tag columns (the verdicts) and
        # opens its assistant panel beside the table: the verdicts need a wide window
        dom = browse(url, ARTIFACTS / "mlflow-runs.png", "2400,900", wait_ms=20000)
    finally:
        stop(ui)
    not_blank(ARTIFACTS / "mlflow-runs.png")
    assert ">Runs<" in dom, "the runs table is not what opened"
    assert "verdict.vs_bce" in dom, "no verdict column"
    # the measured value and the paper's value sit beside the verdict
    assert "claim.vs_bce.fp32.value" in dom and "paper.vs_bce" in dom, "no value columns"
    assert re.search(r">(reproduced|not_reproduced|inconclusive)<", dom), "no verdict values"


def test_three_methods_reports_and_forest_plots_in_a_browser(tmp_path):
    """The screenshots committed under docs/screenshots, taken again: three methods'
    reports at 1,400 px and their claims forest plots (scripts/screenshots.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "screenshots", ROOT / "scripts" / "screenshots.py"
    )
    shots = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shots)
    methods = ["bit_dgdm", "ensloss", "hyper_attention"]
    out = ARTIFACTS / "screenshots"
    assert shots.main([*methods, "--out", str(out)]) == 0
    for slug in methods:
        for kind in ("report", "forest"):
            not_blank(out / f"{slug}-{kind}.png")


def test_prefect_ui_shows_a_method_flows_verdicts(reproduced, tmp_path):
    """A method's flow run against a Prefect server (every stage skipped: the copy is up
    to date) publishes ``claims-ensloss``; its page in the Prefect UI leads with the
    verdict table, readable at 1,400 px."""
    from prefect.client.orchestration import SyncPrefectClient

    from tests.smoke.test_prefect import free_port, prefect_env, start, stop, tail, wait_for

    project = tmp_path / "project"
    shutil.copytree(reproduced, project, symlinks=True)
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = prefect_env(
        tmp_path / "prefect-home",
        PREFECT_API_URL=api,
        PREFECT_UI_ENABLED="true",
        PREFECT_UI_API_URL=api,  # the dashboard calls this port's API, not 4200's
    )
    log = tmp_path / "server.log"
    server = start(
        ["prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        project,
        env,
        log,
    )

    def healthy() -> bool:
        try:
            with urllib.request.urlopen(f"{api}/health", timeout=2) as resp:
                return resp.status == 200
        except OSError:
            return False

    try:
        wait_for(healthy, 120, "the Prefect server's /api/health", [log], [server])
        code = (
            "import sys; from flows.reproduce import reproduce_method; "
            "reproduce_method('ensloss', sys.argv[1])"
        )
        flow = subprocess.run(
            [str(BIN / "python"), "-c", code, str(project)],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert flow.returncode == 0, flow.stdout[-3000:] + flow.stderr[-3000:] + tail(log)
        with SyncPrefectClient(api) as client:
            artifact = client.read_latest_artifacts()
            by_key = {a.key: a for a in artifact}
        assert "claims-ensloss" in by_key, sorted(by_key)
        url = f"http://127.0.0.1:{port}/artifacts/artifact/{by_key['claims-ensloss'].latest_id}"
        shot = ARTIFACTS / "prefect-artifact.png"
        dom = browse(url, shot, "1400,1000", wait_ms=45000)  # the first load compiles the UI
    finally:
        stop(server)
    not_blank(shot)
    assert "claims-ensloss" in dom, "the artifact page did not open"
    assert re.search(r">\s*(reproduced|not reproduced|inconclusive)", dom), "no verdict"
    assert "precision" in dom and "paper" in dom, "no claims table"
