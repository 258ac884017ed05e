"""The real components, in the fast tier that CI runs: each is the slow tier's test
(`make test-slow`) reduced in size, not in kind.

- a Dask ``LocalCluster`` (two worker processes) runs a real method's train stage and
  writes the checkpoints the in-process stage writes (slow tier: also a worker killed
  mid-unit, tests/smoke/test_executor.py);
- PostgreSQL behind ``mlflow server`` (the ``make mlflow-server`` pair): a run's params,
  metrics and artifact go in through the tracking client and come back over REST (slow
  tier: a whole DVC chain and four concurrent writers, tests/smoke/test_mlflow_postgres.py);
- two-process gloo DDP ends where one process ends at the same effective batch (slow tier:
  four epochs instead of one, tests/slow/test_ddp.py);
- headless chromium renders the claims report of a reproduced project (slow tier: the
  MLflow and Prefect UIs too, tests/slow/test_browser.py);
- SmolLM2-135M-Instruct, the real weights, loads and answers (slow tier: saved, reloaded
  and quantized too, tests/unit/test_lm.py; cot_order's SFT on it,
  tests/slow/test_cot_order_real.py).
"""

from __future__ import annotations

import re

import pytest
import yaml

from tests.conftest import TINY_ENSLOSS, copy_project, run

pytestmark = pytest.mark.pipeline


def _train_md5(root) -> str:
    lock = yaml.safe_load((root / "dvc.lock").read_text())
    (out,) = lock["stages"]["train@ensloss"]["outs"]
    return out["md5"]


def test_units_on_a_dask_local_cluster_match_in_process(tmp_path, monkeypatch):
    from distributed import Client, LocalCluster

    from reprolab.ops import executor
    from reprolab.stages import run_stage

    cfg = {**TINY_ENSLOSS, "epochs": 2, "quantization": []}
    root = copy_project(tmp_path / "project", ensloss=cfg)
    run(["dvc", "repro", "train@ensloss"], root)  # in-process: the reference
    reference = _train_md5(root)
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        monkeypatch.setenv(executor.ENV, cluster.scheduler_address)
        monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
        monkeypatch.chdir(root)
        result = run_stage("train", "ensloss", root)
        # the units ran on the cluster's two worker processes, not here
        assert len(client.scheduler_info()["workers"]) == 2
    assert result["units"] > 1
    run(["dvc", "commit", "-f", "train@ensloss"], root)
    assert _train_md5(root) == reference


def test_postgres_behind_the_mlflow_server_round_trips_a_run(tmp_path):
    from mlflow.tracking import MlflowClient

    from reprolab.ops import mlflow_server
    from tests.smoke.test_mlflow_server import Rest, _free_port

    servers = mlflow_server.start(tmp_path / "server", _free_port(), _free_port())
    try:
        client = MlflowClient(tracking_uri=servers.url)
        exp = client.create_experiment("ci")
        run_id = client.create_run(exp, run_name="unit").info.run_id
        client.log_param(run_id, "lr", "0.01")
        for step in range(20):
            client.log_metric(run_id, "loss", 1.0 / (step + 1), step=step)
        note = tmp_path / "claims.json"
        note.write_text('{"verdict": "reproduced"}')
        client.log_artifact(run_id, str(note))
        client.set_terminated(run_id)

        rest = Rest(servers.url)
        got = rest.get("runs/get", run_id=run_id)["run"]
        assert {p["key"]: p["value"] for p in got["data"]["params"]} == {"lr": "0.01"}
        history = rest.get("metrics/get-history", run_id=run_id, metric_key="loss")
        assert sorted(m["step"] for m in history["metrics"]) == list(range(20))
        assert got["info"]["status"] == "FINISHED"
        files = {f["path"] for f in rest.get("artifacts/list", run_id=run_id)["files"]}
        assert files == {"claims.json"}
        stored = list((tmp_path / "server" / "artifacts").rglob("claims.json"))
        assert [p.read_text() for p in stored] == ['{"verdict": "reproduced"}']
        # the runs are in PostgreSQL: a second client through the server sees them
        assert MlflowClient(tracking_uri=servers.url).get_run(run_id).data.metrics["loss"] == 0.05
    finally:
        servers.stop()
    assert servers.mlflow.poll() is not None
    assert not (servers.pg_data / "postmaster.pid").exists()


def test_two_process_gloo_ddp_matches_one_process(tmp_path):
    from tests.slow.test_ddp import ddp_check

    out = ddp_check(tmp_path, 1)
    assert out["world_sizes"] == [1, 2]
    assert out["steps"] == [8, 8]  # one epoch of 256 samples at an effective batch 32
    assert out["max_weight_diff"] < 1e-5, out
    assert out["same_predictions"]


def test_the_claims_report_in_headless_chromium(reproduced, tmp_path):
    from tests.slow.test_browser import browse, not_blank

    report = reproduced / "data" / "reports" / "claims.html"
    shot = tmp_path / "claims-report.png"
    dom = browse(report.as_uri(), shot, "1400,1600")
    not_blank(shot)
    summary, claims = dom.find("Summary"), dom.find(">Claims<")
    assert 0 <= summary < claims, "the summary table must come first"
    assert re.search(r">ensloss</a>", dom[summary:claims])
    assert re.search(r">(reproduced|not_reproduced|inconclusive)<", dom)
    assert "<img" in dom  # the figures rendered in the page


def test_real_smollm2_loads_and_answers():
    from reprolab.core import lm

    model, tok = lm.load_gguf()
    assert (model.config.num_hidden_layers, model.config.hidden_size) == (30, 576)
    prompt = lm.chat_prompt(tok, "What is the capital of France? Answer in one word.")
    out = lm.generate(model, tok, [prompt], 6)
    assert "Paris" in out.texts[0], out.texts
