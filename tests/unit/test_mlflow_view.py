"""The MLflow runs view: short run names (method, stage, profile, seeds), each headline
verdict as a word (a param), the numeric side of every verdict as
``verdict_side.<claim>.<precision>``, links into the model-training view, and the
compute seconds of a stage and its chain."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from reprolab.core import tracking


def test_run_name_says_method_stage_profile_and_seeds():
    assert (
        tracking.run_name("desk_reject", "evaluate", "smoke", [1, 0])
        == "desk_reject · evaluate · smoke · seeds 0-1"
    )
    assert (
        tracking.run_name("ensloss", "chain", "paper", (0, 1, 2, 5))
        == "ensloss · chain · paper · seeds 0-2, 5"
    )
    assert tracking.run_name("crane", "chain", "paper") == "crane · chain · paper"


def _claims() -> list[dict]:
    def claim(cid, precision, verdict, headline, value=0.5):
        return {
            "id": cid,
            "precision": precision,
            "verdict": verdict,
            "headline": headline,
            "measured": {"value": value},
            "paper_value": "0.9",
        }

    return [
        claim("vs_bce", "fp32", "reproduced", True),
        claim("vs_bce", "int8", "not_reproduced", False),
        claim("w4_close", "rtn_w4a4", "inconclusive", True),  # a claim about a scheme
        claim("w4_close", "fp32", "reproduced", False),
    ]


def test_headline_verdicts_are_params_in_words():
    assert tracking.verdict_params(_claims(), "paper") == {
        "verdict.vs_bce": "reproduced",
        "verdict.w4_close": "inconclusive",
    }
    assert tracking.verdict_params(_claims(), "smoke") == {
        "verdict.vs_bce": "reproduced (smoke)",
        "verdict.w4_close": "inconclusive (smoke)",
    }


def test_verdict_side_metric_replaces_the_old_verdict_metric():
    from reprolab.core.tracking import claim_metrics, verdict_side
    from reprolab.evidence.judging.claims import VERDICTS

    sides = {v: verdict_side(v) for v in VERDICTS}
    assert sides["reproduced"] == sides["reproduced_smaller"] == 1.0
    assert sides["not_reproduced"] == -1.0
    assert sides["inconclusive"] == sides["no_effect"] == sides["out_of_reach"] == 0.0
    with pytest.raises(ValueError):
        verdict_side("maybe")
    metrics = claim_metrics(_claims())
    assert metrics["verdict_side.vs_bce.fp32"] == 1.0
    assert metrics["verdict_side.vs_bce.int8"] == -1.0
    assert metrics["claim.vs_bce.fp32.value"] == 0.5
    assert not [k for k in metrics if k.endswith(".verdict")]


def test_every_ui_link_opens_the_model_training_view():
    assert tracking.run_url("7", "abc") == f"#/experiments/7/runs/abc?{tracking.UI_WORKFLOW}"
    assert tracking.runs_view_url("7").endswith(f"&{tracking.UI_WORKFLOW}")
    assert tracking.UI_WORKFLOW == "workflowType=machine_learning"


def test_a_chain_in_the_store_reads_as_words(tmp_path, monkeypatch):
    """A real (SQLite) store: a stage opens a chain run named after what it runs; the
    evaluate stage's tracking logs the headline verdicts as params (on the chain too),
    the verdict sides as metrics, the profile and evidence tags, compute seconds."""
    from reprolab.stages.evaluate import _track
    from tests.conftest import ROOT

    shutil.copy(ROOT / "mlflow.env", tmp_path / "mlflow.env")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv(tracking.PARENT_ENV, raising=False)
    monkeypatch.delenv(tracking.FLOW_RUN_ENV, raising=False)
    monkeypatch.setattr(tracking, "machine_tags", dict)  # the machine is not under test
    params = {"profile": "smoke", "seeds": [0, 1]}

    prepare = tracking.open_tracker(tmp_path, "desk_reject", "prepare", "smoke")
    prepare.start(params)
    prepare.finish(True)
    evaluate = tracking.open_tracker(tmp_path, "desk_reject", "evaluate", "smoke")
    evaluate.start(params)
    assert evaluate.parent_id == prepare.parent_id  # the same chain
    runtime = pd.DataFrame(columns=["variant", "precision", "metric", "value"])
    summary = {"variants": {}, "efficiency": {}}
    _track(evaluate, summary, _claims(), tmp_path / "eval", {}, runtime)
    evaluate.finish(True)

    client = evaluate.client
    chain = client.get_run(evaluate.parent_id)
    stage = client.get_run(evaluate.run_id)
    assert chain.info.run_name == "desk_reject · chain · smoke · seeds 0-1"
    assert chain.info.status == "FINISHED"
    for run in (chain, stage):
        assert run.data.params["verdict.vs_bce"] == "reproduced (smoke)"
        assert run.data.params["verdict.w4_close"] == "inconclusive (smoke)"
        assert run.data.metrics["verdict_side.vs_bce.int8"] == -1.0
        assert "claim.vs_bce.fp32.verdict" not in run.data.metrics
        assert run.data.tags["verdict.vs_bce.fp32"] == "reproduced"  # tags as they were
        assert run.data.tags["profile"] == "smoke"
        assert run.data.tags["evidence"] == "smoke: machinery check, not evidence"
    # compute seconds: each stage's own, and their sum on the chain (one step a stage)
    first = client.get_run(prepare.run_id).data.metrics["compute_seconds"]
    second = stage.data.metrics["compute_seconds"]
    history = client.get_metric_history(chain.info.run_id, "compute_seconds")
    assert [m.step for m in history] == [0, 1]
    assert chain.data.metrics["compute_seconds"] == pytest.approx(first + second)
    # the shared view shows the verdict words (params) beside the tags
    view = json.loads(client.get_experiment(evaluate.experiment_id).tags[tracking.VIEW_TAG])
    columns = view["selectedColumns"]
    assert "params.`verdict.vs_bce`" in columns and "params.`verdict.w4_close`" in columns
    assert "tags.`verdict.vs_bce.fp32`" in columns and "tags.`evidence`" in columns


def test_a_paper_run_has_no_smoke_marks(tmp_path, monkeypatch):
    from tests.conftest import ROOT

    shutil.copy(ROOT / "mlflow.env", tmp_path / "mlflow.env")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    tracker = tracking.open_tracker(tmp_path, "exp", "report", "paper")
    tracker.start({"profile": "paper"}, chain=False)
    tracker.finish(True)
    run = tracker.client.get_run(tracker.run_id)
    assert run.data.tags["profile"] == "paper" and "evidence" not in run.data.tags
    assert run.data.metrics["compute_seconds"] >= 0


def test_a_paper_runs_tags_reach_every_run(monkeypatch):
    """make paper hands its kind and registration to the stages (REPROLAB_RUN_TAGS):
    every run's tags carry them, so the MLflow UI filters confirmatory runs."""
    import json

    from reprolab.core import tracking

    monkeypatch.setenv(
        tracking.RUN_TAGS_ENV, json.dumps({"paper_run": "confirmatory", "registration": "r1"})
    )
    tags = tracking.profile_tags("paper")
    assert tags == {"profile": "paper", "paper_run": "confirmatory", "registration": "r1"}
    monkeypatch.setenv(tracking.RUN_TAGS_ENV, "[1]")
    with pytest.raises(tracking.TrackingUnavailableError, match="REPROLAB_RUN_TAGS"):
        tracking.profile_tags("paper")
