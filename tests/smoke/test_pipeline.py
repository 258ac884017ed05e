"""The whole pipeline through real DVC and real MLflow (SQLite) on a tiny project copy.

The copy (the session fixture ``reproduced``) runs two methods, EnsLoss (a network,
quantized with three schemes) and dp_noise (no network: quantization does not apply):
the machinery is the same for every method, and tests/contract runs every registered
method's hooks at its tiny config.
"""

from __future__ import annotations

import html
import json
import shutil

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from reprolab.evidence.judging.claims import VERDICTS
from tests.conftest import run

pytestmark = pytest.mark.pipeline


def test_repro_produces_every_output(reproduced):
    ev = reproduced / "data" / "eval" / "ensloss"
    table = pd.read_csv(ev / "metrics.csv")
    assert set(table.precision) == {"fp32", "int8_dynamic", "rtn_w4a4", "bitdgdm_w4a4"}
    assert set(table.variant) == {"ensloss", "bce", "hinge", "exp"}
    assert set(table.seed) == {0, 1}
    assert table.value.between(0, 1).all()
    claims = json.loads((ev / "claims.json").read_text())
    ids = ("vs_bce", "vs_hinge", "vs_exp", "vs_best_fixed")
    # each claim in the MLP setting and in the CNN one (no CNN units at this config)
    assert {c["id"] for c in claims} == {*ids, *(f"cnn_{i}" for i in ids)}
    for c in claims:
        assert c["verdict"] in VERDICTS and c["verdict"] != "out_of_reach"
        if c["id"].startswith("cnn_"):
            assert c["verdict"] == "inconclusive"
            assert c["measured"]["summary"].startswith("not tested")
        else:
            assert c["measured"]["ci_low"] <= c["measured"]["value"] <= c["measured"]["ci_high"]
        assert c["profile"] == "smoke" and c["level"].startswith("smoke-level")
    summary = json.loads((ev / "metrics.json").read_text())
    eff = summary["efficiency"]
    assert eff["int8_dynamic"]["bytes"] < eff["fp32"]["bytes"]
    # latency differs on every run: it is kept out of the versioned metrics.json
    assert all("latency_ms" not in e for e in eff.values())
    latency = json.loads((reproduced / "data/runtime/ensloss/evaluate.json").read_text())[
        "latency_ms"
    ]
    assert latency["fp32"] > 0 and latency["int8_dynamic"] > 0
    # W4A4: about an eighth of the fp32 bytes (plus scales, biases, outliers); no
    # latency, since fake quantization computes in fp32
    for scheme in ("rtn_w4a4", "bitdgdm_w4a4"):
        assert eff[scheme]["effective_bytes"] < 0.3 * eff["fp32"]["effective_bytes"]
        assert latency[scheme] is None and "fake" in eff[scheme]["latency_note"]
        assert 0 < eff[scheme]["layer_error_mean"] < 1
    qinfo = json.loads((reproduced / "data/quantized/ensloss/quantized.json").read_text())
    assert set(qinfo["layer_relative_error"]["rtn_w4a4"]) == {"0", "2", "4"}
    # every claim gets a verdict at every precision, next to fp32 in the report
    assert {(c["id"], c["precision"]) for c in claims} == {
        (i, p)
        for i in (*ids, *(f"cnn_{i}" for i in ids))
        for p in ("fp32", "int8_dynamic", "rtn_w4a4", "bitdgdm_w4a4")
    }
    assert sorted(p.name for p in (ev / "plots").iterdir()) == [
        "accuracy_by_pair.png",
        "quantized_vs_fp32.png",
        "val_acc_by_epoch.png",
    ]
    report = (reproduced / "data" / "reports" / "claims.md").read_text()
    for c in claims:
        assert f"| ensloss | {c['id']} | {c['precision']} |" in report
    assert "#/experiments/" in report and "?workflowType=machine_learning" in report
    assert "## Quantization: size, coverage, error and latency" in report
    assert "| ensloss | bitdgdm_w4a4 |" in report
    # the HTML view explains the value columns as the Markdown one does
    page = (reproduced / "data" / "reports" / "claims.html").read_text()
    assert "'exact' marks a deterministic value" in html.unescape(page)
    assert "'exact' marks a deterministic value" in report
    # the claim counts agree: summary.json counts claims.csv's rows, wall-time claims apart
    summary = json.loads((reproduced / "data" / "reports" / "summary.json").read_text())
    with open(reproduced / "data" / "reports" / "claims.csv") as fh:
        rows = len(fh.read().strip().splitlines()) - 1
    every = sum(
        len(json.loads(p.read_text())) for p in (reproduced / "data").glob("*/*/claims.json")
    )
    assert summary["claims"] == rows
    assert summary["claims"] + summary["claims_on_wall_time"] == every


def test_repro_runs_a_method_that_is_not_quantized(reproduced):
    """The second method of the copy: its quantize stage records why quantization does
    not apply, evaluate reports fp32 only, and its claims reach the shared report."""
    qinfo = json.loads((reproduced / "data/quantized/dp_noise/quantized.json").read_text())
    assert qinfo["applies"] is False and len(qinfo["reason"]) > 20
    ev = reproduced / "data" / "eval" / "dp_noise"
    table = pd.read_csv(ev / "metrics.csv")
    assert set(table.precision) == {"fp32"}
    assert set(table.seed.dropna()) <= {0, 1}  # (a seedless unit has no seed)
    claims = json.loads((ev / "claims.json").read_text())
    assert claims and {c["precision"] for c in claims} == {"fp32"}
    report = (reproduced / "data" / "reports" / "claims.md").read_text()
    for c in claims:
        assert f"| dp_noise | {c['id']} | fp32 |" in report


def test_second_repro_does_nothing_and_metrics_show(reproduced):
    proc = run(["dvc", "repro"], reproduced)
    assert "Data and pipelines are up to date" in proc.stdout
    assert "Running stage" not in proc.stdout
    shown = json.loads(run(["dvc", "metrics", "show", "--json"], reproduced).stdout)
    files = next(iter(shown.values()))["data"]
    head = files["data/eval/ensloss/headline.json"]["data"]
    # one row per method, the same named columns: verdict counts and the central claim
    # (its value when it has one: ensloss's central CNN claim is not tested at smoke)
    claims = json.loads((reproduced / "data/eval/ensloss/claims.json").read_text())
    central = next(c for c in claims if c["central"] and c["headline"])
    value = central["measured"]["value"]
    assert set(head) == {
        *VERDICTS,  # the headline verdict counts, one per kind
        "central_claim",
        "central_verdict",
        *(["central_value"] if value == value else []),
    }
    assert (head["central_claim"], head["central_verdict"]) == (central["id"], central["verdict"])
    assert head.get("central_value", value) == value or value != value


def test_mlflow_holds_chain_stage_and_unit_runs(reproduced):
    client = MlflowClient(tracking_uri=f"sqlite:///{reproduced}/.mlflow/mlflow.db")
    exp = client.get_experiment_by_name("ensloss")
    # the experiment list shows what each experiment holds: the paper's title
    from reprolab import registry

    assert exp.tags["mlflow.note.content"] == registry.get("ensloss").title
    report = client.get_experiment_by_name("reprolab-report")
    assert "verdicts" in report.tags["mlflow.note.content"]
    # the shared runs-table view the report links to: one column per claim's headline
    # verdict (ensloss's claims are ordinary ones, read at fp32)
    view = json.loads(exp.tags["mlflow.sharedViewState.reprolab"])
    claims = json.loads((reproduced / "data/eval/ensloss/claims.json").read_text())
    assert {c["precision"] for c in claims if c["headline"]} == {"fp32"}
    assert {f"tags.`verdict.{c['id']}.fp32`" for c in claims} <= set(view["selectedColumns"])
    # metric columns come before tag columns in MLflow's table: only the headline values
    assert [col for col in view["selectedColumns"] if col.startswith("metrics.")] == [
        f"metrics.`claim.{c['id']}.{c['precision']}.value`" for c in claims if c["headline"]
    ]
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    chains = [r for r in runs if r.data.tags.get("reprolab.kind") == "chain"]
    assert len(chains) == 1 and chains[0].info.status == "FINISHED"
    chain = chains[0]
    stages = {
        r.data.tags["reprolab.stage"]: r
        for r in runs
        if r.data.tags.get("reprolab.kind") == "stage"
        and r.data.tags.get("mlflow.parentRunId") == chain.info.run_id
    }
    assert set(stages) == {"prepare", "train", "quantize", "evaluate"}
    train = stages["train"]
    assert train.data.params["method.epochs"] == "3"
    assert train.data.tags["reprolab.git_commit"] != "unknown"
    assert train.data.tags["dvc.md5.data/prepared/ensloss"].endswith(".dir")
    units = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == train.info.run_id]
    assert len(units) == 2 * 4 * 2  # tasks x variants x seeds
    history = client.get_metric_history(units[0].info.run_id, "val_acc")
    assert [m.step for m in history] == [0, 1, 2]
    claims = json.loads((reproduced / "data/eval/ensloss/claims.json").read_text())
    for c in claims:
        assert chain.data.tags[f"verdict.{c['id']}.{c['precision']}"] == c["verdict"]


def test_changing_one_profile_reruns_only_what_it_touches(reproduced, tmp_path):
    """An EnsLoss training key reruns EnsLoss's train, quantize, evaluate and the report;
    its prepare stage, dp_noise's stages and a paper-profile key are not touched."""
    project = tmp_path / "project"
    shutil.copytree(reproduced, project, symlinks=True)  # the fixture stays read-only
    # paper-profile params are not inputs of the smoke pipeline: only `validate` (which
    # checks every edit of params.yaml) runs, and its smoke configs come out the same
    proc = run(["dvc", "exp", "run", "-S", "+methods.ensloss.paper.epochs=5"], project)
    ran = {line.split("'")[1] for line in proc.stdout.splitlines() if "Running stage" in line}
    assert ran == {"validate"}, proc.stdout
    # a training key reruns training and what follows, not the datasets (prepare reads
    # only its prepare_keys), and nothing of dp_noise
    proc = run(["dvc", "exp", "run", "-S", "methods.ensloss.smoke.epochs=2"], project)
    ran = {line.split("'")[1] for line in proc.stdout.splitlines() if "Running stage" in line}
    assert ran == {
        "validate",
        "train@ensloss",
        "quantize@ensloss",
        "evaluate@ensloss",
        "report",
    }, proc.stdout
    shown = run(["dvc", "exp", "show", "--json"], project).stdout
    assert "methods.ensloss.smoke.epochs" in shown or '"epochs": 2' in shown


def test_editing_one_method_source_reruns_only_that_method(reproduced, tmp_path):
    """Stages depend on their method's code through data/config/<slug>.code.json (written
    by validate): a README or comment edit reruns validate alone; editing dp_noise's
    code reruns dp_noise's chain, nothing of EnsLoss; a second repro does nothing."""
    project = tmp_path / "project"
    shutil.copytree(reproduced, project, symlinks=True)
    folder = project / "src/reprolab/methods/dp_noise"
    (folder / "README.md").write_text((folder / "README.md").read_text() + "\nAn edit.\n")
    source = folder / "config.py"
    source.write_text(source.read_text() + "\n# a comment\n")
    proc = run(["dvc", "repro"], project)
    ran = {line.split("'")[1] for line in proc.stdout.splitlines() if "Running stage" in line}
    assert ran == {"validate"}, proc.stdout
    source.write_text(source.read_text() + "\nEDITED = True\n")
    proc = run(["dvc", "repro"], project)
    ran = {line.split("'")[1] for line in proc.stdout.splitlines() if "Running stage" in line}
    # the report reruns only if dp_noise's evaluation outputs changed (they are
    # deterministic, so DVC may skip it)
    assert ran - {"report"} == {
        "validate",
        "prepare@dp_noise",
        "train@dp_noise",
        "quantize@dp_noise",
        "evaluate@dp_noise",
    }, proc.stdout
    proc = run(["dvc", "repro"], project)
    assert "Running stage" not in proc.stdout, proc.stdout


def test_a_claims_edit_reruns_evaluate_not_training(reproduced, tmp_path):
    """Judging code is not training code (``reprolab.core.fingerprint``): a method's
    claims.py edit reruns that method's evaluate (and the report), no prepare, train or
    quantize; an edit of the core's claims engine reruns every evaluate, no training."""
    project = tmp_path / "project"
    shutil.copytree(reproduced, project, symlinks=True)
    claims = project / "src/reprolab/methods/dp_noise/claims.py"
    claims.write_text(claims.read_text() + "\nEDITED = True\n")
    proc = run(["dvc", "repro"], project)
    ran = {line.split("'")[1] for line in proc.stdout.splitlines() if "Running stage" in line}
    assert ran - {"report"} == {"validate", "evaluate@dp_noise"}, proc.stdout
    engine = project / "src/reprolab/evidence/judging/claims.py"
    engine.write_text(engine.read_text() + "\nEDITED = True\n")
    proc = run(["dvc", "repro"], project)
    ran = {line.split("'")[1] for line in proc.stdout.splitlines() if "Running stage" in line}
    assert ran - {"report"} == {"validate", "evaluate@dp_noise", "evaluate@ensloss"}, proc.stdout


def test_push_pull_round_trip(reproduced, tmp_path):
    """EnsLoss's chain to a folder remote and back, byte for byte (every method's outputs
    go the same way through the DVC cache)."""
    root = tmp_path / "project"
    shutil.copytree(reproduced, root, symlinks=True)  # the fixture stays read-only
    run(["dvc", "remote", "modify", "--local", "local", "url", str(tmp_path / "remote")], root)
    before = {
        p.relative_to(root): p.read_bytes() for p in (root / "data").rglob("*") if p.is_file()
    }
    chain = ["evaluate@ensloss", "--with-deps"]
    run(["dvc", "push", *chain], root)
    assert any((tmp_path / "remote").rglob("*"))
    for folder in ("prepared", "checkpoints", "quantized", "eval"):
        shutil.rmtree(root / "data" / folder / "ensloss")
    shutil.rmtree(root / ".dvc" / "cache")
    run(["dvc", "pull", *chain], root)
    after = {p.relative_to(root): p.read_bytes() for p in (root / "data").rglob("*") if p.is_file()}
    tracked = {
        k: v for k, v in before.items() if not str(k).startswith(("data/.partial", "data/raw"))
    }
    assert {k: after.get(k) for k in tracked} == tracked
    status = run(["dvc", "status", *chain], root).stdout
    assert "Data and pipelines are up to date" in status, status
