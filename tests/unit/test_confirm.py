"""Confirmatory runs (``reprolab.evidence.running.confirm``): a registration must be committed before its
run, the tree must match it, its seeds must be unused, it runs once, and a resumed run
is the same registration."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from reprolab.evidence import ledger
from reprolab.evidence.running import confirm
from reprolab.evidence.running.paper import MethodRounds, PaperError, PaperRun

ROOT = Path(__file__).resolve().parents[2]
SLUG = "desk_reject"


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", *args],
        cwd=root,
        check=True,
        capture_output=True,
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
            "HOME": str(root.parent),
            "PATH": "/usr/bin:/bin",
        },
    )


def _commit(root: Path, message: str = "x") -> None:
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", message)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git project with what a registration fixes (src/, params.yaml, dvc.yaml) and one
    committed result of the method on seeds 0-4."""
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "code.py").write_text("x = 1\n")
    (root / "params.yaml").write_text((ROOT / "params.yaml").read_text())
    (root / "dvc.yaml").write_text("stages: {}\n")
    result = root / "docs" / "results" / SLUG
    result.mkdir(parents=True)
    (result / "run.json").write_text(json.dumps({"seeds": [0, 1, 2, 3, 4]}))
    _git(root, "init", "-q")
    _commit(root)
    return root


def test_a_registration_fixes_fresh_seeds_the_claims_and_the_tree(project):
    entry = confirm.register(project, SLUG)
    assert entry["seeds"][0] >= confirm.FIRST_SEED
    assert len(entry["seeds"]) == entry["plan"]["max_seeds"]
    assert set(entry["claims"]) == {c.id for c in confirm.registry.get(SLUG).claims}
    for d in entry["claims"].values():  # unit, rule, margin: registered with the claim
        assert {"unit", "rule", "effect", "equivalence_margin", "check"} <= set(d)
    assert entry["trees"] == confirm._trees(project)
    assert ledger.read(project, SLUG)[-1] == entry


def test_a_registration_skips_seeds_a_result_used(project):
    block = project / "docs" / "results" / SLUG / "seeds-1000-1001"
    block.mkdir()
    (block / "run.json").write_text(json.dumps({"seeds": [1000, 1001]}))
    _commit(project)
    assert confirm.register(project, SLUG)["seeds"][0] == 1002


def test_a_registration_needs_a_clean_tree(project):
    (project / "src" / "code.py").write_text("x = 2\n")
    with pytest.raises(confirm.ConfirmError, match="commit"):
        confirm.register(project, SLUG)


def test_a_confirmatory_run_refuses_an_uncommitted_registration(project):
    confirm.register(project, SLUG)
    with pytest.raises(PaperError, match="not committed"):
        PaperRun(project, [SLUG], confirm=True, log=lambda m: None).run()
    _commit(project, "register")
    confirm.verify(project, SLUG, confirm.latest(project, SLUG))  # now it may run


def test_a_confirmatory_run_refuses_a_tree_that_differs(project):
    entry = confirm.register(project, SLUG)
    _commit(project, "register")
    (project / "src" / "code.py").write_text("x = 2\n")
    with pytest.raises(confirm.ConfirmError, match="tree differs"):
        confirm.verify(project, SLUG, entry)
    _commit(project, "a change after the registration")  # committed: still not the same tree
    with pytest.raises(confirm.ConfirmError, match="tree differs.*src"):
        confirm.verify(project, SLUG, entry)


def test_a_method_readme_is_not_fixed_so_one_run_does_not_void_the_next(project):
    """Every run regenerates the verdict blocks of the methods' READMEs (in src/): a
    second registered run must still verify after the first one's blocks, uncommitted or
    committed; a README elsewhere in src/ and any code stay fixed."""
    readme = project / "src" / "reprolab" / "methods" / SLUG / "README.md"
    readme.parent.mkdir(parents=True)
    readme.write_text("# ttba\n")
    _commit(project, "a method README")
    entry = confirm.register(project, SLUG)
    _commit(project, "register")
    readme.write_text("# ttba\n\nverdicts: reproduced\n")
    confirm.verify(project, SLUG, entry)  # uncommitted block: still the registered tree
    _commit(project, "the first run's verdict block")
    confirm.verify(project, SLUG, entry)
    (readme.parent / "method.py").write_text("y = 1\n")
    with pytest.raises(confirm.ConfirmError, match="tree differs"):
        confirm.verify(project, SLUG, entry)
    (readme.parent / "method.py").unlink()
    (project / "src" / "README.md").write_text("not a method README\n")
    with pytest.raises(confirm.ConfirmError, match="tree differs"):
        confirm.verify(project, SLUG, entry)


def test_a_confirmatory_run_refuses_a_changed_config(project):
    entry = confirm.register(project, SLUG)
    _commit(project, "register")
    raw = yaml.safe_load((project / "params.yaml").read_text())
    raw["methods"][SLUG]["paper"] = {**(raw["methods"][SLUG]["paper"] or {}), "budget_minutes": 1}
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    with pytest.raises(confirm.ConfirmError, match="tree differs.*params.yaml"):
        confirm.verify(project, SLUG, entry)


def test_a_confirmatory_run_refuses_a_seed_a_committed_result_used(project):
    entry = confirm.register(project, SLUG)
    _commit(project, "register")
    block = project / "docs" / "results" / SLUG / "seeds-1003"
    block.mkdir()
    (block / "run.json").write_text(json.dumps({"seeds": [entry["seeds"][3]]}))
    _commit(project, "a result on a registered seed")
    with pytest.raises(confirm.ConfirmError, match=r"seeds \[1003\].*used by a committed result"):
        confirm.verify(project, SLUG, entry)


def test_a_registration_runs_once(project):
    entry = confirm.register(project, SLUG)
    _commit(project, "register")
    confirm.results_folder(project, SLUG, entry).mkdir()
    with pytest.raises(confirm.ConfirmError, match="has its result already"):
        confirm.verify(project, SLUG, entry)


def test_a_resumed_confirmatory_run_is_the_same_registration(project, tmp_path, monkeypatch):
    """The copy's saved state carries the registration; a resume runs it with the same
    params (the registered seeds and plan), whatever the ledger holds by then."""
    entry = confirm.register(project, SLUG)
    _commit(project, "register")
    run = PaperRun(project, [SLUG], confirm=True, log=lambda m: None)
    run.registration = entry
    params = run.first_params()
    assert params["seeds"]["paper"] == entry["seeds"]
    assert params["methods"][SLUG]["paper"]["evidence"]["first"] == entry["plan"]["first"]
    work = tmp_path / "copy"
    (work / "src").mkdir(parents=True)
    (work / "src" / "code.py").write_text("x = 1\n")
    _git(work, "init", "-q")
    _commit(work)
    state = {SLUG: MethodRounds(SLUG)}
    run._save(work, params, state, {"commit": "c", "dirty": False, "wall": 0.0}, 2)
    confirm.register(project, SLUG)  # a newer registration: not the one being resumed
    seen = {}

    def rounds(self, work, params, state, run, first):
        seen.update(params=params, registration=self.registration, first=first)
        return state

    monkeypatch.setattr(PaperRun, "_rounds", rounds)
    PaperRun(project, [SLUG], resume=work, log=lambda m: None).run()
    assert seen == {"params": params, "registration": entry, "first": 2}


def test_status_without_a_slug_lists_every_methods_latest_registration(project):
    """One line per registered method: no registration, or its latest one and whether
    its results folder exists; the last line counts those still waiting."""
    first = confirm.register(project, SLUG)
    _commit(project, "register")
    lines = confirm.queue(project).splitlines()
    assert len(lines) == len(confirm.registry.slugs()) + 1
    ours = next(line for line in lines if line.startswith(SLUG + " "))
    assert first["id"] in ours and "NOT RUN YET" in ours
    # where to run it from: the commit that added the ledger line
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=project, capture_output=True, text=True
    ).stdout.strip()
    assert ours.endswith(f"registered in {head}")
    assert lines[-1] == "1 registered run(s) waiting"
    others = [line for line in lines[:-1] if not line.startswith(SLUG + " ")]
    assert all(line.endswith("no registration") for line in others)
    confirm.results_folder(project, SLUG, first).mkdir()
    second = confirm.register(project, SLUG)  # a defect's fix: a new one, new seeds
    ours = next(line for line in confirm.queue(project).splitlines() if line.startswith(SLUG))
    assert second["id"] in ours and "NOT RUN YET  (2 registrations)" in ours
    assert ours.endswith("registration not committed")


def test_a_failed_registered_run_is_on_record_refused_and_its_seeds_stay_used(project):
    """A run a defect stopped before its results: `confirm failed` puts it in the ledger
    with its reason; it is not rerun; status and the queue say so; the next registration
    takes new seeds, and the failed one stays in the record beside it."""
    entry = confirm.register(project, SLUG)
    _commit(project, "register")
    with pytest.raises(confirm.ConfirmError, match="say what stopped"):
        confirm.record_failure(project, SLUG, "  ")
    event = confirm.record_failure(project, SLUG, "quantize crashed:\n  unit u diverged")
    assert event["reason"] == "quantize crashed: unit u diverged"
    assert ledger.read(project, SLUG)[-1] == event
    assert confirm.failures(project, SLUG) == {entry["id"]: event}
    with pytest.raises(confirm.ConfirmError, match="on record"):
        confirm.record_failure(project, SLUG, "again")
    _commit(project, "failed")
    with pytest.raises(confirm.ConfirmError, match="failed .quantize crashed.*register again"):
        confirm.verify(project, SLUG, entry)
    assert f"failed: {event['reason']}" in confirm.status(project, SLUG)
    queue = confirm.queue(project).splitlines()
    assert "FAILED: register again" in next(q for q in queue if q.startswith(SLUG + " "))
    assert queue[-1] == "0 registered run(s) waiting"
    second = confirm.register(project, SLUG)
    assert not set(second["seeds"]) & set(entry["seeds"])
    assert [e["id"] for e in confirm.registrations(project, SLUG)] == [entry["id"], second["id"]]


def test_a_run_with_results_is_not_a_failure(project):
    entry = confirm.register(project, SLUG)
    _commit(project, "register")
    confirm.results_folder(project, SLUG, entry).mkdir()
    with pytest.raises(confirm.ConfirmError, match="stands as it is"):
        confirm.record_failure(project, SLUG, "did not like it")
    assert confirm.failures(project, SLUG) == {}
