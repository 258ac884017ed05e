"""A confirmatory row comes only from results whose registration is in the ledger, was
committed when the run started, and is unchanged since (git order, in a real repo)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from reprolab import registry
from reprolab.evidence import ledger
from reprolab.evidence.running import confirm, scoreboard

SLUG = "ttba"
SEEDS = list(range(1000, 1010))


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()


def _commit(root: Path, message: str) -> str:
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)
    return _git(root, "rev-parse", "HEAD")


def _registration(rid: str, seeds: list[int] = SEEDS) -> dict:
    return {"event": "registration", "id": rid, "date": "2026-12-08T00:00:00Z", "seeds": seeds}


def _write_ledger(root: Path, lines: list[dict]) -> None:
    path = ledger.path_for(root, SLUG)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(ledger.canonical(e) + "\n" for e in lines))


def _results(root: Path, name: str, verdict: str, value: float, run: dict) -> Path:
    central = next(c for c in registry.get(SLUG).claims if c.central)
    folder = root / "docs" / "results" / SLUG / name
    folder.mkdir(parents=True)
    measured = {"value": value, "ci_low": value - 0.1, "ci_high": value + 0.1, "n": 10}
    measured |= {"sd": 0.1, "seeds": run.get("seeds", SEEDS), "bound": 0.0, "claimed": "<"}
    entry = {"id": central.id, "precision": "fp32", "headline": True, "central": True}
    entry |= {"verdict": verdict, "measured": measured, "effect": central.effect}
    (folder / "claims.json").write_text(json.dumps([entry]))
    (folder / "run.json").write_text(json.dumps({"date": "2026-12-08T01:00:00Z", **run}))
    return folder


def _repo(tmp_path: Path) -> tuple[Path, str, str]:
    """A repo whose first commit lacks the registration and whose second holds it."""
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    _write_ledger(root, [{"event": "amendment", "date": "2026-12-01T00:00:00Z"}])
    before = _commit(root, "ledger")
    _write_ledger(
        root, [{"event": "amendment", "date": "2026-12-01T00:00:00Z"}, _registration("R1")]
    )
    registered = _commit(root, "register R1")
    return root, before, registered


def _run(commit: str, rid: str = "R1", **extra) -> dict:
    return {"kind": "confirmatory", "registration": rid, "commit": commit, "seeds": SEEDS} | extra


def test_a_registered_committed_unchanged_run_counts(tmp_path):
    root, _, registered = _repo(tmp_path)
    folder = _results(root, "confirm-R1", "reproduced", -0.4, _run(registered))
    assert confirm.why_not_counted(root, SLUG, folder) == ""


def test_each_defect_is_named(tmp_path):
    root, before, registered = _repo(tmp_path)
    cases = {
        "confirm-R2": (_run(registered, rid="R2"), "registration R2 is not in the ledger"),
        "confirm-R1": (_run(before), "was not committed when the run started"),
    }
    for name, (run, said) in cases.items():
        folder = _results(root, name, "reproduced", -0.4, run)
        assert said in confirm.why_not_counted(root, SLUG, folder)
        _git(root, "clean", "-fdq", "docs/results/ttba")
    folder = _results(root, "confirm-R1", "reproduced", -0.4, _run(registered, dirty=True))
    assert "uncommitted changes" in confirm.why_not_counted(root, SLUG, folder)
    (folder / "run.json").write_text(json.dumps(_run(registered, seeds=[5, 6])))
    assert "seeds registration R1 does not hold" in confirm.why_not_counted(root, SLUG, folder)
    (folder / "run.json").write_text(json.dumps(_run("f" * 40)))
    assert "is not in this repository" in confirm.why_not_counted(root, SLUG, folder)
    (folder / "run.json").write_text(json.dumps({"seeds": SEEDS}))
    assert "names no registration" in confirm.why_not_counted(root, SLUG, folder)
    # the registration edited after its run (new seeds written over the old)
    (folder / "run.json").write_text(json.dumps(_run(registered)))
    _write_ledger(root, [_registration("R1", list(range(2000, 2010)))])
    _commit(root, "rewrite R1")
    assert "changed in the ledger after its run" in confirm.why_not_counted(root, SLUG, folder)


def test_the_scoreboard_counts_only_what_may_count(tmp_path):
    root, before, registered = _repo(tmp_path)
    results = root / "docs" / "results"
    _results(root, "", "reproduced", -0.4, {"seeds": list(range(10))})  # the exploratory run

    def row() -> dict:
        return next(r for r in scoreboard.rows(root, results) if r["method"] == SLUG)

    _results(root, "confirm-R1", "not_reproduced", 0.3, _run(before))  # registered too late
    r = row()
    assert not r["confirmatory"] and r["verdict"] == "reproduced"
    assert r["status"].startswith("exploratory; confirm-R1 not counted: registration R1 was not")
    (results / SLUG / "confirm-R1" / "run.json").write_text(json.dumps(_run(registered)))
    r = row()
    assert r["confirmatory"] and r["verdict"] == "not_reproduced"
    assert r["status"] == "confirmatory (R1): did not replicate"
    summary = scoreboard._summary([r])
    assert "**Replication**: 0 of 1 decided exploratory central verdicts replicated" in summary
    assert summary.endswith("by their confirmatory run; 1 did not replicate.")


def test_the_replication_rate_counts_decided_exploratory_verdicts_only():
    """First tests (nothing decided before) stay out of the rate; exploratory-only rows
    are not in it; each other kind is counted by name."""

    def row(replication: str, confirmatory: bool = True) -> dict:
        verdict = "reproduced" if confirmatory else "inconclusive"
        return {
            "status": "s",
            "verdict": verdict,
            "confirmatory": confirmatory,
            "replication": replication if confirmatory else "",
        }

    table = [
        row("replicated"),
        row("replicated"),
        row("replicated (other size)"),
        row("not confirmed (undecided)"),
        row("first test"),
        row("first test"),
        row("", confirmatory=False),
    ]
    summary = scoreboard._summary(table)
    assert (
        "**Replication**: 2 of 4 decided exploratory central verdicts replicated by their "
        "confirmatory run; 1 replicated (other size); 1 not confirmed (undecided)."
    ) in summary
    assert summary.endswith("2 confirmatory runs were first tests (nothing decided before).")
    assert "**Confirmatory** (6 of 7 papers): 6 reproduced." in summary


def test_a_failed_registered_run_shows_beside_the_one_that_replaced_it(tmp_path):
    """A registration whose run failed (ledger `run_failed`) never counts and stays on the
    row: the status counts it, the details name it with its reason."""
    root, _, _ = _repo(tmp_path)
    results = root / "docs" / "results"
    _results(root, "", "reproduced", -0.4, {"seeds": list(range(10))})
    failed = {"event": "run_failed", "registration": "R1", "date": "2026-12-08T02:00:00Z"}
    failed["reason"] = "quantize: unit u has non-finite weights."  # ledger reasons end so
    lines = [{"event": "amendment", "date": "2026-12-01T00:00:00Z"}, _registration("R1")]
    _write_ledger(root, [*lines, failed, _registration("R2", list(range(1010, 1020)))])
    second = _commit(root, "R1 failed; register R2")
    row = next(r for r in scoreboard.rows(root, results) if r["method"] == SLUG)
    assert row["status"] == "exploratory; 1 registered run(s) failed"
    assert row["failed_runs"] == "R1 (2026-12-08): quantize: unit u has non-finite weights"
    run = _run(second, rid="R2", seeds=list(range(1010, 1015)))
    _results(root, "confirm-R2", "reproduced", -0.3, run)
    row = next(r for r in scoreboard.rows(root, results) if r["method"] == SLUG)
    assert row["confirmatory"] and row["status"].endswith("; 1 registered run(s) failed")
    page = scoreboard.render(root, results)
    assert "- **Registered runs that failed**: R1 (2026-12-08): quantize: unit u" in page
    assert "non-finite weights.\n" in page and "weights.." not in page
