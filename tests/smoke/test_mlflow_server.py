"""The pipeline's MLflow runs read back through a real `mlflow server`, REST API only.

The server is started on the SQLite store of the `reproduced` copy, as `make ui` would,
and everything below is asked of it over HTTP: what a user (or another tool) sees is
what the pipeline recorded, not what the Python client happens to cache.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

from reprolab import config
from reprolab.core.tracking import flatten
from reprolab.evidence.judging.claims import VERDICTS
from tests.conftest import BIN, tool_env

pytestmark = pytest.mark.pipeline

STAGES = ("prepare", "train", "quantize", "evaluate")
STARTUP_S = 60


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Rest:
    """The few MLflow REST calls the tests need (urllib, JSON in and out)."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.api = f"{base}/api/2.0/mlflow"

    def get(self, path: str, **query) -> dict:
        url = f"{self.api}/{path}?{urllib.parse.urlencode(query)}"
        with urllib.request.urlopen(url, timeout=30) as resp:
            return json.load(resp)

    def post(self, path: str, body: dict) -> dict:
        req = urllib.request.Request(
            f"{self.api}/{path}",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.load(resp)

    def search(self, experiment_id: str, filter_string: str = "") -> list[dict]:
        runs: list[dict] = []
        token = None
        while True:
            body = {"experiment_ids": [experiment_id], "max_results": 1000}
            if filter_string:
                body["filter"] = filter_string
            if token:
                body["page_token"] = token
            page = self.post("runs/search", body)
            runs += page.get("runs", [])
            token = page.get("next_page_token")
            if not token:
                return runs


def _tags(run: dict) -> dict[str, str]:
    return {t["key"]: t["value"] for t in run["data"].get("tags", [])}


def _params(run: dict) -> dict[str, str]:
    return {p["key"]: p["value"] for p in run["data"].get("params", [])}


def _id(run: dict) -> str:
    return run["info"]["run_id"]


@pytest.fixture(scope="module")
def rest(reproduced: Path, tmp_path_factory: pytest.TempPathFactory):
    """A real `mlflow server` on the reproduced copy's store (own process group)."""
    cwd = tmp_path_factory.mktemp("mlflow-server")  # whatever it writes lands here
    port = _free_port()
    db = reproduced / ".mlflow" / "mlflow.db"
    assert db.is_file(), f"{db} missing: the pipeline wrote no MLflow store"
    cmd = [
        str(BIN / "mlflow"),
        "server",
        "--backend-store-uri",
        f"sqlite:///{db}",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
    ]
    log_path = cwd / "server.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            env=tool_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            if proc.poll() is not None:
                pytest.fail(
                    f"mlflow server exited {proc.returncode}:\n{log_path.read_text()[-3000:]}"
                )
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except (OSError, urllib.error.URLError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(
                    f"mlflow server not healthy after {STARTUP_S}s:\n{log_path.read_text()[-3000:]}"
                )
            time.sleep(0.25)
        yield Rest(base)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)
        except ProcessLookupError:
            pass


@pytest.fixture(scope="module")
def recorded(rest: Rest, reproduced: Path) -> dict:
    """The experiment, its runs, and the chain run with its four stage runs."""
    exp = rest.get("experiments/get-by-name", experiment_name="ensloss")["experiment"]
    runs = rest.search(exp["experiment_id"])
    by_parent: dict[str, list[dict]] = {}
    for r in runs:
        by_parent.setdefault(_tags(r).get("mlflow.parentRunId", ""), []).append(r)
    chains = [r for r in runs if _tags(r).get("reprolab.kind") == "chain"]
    assert chains, "no run tagged reprolab.kind=chain"
    # The chain of this `dvc repro`: the one whose children are the four stages.
    for chain in chains:
        stages = {
            _tags(r).get("reprolab.stage"): r
            for r in by_parent.get(_id(chain), [])
            if _tags(r).get("reprolab.kind") == "stage"
        }
        if set(stages) == set(STAGES):
            return {
                "exp": exp,
                "runs": runs,
                "chain": chain,
                "stages": stages,
                "by_parent": by_parent,
            }
    pytest.fail(f"no chain run has stage children {STAGES}: {[_tags(c) for c in chains]}")


def test_experiment_and_chain_with_stage_children(recorded):
    assert recorded["exp"]["name"] == "ensloss"
    assert recorded["exp"]["lifecycle_stage"] == "active"
    # a model-training experiment (MLflow 3's UI picks its pages by this tag)
    exp_tags = {t["key"]: t["value"] for t in recorded["exp"].get("tags", [])}
    assert exp_tags["mlflow.experimentKind"] == "custom_model_development"
    chain = recorded["chain"]
    assert chain["info"]["status"] == "FINISHED"
    assert chain["info"]["experiment_id"] == recorded["exp"]["experiment_id"]
    for stage, r in recorded["stages"].items():
        tags = _tags(r)
        assert tags["mlflow.parentRunId"] == _id(chain), stage
        assert tags["reprolab.stage"] == stage
        assert r["info"]["status"] == "FINISHED", stage
        assert r["info"]["run_name"] == stage


def test_unit_runs_under_train_with_epoch_history(recorded, rest: Rest, reproduced: Path):
    train = recorded["stages"]["train"]
    units = json.loads((reproduced / "data/checkpoints/ensloss/units.json").read_text())["units"]
    children = recorded["by_parent"].get(_id(train), [])
    unit_runs = {
        _tags(r)["reprolab.unit"]: r for r in children if _tags(r).get("reprolab.kind") == "unit"
    }
    expected_ids = {f"{u['task']}__{u['variant']}__s{u['seed']}" for u in units}
    assert set(unit_runs) == expected_ids
    epochs = config.load(reproduced / "params.yaml").method("ensloss").epochs
    assert epochs >= 2, "the copy must train several epochs for a history to show"
    for uid, r in unit_runs.items():
        assert r["info"]["status"] == "FINISHED", uid
        params = _params(r)
        unit = next(u for u in units if f"{u['task']}__{u['variant']}__s{u['seed']}" == uid)
        assert params == {k: str(unit[k]) for k in ("task", "variant", "seed")}
    # Per-epoch history of every unit, read back point by point.
    for uid in sorted(expected_ids):
        for key in ("train_loss", "val_acc"):
            hist = rest.get("metrics/get-history", run_id=_id(unit_runs[uid]), metric_key=key)
            steps = sorted(m["step"] for m in hist["metrics"])
            assert steps == list(range(epochs)), (uid, key, steps)
            assert all(isinstance(m["value"], int | float) for m in hist["metrics"])


def test_stage_runs_carry_flattened_config(recorded, reproduced: Path):
    project = config.load(reproduced / "params.yaml")
    expected = flatten(
        {
            "profile": project.profile,
            "seeds": list(project.seeds),
            "method": project.method("ensloss").model_dump(mode="json"),
        }
    )
    assert "method.epochs" in expected and "method.variants" in expected
    for stage, r in recorded["stages"].items():
        params = _params(r)
        # the evaluate run also holds each claim's headline verdict as a word
        verdicts = {k: v for k, v in params.items() if k.startswith("verdict.")}
        assert {k: v for k, v in params.items() if k not in verdicts} == expected, stage
        if stage == "evaluate":
            assert verdicts and all(v.endswith("(smoke)") for v in verdicts.values())
        else:
            assert not verdicts, stage


def test_train_run_tags_git_profile_and_dvc_hash(recorded, reproduced: Path):
    tags = _tags(recorded["stages"]["train"])
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=reproduced, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert tags["reprolab.git_commit"] == head
    assert tags["reprolab.git_dirty"] == "false"  # the copy's tracked files are untouched
    assert tags["reprolab.profile"] == "smoke"
    lock = yaml.safe_load((reproduced / "dvc.lock").read_text())
    prepared = next(
        out["md5"]
        for out in lock["stages"]["prepare@ensloss"]["outs"]
        if out["path"] == "data/prepared/ensloss"
    )
    assert tags["dvc.md5.data/prepared/ensloss"] == prepared
    assert prepared.endswith(".dir")


def test_verdict_tags_are_searchable(recorded, rest: Rest, reproduced: Path):
    claims = json.loads((reproduced / "data/eval/ensloss/claims.json").read_text())
    assert claims
    exp_id = recorded["exp"]["experiment_id"]
    evaluate = _id(recorded["stages"]["evaluate"])
    chain = _id(recorded["chain"])
    verdicts = tuple(v for v in VERDICTS if v != "out_of_reach")
    for c in claims:
        key = f"verdict.{c['id']}.{c['precision']}"
        assert c["verdict"] in verdicts
        found = {_id(r) for r in rest.search(exp_id, f"tags.`{key}` = '{c['verdict']}'")}
        assert {evaluate, chain} <= found, key
        for other in verdicts:
            if other != c["verdict"]:
                miss = {_id(r) for r in rest.search(exp_id, f"tags.`{key}` = '{other}'")}
                assert not {evaluate, chain} & miss, (key, other)
