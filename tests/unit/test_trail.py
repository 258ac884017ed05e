"""The trail: every earlier verdict of a central claim, from git and the ledger, in a
tiny git repository (results committed three times, an amendment between the second
and the third), and the committed trail of this repository."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from reprolab import registry
from reprolab.evidence import ledger
from reprolab.evidence.running import trail

ROOT = Path(__file__).resolve().parents[2]
CLAIM = "c"


def _git(root: Path, *args: str, date: str | None = None) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    if date:
        env |= {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    return subprocess.run(
        ["git", *args], cwd=root, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


def _claims(verdict: str, value: float, low: float, high: float, headline_field=True) -> list:
    """A claims.json: the central claim at fp32 and int8 (another verdict there), and
    another claim."""

    def one(cid, precision, verdict, value, low, high, headline):
        entry = {
            "id": cid,
            "precision": precision,
            "verdict": verdict,
            "measured": {"value": value, "ci_low": low, "ci_high": high, "n": 10, "unit": "seed"},
            "statement": f"claim {cid} holds at {precision}, stated at some length so that "
            "git recognises a moved file as the same file",
        }
        if headline_field:
            entry["headline"] = headline
        return entry

    return [
        one(CLAIM, "fp32", verdict, value, low, high, True),
        one(CLAIM, "int8", "out_of_reach", 9.0, 8.0, 10.0, False),
        one("other", "fp32", "reproduced", 1.0, 0.5, 1.5, True),
    ]


def _commit(root: Path, rel: str, claims: list, date: str, message: str) -> str:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(claims, indent=2, sort_keys=True) + "\n")
    _git(root, "add", rel)
    _git(root, "commit", "-q", "-m", message, date=date)
    return _git(root, "rev-parse", "--short=7", "HEAD")


def _ledger(root: Path, entries: list[dict]) -> None:
    path = ledger.path_for(root, "m")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))


@pytest.fixture
def repo(tmp_path):
    """docs/results/m/claims.json (first as docs/results/m_paper_claims.json) committed:
    inconclusive (12-04), the file moved (same content), not reproduced (12-05), another
    claim's result only (12-05), reproduced (12-06, written at +02:00); the ledger amends
    the claim and the config on 12-05 at 18:00, between the 2nd and 3rd results."""
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    _git(root, "config", "user.name", "t")
    _git(root, "config", "user.email", "t@t")
    _git(root, "config", "commit.gpgsign", "false")
    old, new = "docs/results/m_paper_claims.json", "docs/results/m/claims.json"
    shas = [
        _commit(
            root,
            old,
            _claims("inconclusive", 0.1, -0.2, 0.4, headline_field=False),
            "2026-12-04T10:00:00+00:00",
            "m: first results",
        )
    ]
    (root / new).parent.mkdir(parents=True)
    _git(root, "mv", old, new)
    _git(root, "commit", "-q", "-m", "results by method", date="2026-12-04T11:00:00+00:00")
    shas.append(
        _commit(
            root,
            new,
            _claims("not_reproduced", -0.3, -0.5, -0.1),
            "2026-12-05T10:00:00+00:00",
            "m: rerun",
        )
    )
    same = _claims("not_reproduced", -0.3, -0.5, -0.1)
    same[2]["verdict"] = "inconclusive"
    _commit(root, new, same, "2026-12-05T12:00:00+00:00", "m: the other claim only")
    shas.append(
        _commit(
            root,
            new,
            _claims("reproduced", 0.6, 0.4, 0.8),
            "2026-12-06T12:00:00+02:00",
            "m: three pairs a seed",
        )
    )
    base = {"method": "m", "config_hash": "h", "commit": "x"}
    _ledger(
        root,
        [
            {
                **base,
                "event": "config",
                "config": {"method": {"epochs": 5}},
                "date": "2026-12-04T09:00:00+00:00",
            },
            {**base, "event": "registered", "claim": CLAIM, "date": "2026-12-04T10:00:00+00:00"},
            {**base, "event": "registered", "claim": "other", "date": "2026-12-04T10:00:00+00:00"},
            {
                **base,
                "event": "config",
                "config": {"method": {"epochs": 9}},
                "commit": "y",
                "date": "2026-12-05T18:00:00+00:00",
                "reason": "3 pairs a seed: one pair left the interval too wide to decide",
            },
            {
                **base,
                "event": "amended",
                "claim": CLAIM,
                "commit": "y",
                "date": "2026-12-05T18:00:00+00:00",
                "reason": "3 pairs a seed: one pair left the interval too wide to decide",
                "changed": {"effect": {"old": 0.1, "new": 0.2}, "config": {"old": {}, "new": {}}},
            },
            {
                **base,
                "event": "amended",
                "claim": "other",
                "commit": "z",
                "date": "2026-12-05T19:00:00+00:00",
                "reason": "not the central claim",
                "changed": {"metric": {"old": "a", "new": "b"}},
            },
        ],
    )
    return root, shas


def test_history_is_one_step_per_verdict_or_interval_followed_through_a_move(repo):
    root, shas = repo
    steps = trail.history(root, "m", CLAIM)
    assert [s["verdict"] for s in steps] == ["inconclusive", "not_reproduced", "reproduced"]
    assert [s["commit"] for s in steps] == shas  # the move and the other claim's commit collapse
    assert [s["date"] for s in steps] == [
        "2026-12-04T10:00:00+00:00",
        "2026-12-05T10:00:00+00:00",
        "2026-12-06T10:00:00+00:00",  # +02:00 as UTC
    ]
    assert steps[0]["subject"] == "m: first results"
    assert (steps[2]["value"], steps[2]["ci_low"], steps[2]["ci_high"], steps[2]["n"]) == (
        0.6,
        0.4,
        0.8,
        10,
    )


def test_changes_are_attributed_to_the_step_they_came_before(repo):
    root, _ = repo
    steps = trail.history(root, "m", CLAIM)
    between = trail.changes_between(root, "m", CLAIM, steps[1]["date"], steps[2]["date"])
    # the config change and the claim's amendment it came with are one change; the
    # other claim's amendment is not this claim's
    assert between == [
        "2026-12-05: effect, config (method.epochs) (reason: 3 pairs a seed: one pair left "
        "the interval too wide to decide)"
    ]
    assert trail.changes_between(root, "m", CLAIM, steps[0]["date"], steps[1]["date"]) == []
    long = trail.changes_between(root, "m", CLAIM, None, None)
    assert len(long) == 2 and long[0].startswith("2026-12-04: registered")

    entry = trail.entry(root, "m", CLAIM)
    assert [s["changed_before"] for s in entry["steps"]] == [[], [], between]


def test_an_amendment_after_the_first_result_counts_though_before_the_latest(repo):
    root, _ = repo
    entry = trail.entry(root, "m", CLAIM)
    latest = entry["steps"][-1]["date"]
    # today's scoreboard counts only amendments after the current results: none here
    assert [a for a in ledger.amendments(root, "m")[CLAIM] if a["date"] > latest] == []
    assert entry["amendments_since_first_result"] == 1


def test_cell_and_details(repo):
    root, _ = repo
    entry = trail.entry(root, "m", CLAIM)
    assert trail.cell(entry, "reproduced") == (
        "inconclusive (12-04) -> not reproduced (12-05) -> reproduced (12-06: 3 pairs a seed)"
    )
    assert trail.cell(entry, "did_not_replicate").endswith(
        "-> reproduced (12-06: 3 pairs a seed) -> did not replicate (now)"
    )
    assert trail.cell({"steps": []}, "inconclusive") == "inconclusive (now)"
    lines = trail.details(entry)
    assert len(lines) == 3
    assert lines[2].startswith("2026-12-06 `")
    assert "**reproduced**, 0.6 [0.4, 0.8], n = 10 (m: three pairs a seed)" in lines[2]
    assert "changed before it: 2026-12-05: effect, config (method.epochs)" in lines[2]


def test_reruns_that_keep_the_verdict_are_counted_in_the_cell():
    step = {"changed_before": [], "reasons": []}
    entry = {
        "steps": [
            {**step, "verdict": "reproduced", "date": "2026-12-02T00:00:00+00:00"},
            {**step, "verdict": "reproduced", "date": "2026-12-04T00:00:00+00:00"},
            {
                "verdict": "inconclusive",
                "date": "2026-12-07T00:00:00+00:00",
                "changed_before": ["a", "b"],
                "reasons": ["first", "Analysis amended"],
            },
        ]
    }
    assert trail.cell(entry, "inconclusive") == (
        "reproduced (12-02, 1 rerun to 12-04) -> inconclusive (12-07: Analysis amended; 2 changes)"
    )


def test_write_load_and_check(repo, monkeypatch):
    root, _ = repo
    spec = SimpleNamespace(
        claims=[SimpleNamespace(id="other", central=False), SimpleNamespace(id=CLAIM, central=True)]
    )
    monkeypatch.setattr(registry, "slugs", lambda: ["m"])
    monkeypatch.setattr(registry, "get", lambda slug: spec)
    assert trail.load(root) == {}
    assert trail.main(["--check"], root) == 1  # no trail yet
    assert trail.main([], root) == 0
    first = (root / trail.TRAIL_PATH).read_text()
    assert trail.load(root) == trail.build(root) == {"m": trail.entry(root, "m", CLAIM)}
    assert trail.main(["--check"], root) == 0
    trail.write(root)
    assert (root / trail.TRAIL_PATH).read_text() == first  # deterministic
    _commit(
        root,
        "docs/results/m/claims.json",
        _claims("inconclusive", 0.0, -1.0, 1.0),
        "2026-12-08T00:00:00+00:00",
        "m: again",
    )
    assert trail.main(["--check"], root) == 1


def test_this_repository_builds_its_trail_quickly():
    shallow = subprocess.run(
        ["git", "rev-parse", "--is-shallow-repository"], cwd=ROOT, capture_output=True, text=True
    )
    if shallow.returncode or shallow.stdout.strip() != "false":
        pytest.skip("no full git history here")
    start = time.monotonic()
    built = trail.build(ROOT)
    assert time.monotonic() - start < 10
    assert set(built) == set(registry.slugs())
    assert json.loads(trail.text(built)) == built
    for slug, entry in built.items():
        dates = [s["date"] for s in entry["steps"]]
        assert dates == sorted(dates), slug
        assert trail.cell(entry, entry["steps"][-1]["verdict"] if dates else None)


def test_a_result_file_before_the_headline_field():
    """fp32 is the headline; a claim with one result only (then run at one scheme) has
    that one; a file that marks headlines is read by the mark."""
    old = [
        {"id": "a", "precision": "int8", "verdict": "reproduced"},
        {"id": "a", "precision": "fp32", "verdict": "inconclusive"},
        {"id": "b", "precision": "w4a4", "verdict": "not_reproduced"},
    ]
    assert trail._headline(old, "a")["verdict"] == "inconclusive"
    assert trail._headline(old, "b")["verdict"] == "not_reproduced"
    assert trail._headline(old, "c") is None
    marked = [{"id": "b", "precision": "w4a4", "headline": False, "verdict": "reproduced"}]
    assert trail._headline(marked, "b") is None
