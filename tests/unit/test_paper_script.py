"""The paper run's pure parts (no compute): the params of its first look, a held-out
block, the ledger's registration and amendments, the comparison of seed blocks, the
scoreboard and the CPU record."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from reprolab import registry
from reprolab.core.machine import cpu, kernels
from reprolab.evidence import ledger
from reprolab.evidence.running import scoreboard
from reprolab.evidence.running.paper import PaperError, PaperRun, compare_blocks, compare_replay

ROOT = Path(__file__).resolve().parents[2]


def _params() -> dict:
    return yaml.safe_load((ROOT / "params.yaml").read_text())


def _git_project(tmp_path: Path, params: dict) -> Path:
    """A folder with params.yaml and a git commit (what the ledger records)."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "x"]):
        subprocess.run(
            ["git", *args],
            cwd=root,
            check=True,
            env={
                "GIT_AUTHOR_NAME": "t",
                "GIT_AUTHOR_EMAIL": "t@t",
                "GIT_COMMITTER_NAME": "t",
                "GIT_COMMITTER_EMAIL": "t@t",
                "HOME": str(tmp_path),
                "PATH": "/usr/bin:/bin",
            },
        )
    return root


def test_first_params_cut_the_methods_and_drop_the_rounds_seeds(tmp_path):
    params = _params()
    params["methods"]["dp_noise"]["paper"] = {
        "evidence": {
            "added": [{"claims": ["vs_gaussian_k10"], "seeds": [5], "variants": ["optimized"]}]
        }
    }
    root = _git_project(tmp_path, params)
    out = PaperRun(root, ["ensloss", "dp_noise"], out=tmp_path / "r").first_params()
    assert out["profile"] == "paper" and list(out["methods"]) == ["ensloss", "dp_noise"]
    assert out["methods"]["ensloss"] == params["methods"]["ensloss"]
    # the rounds start again from the first look: the seeds they added are not kept
    assert "added" not in (out["methods"]["dp_noise"]["paper"].get("evidence") or {})
    assert list(out["assets"]) == ["images"]  # ensloss reads the images asset only


def test_a_held_out_block_is_one_look_at_its_own_seeds(tmp_path):
    from reprolab import config

    root = _git_project(tmp_path, _params())
    out = PaperRun(root, ["dp_noise"], seeds=[100, 101, 102], out=tmp_path / "r").first_params()
    assert out["seeds"]["paper"] == [100, 101, 102]
    assert out["seeds"]["smoke"] == _params()["seeds"]["smoke"]
    cfg = config.validate(out).method("dp_noise")
    from reprolab.evidence.judging.sequential import plan_for

    plan = plan_for(cfg.evidence, out["seeds"]["paper"])
    assert plan.looks == (3,)  # every seed in one look, a fixed-n analysis


def test_an_unknown_method_is_named_before_any_compute(tmp_path):
    from reprolab.registry import UnknownMethodError

    with pytest.raises(UnknownMethodError, match="nosuchmethod"):
        PaperRun(ROOT, ["nosuchmethod"])
    with pytest.raises(PaperError, match="do not go together"):
        PaperRun(ROOT, ["dp_noise"], seeds=[1, 2, 3], replay=True)


def test_the_ledger_registers_new_claims_and_refuses_changes_without_a_reason(tmp_path):
    params = _params()
    root = _git_project(tmp_path, params)
    run = PaperRun(root, ["dp_noise"], out=tmp_path / "r", log=lambda m: None)
    changes = run.check_ledger()
    n_claims = len(registry.get("dp_noise").claims)
    assert {c.kind for c in changes} == {"new"} and len(changes) == n_claims
    run.record_ledger(changes)
    entries = ledger.read(root, "dp_noise")
    assert [e["event"] for e in entries] == ["config"] + ["registered"] * n_claims
    assert run.check_ledger() == []  # nothing changed since
    # a change of the paper-profile config is a change of every claim's definition
    params["methods"]["dp_noise"]["paper"] = {
        **(params["methods"]["dp_noise"]["paper"] or {}),
        "iterations": 123,
    }
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    with pytest.raises(PaperError, match=r"dp_noise\.vs_gaussian_k10: changed after results"):
        run.check_ledger()
    amend = PaperRun(
        root, ["dp_noise"], amend="fewer iterations", out=tmp_path / "r", log=lambda m: None
    )
    changes = amend.check_ledger()
    assert {c.kind for c in changes} == {"changed"}
    assert changes[0].changed["config"]["new"] == {"method.iterations": 123}
    amend.record_ledger(changes)
    marked = ledger.amendments(root, "dp_noise")
    assert set(marked) == {c.id for c in __import__("reprolab").registry.get("dp_noise").claims}
    assert marked["vs_gaussian_k10"][0]["reason"] == "fewer iterations"
    assert amend.check_ledger() == []
    # a decision that changes nothing (a setting searched for, not found) is a note
    note = PaperRun(
        root, ["dp_noise"], amend="no N below 1000 converges", out=tmp_path / "r", log=print
    )
    note.record_ledger(note.check_ledger())
    last = ledger.read(root, "dp_noise")[-1]
    assert last["event"] == "note" and last["reason"] == "no N below 1000 converges"
    assert ledger.amendments(root, "dp_noise") == marked  # a note amends no claim
    run.record_ledger(run.check_ledger())  # without a reason: nothing to record
    assert ledger.read(root, "dp_noise")[-1] == last


def test_the_ledger_hash_is_the_definition_and_config():
    from reprolab import registry

    claim = registry.get("bdia").claims[1]
    a = ledger.claim_hash(claim.definition(), "cfg1")
    assert a == ledger.claim_hash(dict(claim.definition()), "cfg1")
    assert a != ledger.claim_hash({**claim.definition(), "effect": 0.5}, "cfg1")
    assert a != ledger.claim_hash(claim.definition(), "cfg2")


def _results(folder: Path, seeds, verdicts: dict) -> None:
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"seeds": seeds}))
    claims = [
        {
            "id": cid,
            "precision": "fp32",
            "verdict": v,
            "headline": True,
            "measured": {"value": x, "ci_low": x, "ci_high": x},
        }
        for cid, (v, x) in verdicts.items()
    ]
    (folder / "claims.json").write_text(json.dumps(claims))


def test_a_held_out_block_flags_opposite_decisions_only(tmp_path):
    _results(
        tmp_path / "a",
        [0, 1, 2],
        {"c1": ("reproduced", 0.1), "c2": ("inconclusive", 0.0), "c3": ("reproduced", 0.2)},
    )
    _results(
        tmp_path / "b",
        [100, 101, 102],
        {"c1": ("reproduced", 0.1), "c2": ("reproduced", 0.1), "c3": ("not_reproduced", -0.1)},
    )
    text, summary = compare_blocks(tmp_path / "a", tmp_path / "b")
    assert summary["differ"] == 2 and summary["disagree"] == 1
    assert summary["disagreeing_claims"] == ["c3"] and summary["overlap"] == []
    assert "| c3 | fp32 | reproduced | not_reproduced |" in text and "opposite" in text
    same = compare_replay(tmp_path / "a", tmp_path / "a")
    assert same == {"verdicts_differ": 0, "differences": [], "max_value_difference": 0.0}
    other = compare_replay(tmp_path / "a", tmp_path / "b")
    assert other["verdicts_differ"] == 2 and other["max_value_difference"] == pytest.approx(0.3)


def test_cpu_record_names_the_model_and_vector_extensions():
    info = cpu()
    assert info["model"]
    flags = Path("/proc/cpuinfo").read_text().split("flags")[1].split("\n")[0].split()
    assert set(info["vector_extensions"]) <= set(flags)
    if "avx2" in flags:
        assert "avx2" in info["vector_extensions"]


def test_kernels_record_what_torch_dispatches_to():
    import torch

    info = kernels()
    assert info["torch_cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert info["threads"] == torch.get_num_threads()
    assert info["blas"] in torch.__config__.show()  # its BLAS_INFO, not a guess
    assert (info["onednn"] != "none") == torch.backends.mkldnn.is_available()


def test_the_committed_scoreboard_matches_the_committed_results():
    """docs/results/README.md is generated from the committed claims files and the
    ledger: editing either without regenerating it fails here."""
    path = ROOT / "docs" / "results" / "README.md"
    assert path.read_text() == scoreboard.render(ROOT), (
        "docs/results/README.md is out of date: python -m reprolab scoreboard"
    )
    rows = scoreboard.rows(ROOT)
    assert len(rows) == 19 and len({r["method"] for r in rows}) == 19
    for r in rows:  # each row's run verdict is the central claim's headline verdict on file
        # (the latest confirmatory run's where there is one, else the exploratory run's)
        if not r.get("status"):  # no results of its central claim on file
            continue
        folder = ROOT / "docs" / "results" / r["report"].rsplit("/", 1)[0]
        assert r["confirmatory"] == folder.name.startswith("confirm-")
        claims = json.loads((folder / "claims.json").read_text())
        head = [
            c
            for c in claims
            if c["id"] == r["claim"] and c.get("headline", c["precision"] == "fp32")
        ]
        assert head and head[0]["verdict"] == r["run_verdict"]
        assert r["verdict"] in (r["run_verdict"], "did_not_replicate")


def _head(verdict: str, value: float = 0.05, sd: float = 0.02, n: int = 5):
    """The run's central entry, as the scoreboard reads it (judging.entries)."""
    from reprolab.evidence.judging.entries import Entry

    measured = {"value": value, "sd": sd, "n": n, "unit": "seed", "ci_low": 0.0, "ci_high": 0.1}
    return Entry.from_dict(
        {
            "id": "c1",
            "precision": "fp32",
            "headline": True,
            "verdict": verdict,
            "measured": measured,
        }
    )


def test_a_held_out_block_of_an_earlier_setting_is_labelled_not_flagged(tmp_path):
    """A block run before an amendment that the pooled run follows tested the earlier
    setting: it is shown as such and never counted as not replicating."""
    block = tmp_path / "m" / "seeds-100-101-102"
    _results(block, [100, 101, 102], {"c1": ("not_reproduced", -0.1)})
    info = json.loads((block / "run.json").read_text())
    (block / "run.json").write_text(json.dumps({**info, "date": "2026-01-02T00:00:00+00:00"}))
    amend = [{"date": "2026-01-03T00:00:00+00:00"}]
    text, failed = scoreboard._held_out(tmp_path, "m", [0, 1, 2], "c1", _head("reproduced"))
    assert (
        failed
        and "not reproduced" in text
        and "**did not replicate** (decides the other way)" in text
    )
    after = scoreboard._held_out(
        tmp_path, "m", [0, 1, 2], "c1", _head("reproduced"), amend, "2026-01-04T00:00:00+00:00"
    )
    assert after == ("seeds 100-102 (earlier setting): not reproduced", False)
    # an amendment after the pooled run too: block and pool tested the same setting
    same = scoreboard._held_out(
        tmp_path, "m", [0, 1, 2], "c1", _head("reproduced"), amend, "2026-01-02T12:00:00+00:00"
    )
    assert same == (text, True)


def test_a_resumed_run_takes_an_amended_budget_and_nothing_else(tmp_path):
    """The copy's params keep their rounds' seeds; a budget raised in params.yaml since
    applies, but only where the budget is all that changed in the method's config."""
    params = _params()
    root = _git_project(tmp_path, params)
    run = PaperRun(root, ["dp_noise", "ensloss"], out=tmp_path / "r", log=lambda m: None)
    saved = run.first_params()
    added = [{"claims": ["vs_gaussian_k10"], "seeds": [5], "variants": ["optimized"]}]
    saved["methods"]["dp_noise"]["paper"].setdefault("evidence", {})["added"] = added

    def budget(p: dict, slug: str) -> float:
        from reprolab import config

        return config.validate(p).method(slug).evidence.budget_minutes

    before = {slug: budget(saved, slug) for slug in ("dp_noise", "ensloss")}
    params["methods"]["dp_noise"]["paper"].setdefault("evidence", {})["budget_minutes"] = 333
    params["methods"]["ensloss"]["paper"].setdefault("evidence", {})["budget_minutes"] = 444
    params["methods"]["ensloss"]["paper"]["epochs"] = 77  # and another change: not taken
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    out, raised = run._amended_budgets(saved)
    assert raised == ["dp_noise"]
    assert budget(out, "dp_noise") == 333 and before["dp_noise"] != 333
    assert budget(out, "ensloss") == before["ensloss"]
    assert out["methods"]["dp_noise"]["paper"]["evidence"]["added"] == added
    assert out["methods"]["ensloss"] == saved["methods"]["ensloss"]
    assert budget(saved, "dp_noise") == before["dp_noise"]  # the copy's params untouched


def test_a_held_out_block_that_differs_at_the_unit_did_not_replicate(tmp_path):
    """An inconclusive block whose seed values differ from the run's (Welch's t on the
    summaries) did not replicate it; a block that agrees did, and is pooled with it; an
    earlier setting is never counted."""
    block = tmp_path / "m" / "seeds-50-51-52-53-54"
    block.mkdir(parents=True)
    (block / "run.json").write_text(
        json.dumps({"seeds": [50, 51, 52, 53, 54], "date": "2026-01-05"})
    )

    def write(value, sd):
        measured = {
            "value": value,
            "sd": sd,
            "n": 5,
            "unit": "seed",
            "ci_low": value - 0.03,
            "ci_high": value + 0.03,
        }
        claim = {"id": "c1", "precision": "fp32", "verdict": "inconclusive", "headline": True}
        (block / "claims.json").write_text(json.dumps([{**claim, "measured": measured}]))

    run = _head("reproduced", value=0.045, sd=0.0106)
    write(-0.010, 0.039)  # rotation_fusion's two blocks
    text, failed = scoreboard._held_out(tmp_path, "m", [0, 1, 2, 3, 4], "c1", run)
    assert failed and "Welch p = 0.03" in text and "pooled +0.0175" in text
    write(0.040, 0.012)  # agrees with the run
    text, failed = scoreboard._held_out(tmp_path, "m", [0, 1, 2, 3, 4], "c1", run)
    assert not failed and "did not replicate" not in text and "over 10 units" in text
    write(-0.010, 0.039)
    amend = [{"date": "2026-01-06"}]
    earlier = scoreboard._held_out(tmp_path, "m", [0, 1, 2, 3, 4], "c1", run, amend, "2026-01-07")
    assert earlier == ("seeds 50-54 (earlier setting): inconclusive", False)


def test_the_driver_loads_what_it_imports_late_before_the_run(tmp_path):
    """The rounds run the copy's code, the driver the working tree's: every module the
    driver imports inside a function (read off the sources by a regex, independently of
    the import walk) is loaded before the run, so an edit of the tree during a run cannot
    mix versions (a real failure: report.py edited mid-run called a function the loaded
    judging.claims did not have)."""
    import re

    from reprolab.evidence.running.paper import driver_modules

    late = set()
    for rel in (
        "evidence/running/paper.py",
        "evidence/running/scoreboard.py",
        "stages/report.py",
        "evidence/ledger.py",
        "evidence/running/rounds.py",
        "evidence/running/confirm.py",
        "evidence/running/trail.py",
    ):
        text = (ROOT / "src" / "reprolab" / rel).read_text()
        for module, names in re.findall(r"\n +from (reprolab[\w.]*) import ([\w, ]+)", text):
            late.add(module)
            for name in names.split(","):  # `from reprolab.core import io`: a module
                candidate = f"{module}.{name.strip()}"
                if (ROOT / "src" / Path(*candidate.split("."))).with_suffix(".py").is_file():
                    late.add(candidate)
    assert {
        "reprolab.stages.report",
        "reprolab.core.plots",
        "reprolab.evidence.running.scoreboard",
    } <= late
    assert late <= set(driver_modules())
    # in a process: preload, then break report.py on disk; the driver's late import
    # still gets the module as loaded
    src = tmp_path / "src"
    shutil.copytree(
        ROOT / "src" / "reprolab", src / "reprolab", ignore=shutil.ignore_patterns("__pycache__")
    )
    script = (
        "from reprolab.evidence.running import paper; paper.preload(); import pathlib, sys; "
        "pathlib.Path(sys.argv[1]).write_text('raise RuntimeError(\"edited\")'); "
        "from reprolab.stages import report; print(report.write_views.__name__)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(src / "reprolab" / "stages" / "report.py")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(src)},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "write_views"


@pytest.mark.parametrize("recorded", [True, False])
def test_a_held_out_block_resumes_with_its_own_seeds(tmp_path, recorded):
    """--resume on a held-out block's copy goes on with the block's seeds (from the state,
    or, in a copy saved before they were recorded, from its params' paper seeds); it has
    no budget to amend."""
    work = tmp_path / "copy"
    (work / ".paper").mkdir(parents=True)
    params = {"seeds": {"smoke": [0, 1], "paper": [50, 51]}, "methods": {}}
    state = {"methods": ["ensloss"], "kind": "held-out block", "round": 1, "params": params}
    if recorded:
        state["seeds"] = [50, 51]
    (work / ".paper" / "state.json").write_text(json.dumps(state))
    run = PaperRun(tmp_path, ["ensloss"], resume=work, amend="why", log=lambda m: None)
    with pytest.raises(PaperError, match="holds a held-out block: it has no budget to amend"):
        run.run()
    assert run.seeds == [50, 51] and not run.replay
    state.update(kind="replay")
    (work / ".paper" / "state.json").write_text(json.dumps(state))
    other = PaperRun(tmp_path, ["ensloss"], resume=work, amend="why", log=lambda m: None)
    with pytest.raises(PaperError, match="holds a replay"):
        other.run()
    assert other.replay and other.seeds is None


def test_a_paper_run_tracks_into_the_projects_store(tmp_path, monkeypatch):
    """The rounds run in a scratch copy, but their MLflow runs go to the project's store:
    mlflow.env's relative SQLite path resolved against the project, not the copy; an
    MLFLOW_TRACKING_URI in the environment wins. The runs carry the paper run's kind."""
    root = _git_project(tmp_path, _params())
    (root / "mlflow.env").write_text("MLFLOW_TRACKING_URI=sqlite:///.mlflow/mlflow.db\n")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    run = PaperRun(root, ["dp_noise"], log=lambda m: None)
    assert run.tracking_uri() == f"sqlite:///{(root / '.mlflow' / 'mlflow.db').resolve()}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5001")
    assert run.tracking_uri() == "http://127.0.0.1:5001"
    assert run.run_tags({"commit": "abc"}) == {"paper_run": "exploratory", "paper_commit": "abc"}
    block = PaperRun(root, ["dp_noise"], seeds=[100], log=lambda m: None)
    assert block.run_tags({})["paper_run"] == "held-out block"


def test_a_rerun_keeps_every_folder_it_did_not_write(tmp_path):
    """replay/, probes/, seeds-*/ and confirm-*/ survive a new pooled run's results; the
    files it writes are replaced, and its own plots/ is the new one."""
    from reprolab.evidence.running.paper import replace_results

    dest = tmp_path / "results" / "m"
    kept = ("replay", "probes", "seeds-50-51", "confirm-2026-12-07-abc")
    for name in (*kept, "plots"):
        (dest / name).mkdir(parents=True)
        (dest / name / "old.txt").write_text(name)
    (dest / "claims.json").write_text("old")
    (dest / "stale.md").write_text("a file the new run does not write")
    new = tmp_path / "results" / "m.tmp"
    (new / "plots").mkdir(parents=True)
    (new / "plots" / "new.png").write_text("png")
    (new / "claims.json").write_text("new")
    replace_results(dest, new)
    assert not new.exists()
    assert (dest / "claims.json").read_text() == "new"
    assert not (dest / "stale.md").exists() and not (dest / "plots" / "old.txt").exists()
    assert (dest / "plots" / "new.png").is_file()
    for name in kept:
        assert (dest / name / "old.txt").read_text() == name
    fresh = tmp_path / "results" / "n"  # a first run: nothing to keep
    (tmp_path / "n.tmp").mkdir()
    (tmp_path / "n.tmp" / "claims.json").write_text("x")
    replace_results(fresh, tmp_path / "n.tmp")
    assert (fresh / "claims.json").read_text() == "x"
