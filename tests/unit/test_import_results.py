"""`python -m reprolab mlflow import-results`: the committed results as MLflow runs, into
a real SQLite store in a throwaway project (no mocks)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from reprolab.evidence.judging import entries
from reprolab.ops import results_import

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "docs" / "results" / "desk_reject"
FOLDERS = ("", "seeds-5-6-7-8-9", "confirm-2026-12-07-3e463d60")
FILES = ("claims.json", "run.json", "metrics.json", "claims.md")


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project with mlflow.env (a relative SQLite store) and three of desk_reject's
    committed results folders: the pooled run, a held-out block, a confirmatory run."""
    (tmp_path / "mlflow.env").write_text("MLFLOW_TRACKING_URI=sqlite:///.mlflow/mlflow.db\n")
    (tmp_path / "params.yaml").write_text("{}\n")
    (tmp_path / "dvc.yaml").write_text("stages: {}\n")
    for sub in FOLDERS:
        dest = tmp_path / "docs" / "results" / "desk_reject" / sub
        dest.mkdir(parents=True, exist_ok=True)
        for name in FILES:
            if (SOURCE / sub / name).is_file():
                shutil.copy(SOURCE / sub / name, dest / name)
    (tmp_path / "docs" / "results" / "ledger").mkdir()  # not a method: skipped
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)  # mlflow.env's store
    monkeypatch.delenv("REPROLAB_RUN_TAGS", raising=False)
    monkeypatch.delenv("REPROLAB_ROOT", raising=False)
    return tmp_path


def _runs(root: Path):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{root}/.mlflow/mlflow.db")
    exp = client.get_experiment_by_name("desk_reject")
    assert exp is not None
    runs = client.search_runs([exp.experiment_id], "tags.`reprolab.kind` = 'results'")
    return client, {r.data.tags[results_import.FOLDER_TAG]: r for r in runs}


def _quiet(_line: str) -> None:
    pass


def test_one_run_per_results_folder_with_its_verdicts(project):
    counts = results_import.import_results(project, say=_quiet, done=_quiet)
    assert counts == {"added": 3, "replaced": 0, "unchanged": 0}
    assert (project / ".mlflow" / "mlflow.db").is_file()  # mlflow.env's relative store
    _, runs = _runs(project)
    base = "docs/results/desk_reject"
    assert set(runs) == {base, f"{base}/seeds-5-6-7-8-9", f"{base}/confirm-2026-12-07-3e463d60"}

    pooled = runs[base]
    run_json = json.loads((SOURCE / "run.json").read_text())
    tags, params, metrics = pooled.data.tags, pooled.data.params, pooled.data.metrics
    assert tags["method"] == "desk_reject" and tags["profile"] == "paper"
    assert tags["paper_run"] == "exploratory"
    assert tags["paper_commit"] == run_json["commit"] and tags["date"] == run_json["date"]
    assert pooled.info.run_name.startswith("desk_reject · results · paper · seeds ")
    assert pooled.info.status == "FINISHED"
    # its duration in the UI is the run's compute, ending at run.json's date
    assert pooled.info.end_time - pooled.info.start_time == round(
        run_json["compute_minutes"] * 60_000
    )
    claims = entries.load(project / base / "claims.json")
    assert claims
    for e in claims:
        if e.headline:
            assert params[f"verdict.{e.id}"] == e.verdict  # the word, a paper verdict
        assert tags[f"verdict.{e.id}.{e.precision}"] == e.verdict
        assert metrics[f"claim.{e.id}.{e.precision}.value"] == pytest.approx(e.measured.value)
        if e.measured.has_interval:
            assert metrics[f"claim.{e.id}.{e.precision}.ci_low"] == pytest.approx(e.measured.ci_low)
            assert metrics[f"claim.{e.id}.{e.precision}.ci_high"] == pytest.approx(
                e.measured.ci_high
            )
        if e.paper_value:
            assert tags[f"paper.{e.id}"] == e.paper_value[:4000]

    held_out = runs[f"{base}/seeds-5-6-7-8-9"]
    assert held_out.data.tags["paper_run"] == "held-out block"
    assert held_out.data.tags["seeds"] == "5-9"
    assert held_out.info.run_name == "desk_reject · held-out · paper · seeds 5-9"
    confirm = runs[f"{base}/confirm-2026-12-07-3e463d60"]
    assert confirm.data.tags["paper_run"] == "confirmatory"
    assert confirm.data.tags["registration"] == "2026-12-07-3e463d60"


def test_a_second_import_adds_nothing(project):
    results_import.import_results(project, say=_quiet, done=_quiet)
    _, before = _runs(project)
    lines: list[str] = []
    counts = results_import.import_results(project, say=lines.append, done=lines.append)
    assert counts == {"added": 0, "replaced": 0, "unchanged": 3}
    _, after = _runs(project)
    assert {k: r.info.run_id for k, r in after.items()} == {
        k: r.info.run_id for k, r in before.items()
    }
    assert sum(line.endswith(")") and ": up to date" in line for line in lines) == 3
    assert lines[-1].startswith("0 added, 0 re-imported, 3 up to date")


def test_a_changed_claims_json_is_imported_again(project):
    results_import.import_results(project, say=_quiet, done=_quiet)
    client, before = _runs(project)
    path = project / "docs" / "results" / "desk_reject" / "claims.json"
    items = json.loads(path.read_text())
    head = next(c for c in items if c.get("headline", c["precision"] == "fp32"))
    head["verdict"] = "not_reproduced" if head["verdict"] != "not_reproduced" else "reproduced"
    path.write_text(json.dumps(items, indent=2))

    counts = results_import.import_results(project, say=_quiet, done=_quiet)
    assert counts == {"added": 0, "replaced": 1, "unchanged": 2}
    _, after = _runs(project)
    assert len(after) == 3  # the older run of the folder is deleted
    new = after["docs/results/desk_reject"]
    old = before["docs/results/desk_reject"]
    assert new.info.run_id != old.info.run_id
    assert new.data.params[f"verdict.{head['id']}"] == head["verdict"]
    assert client.get_run(old.info.run_id).info.lifecycle_stage == "deleted"
    for key in ("docs/results/desk_reject/seeds-5-6-7-8-9",):
        assert after[key].info.run_id == before[key].info.run_id


def test_the_command_names_a_broken_claims_file(project, monkeypatch, capsys):
    bad = project / "docs" / "results" / "desk_reject" / "seeds-5-6-7-8-9" / "claims.json"
    bad.write_text('[{"id": "x"}]')
    monkeypatch.chdir(project)
    assert results_import.main(["import-results"]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "verdict" in err
