"""The verdicts block of each method README, generated from the committed results: the
committed READMEs hold what the claims files give, and the block is placed and replaced
without touching the prose around it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reprolab import registry
from reprolab.evidence.judging.claims import VERDICT_TEXT
from reprolab.evidence.running import scoreboard

ROOT = Path(__file__).resolve().parents[2]


def _row(block: str, claim: str, precision: str) -> list[str]:
    """The cells of ``claim``'s row at ``precision`` in a block (quantized rows leave the
    claim cell empty: they follow their claim's first row)."""
    current = None
    for line in block.splitlines():
        if not line.startswith("| ") or line.startswith("| claim |"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0]:
            current = cells[0].split("`")[1]
        if current == claim and cells[1] == precision:
            return cells
    raise AssertionError(f"no row for {claim} at {precision}")


def test_the_committed_readmes_hold_the_verdicts_on_file():
    """Every method README has one block, equal to what its committed claims.json gives;
    and (read back independently of the renderer) each claim's verdict in the block is
    the one in claims.json."""
    expected = scoreboard.readmes(ROOT)
    assert len(expected) == len(registry.slugs()) == 19
    for path, text in expected.items():
        assert path.read_text() == text, f"{path}: out of date (python -m reprolab scoreboard)"
        assert text.count(scoreboard.BEGIN) == 1 and text.count(scoreboard.END) == 1
        slug = path.parent.name
        block = text[text.index(scoreboard.BEGIN) : text.index(scoreboard.END)]
        path = ROOT / "docs" / "results" / slug / "claims.json"
        claims = json.loads(path.read_text()) if path.is_file() else []
        for c in claims:
            cells = _row(block, c["id"], c["precision"])
            assert cells[2].strip("*") == VERDICT_TEXT[c["verdict"]], (slug, c["id"])
            assert cells[5] == str(c["measured"].get("n", "")), (slug, c["id"])
            # the rule that decided: a check that counts signs reads as the sign test
            rule = "sign test" if c["measured"].get("test") == "sign" else None
            assert cells[6].endswith(rule or c["measured"].get("analysis", "t")), (slug, c["id"])


def _write_results(results: Path, slug: str) -> None:
    folder = results / slug
    folder.mkdir(parents=True)
    run = {"date": "2026-01-02T03:04:05", "seeds": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}
    run |= {"kind": "sequential", "rounds": [{}, {}], "compute_minutes": 7.25}
    (folder / "run.json").write_text(json.dumps(run))
    seeds = list(range(10))
    ev = {"decided_round": 2, "rounds": 2}
    claims = [
        {
            "id": "beats_hsja",
            "precision": "fp32",
            "verdict": "not_reproduced",
            "headline": True,
            "central": True,
            "paper_value": "smaller | than HSJA",
            "evidence": ev,
            "measured": {"value": 0.5, "ci_low": 0.1, "ci_high": 0.9, "n": 20, "seeds": seeds},
        },
        {
            "id": "beats_hsja",
            "precision": "int8_dynamic",
            "verdict": "inconclusive",
            "headline": False,
            "central": True,
            "paper_value": "smaller | than HSJA",
            "evidence": ev,
            "measured": {"value": -0.2, "ci_low": -0.6, "ci_high": 0.3, "n": 20, "seeds": seeds},
        },
        {
            "id": "two_thirds",
            "precision": "fp32",
            "verdict": "inconclusive",
            "headline": True,
            "paper_value": "2/3",
            "evidence": {"rounds": 2, "why": "the plan's last look (20 seeds) is reached"},
            "measured": {"value": 0.6, "ci_low": 0.5, "ci_high": 0.7, "n": 4, "seeds": [0, 2]},
        },
    ]
    (folder / "claims.json").write_text(json.dumps(claims))


def test_a_block_is_the_results_rows(tmp_path):
    results = tmp_path / "docs" / "results"
    _write_results(results, "ttba")
    readme = tmp_path / "src" / "ttba" / "README.md"
    block = scoreboard.method_block(tmp_path, "ttba", readme, results)
    assert block.startswith(scoreboard.BEGIN) and block.endswith(scoreboard.END)
    assert "run of 2026-01-02; seeds 0-9; 2 round(s); 7.2 min of compute" in block
    assert "[report](../../docs/results/ttba/claims.md)" in block
    head = _row(block, "beats_hsja", "fp32")
    assert head == [
        "`beats_hsja` (central)",
        "fp32",
        "**not reproduced**",
        "",  # no size reading on file (results from before it)
        "+0.5 [+0.1, +0.9]",
        "20",
        "seed, t",  # results from before the unit was recorded: the defaults
        "0-9",
        "< +0",  # ttba's registered check: ttba - hsja below 0
        "smaller / than HSJA",  # a '|' would split the cell
        "round 2 of 2",
    ]
    quantized = _row(block, "beats_hsja", "int8_dynamic")
    assert quantized[0] == "" and quantized[2] == "inconclusive" and quantized[9] == "(as above)"
    assert quantized[10] == ""  # quantized rows read their headline row's seeds
    undecided = _row(block, "two_thirds", "fp32")
    assert undecided[7] == "0, 2"
    assert undecided[10] == "undecided after 2: the plan's last look (20 seeds) is reached"
    missing = scoreboard.method_block(tmp_path, "bdia", readme, results)
    assert "No paper-profile results on file" in missing


def test_a_block_goes_under_the_verdicts_heading_and_is_replaced_in_place():
    block1 = f"{scoreboard.BEGIN}\none\n{scoreboard.END}"
    block2 = f"{scoreboard.BEGIN}\ntwo\nrows\n{scoreboard.END}"
    text = "# m\n\n## Claims\nprose\n\n## Verdicts (paper)\nhistory\n"
    placed = scoreboard.with_block(text, block1)
    assert placed == f"# m\n\n## Claims\nprose\n\n## Verdicts (paper)\n\n{block1}\nhistory\n"
    replaced = scoreboard.with_block(placed, block2)
    assert replaced == placed.replace(block1, block2)
    assert scoreboard.with_block(replaced, block2) == replaced  # idempotent
    appended = scoreboard.with_block("# m\nprose\n", block1)
    assert appended == f"# m\nprose\n\n## Verdicts\n\n{block1}\n"
    with pytest.raises(ValueError, match="exactly one"):
        scoreboard.with_block(placed + "\n" + block1, block2)
    with pytest.raises(ValueError, match="exactly one"):
        scoreboard.with_block(f"{scoreboard.END}\n{scoreboard.BEGIN}\n", block2)


def test_the_readmes_written_are_those_of_the_project_given(tmp_path):
    """A copy of the project gets its own READMEs' blocks, never the source tree's."""
    folder = tmp_path / "src" / "reprolab" / "methods" / "ttba"
    folder.mkdir(parents=True)
    (folder / "README.md").write_text("# ttba\n\n## Verdicts\nold prose\n")
    results = tmp_path / "docs" / "results"
    _write_results(results, "ttba")
    before = {p: p.read_text() for p in (ROOT / "src" / "reprolab" / "methods").glob("*/README.md")}
    written = scoreboard.write_readmes(tmp_path, results)
    assert written == [folder / "README.md"]  # the other 18 are not in this copy
    text = (folder / "README.md").read_text()
    assert text.startswith("# ttba\n\n## Verdicts\n\n" + scoreboard.BEGIN)
    assert "| `beats_hsja` (central) | fp32 | **not reproduced** |" in text
    assert text.endswith(scoreboard.END + "\nold prose\n")
    assert scoreboard.write_readmes(tmp_path, results) == []  # nothing changed: not rewritten
    after = {p: p.read_text() for p in (ROOT / "src" / "reprolab" / "methods").glob("*/README.md")}
    assert after == before


def test_claims_on_wall_time_come_from_their_own_file(tmp_path):
    """lip_rcp's ``faster`` is checked on wall time, which evaluate keeps out of
    claims.json: the block reads it from timed_claims.json, and says so where a run
    predates that file. A claim in neither file is named as added after the run."""
    folder = tmp_path / "results" / "lip_rcp"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"date": "2026-01-01", "seeds": [0, 1, 2]}))
    m = {"value": 0.1, "ci_low": 0.05, "ci_high": 0.15, "n": 6, "seeds": [0, 1, 2]}
    row = {"precision": "fp32", "headline": True, "paper_value": "p", "measured": m}
    ids = [c.id for c in registry.get("lip_rcp").claims]
    assert "faster" in ids and ids[0] != "faster"
    (folder / "claims.json").write_text(
        json.dumps([{**row, "id": i, "verdict": "reproduced"} for i in ids if i != "faster"])
    )
    readme = tmp_path / "README.md"
    before = scoreboard.method_block(tmp_path, "lip_rcp", readme, tmp_path / "results")
    assert "On wall time, not in these files: `faster`" in before
    assert "added after it" not in before
    (folder / scoreboard.TIMED_CLAIMS).write_text(
        json.dumps([{**row, "id": "faster", "verdict": "not_reproduced"}])
    )
    (folder / "claims.json").write_text(
        json.dumps([{**row, "id": ids[0], "verdict": "reproduced"}])
    )
    after = scoreboard.method_block(tmp_path, "lip_rcp", readme, tmp_path / "results")
    assert _row(after, "faster", "fp32")[:3] == [
        "`faster` (wall clock)",
        "fp32",
        "**not reproduced**",
    ]
    assert "On wall time" not in after
    rest = ", ".join(f"`{i}`" for i in ids[1:] if i != "faster")
    assert f"Not in this run (added after it): {rest}." in after


def test_misplaced_markers_are_an_error_naming_the_readme(tmp_path):
    """`python -m reprolab scoreboard` on a README whose markers are off: exit 2, the file
    named, no traceback, and nothing written."""
    import subprocess
    import sys

    folder = tmp_path / "src" / "reprolab" / "methods" / "ttba"
    folder.mkdir(parents=True)
    text = f"# ttba\n\n## Verdicts\n{scoreboard.END}\nprose\n{scoreboard.BEGIN}\n"
    (folder / "README.md").write_text(text)
    for name in ("params.yaml", "dvc.yaml"):
        (tmp_path / name).write_text((ROOT / name).read_text())
    for check in ([], ["--check"]):
        proc = subprocess.run(
            [sys.executable, "-m", "reprolab", "scoreboard", *check],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert str(folder / "README.md") in proc.stderr and "exactly one" in proc.stderr
        assert "Traceback" not in proc.stderr
    assert (folder / "README.md").read_text() == text
    assert not (tmp_path / "docs" / "results" / "README.md").exists()
