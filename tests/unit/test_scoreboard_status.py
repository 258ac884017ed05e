"""The scoreboard's headline: confirmatory where a registered run has results, marked
exploratory otherwise; changes after the first result counted; a main table that reads
at a glance, with a figure of every central claim."""

from __future__ import annotations

import json
from pathlib import Path

from reprolab import registry
from reprolab.evidence import ledger
from reprolab.evidence.running import scoreboard

ROOT = Path(__file__).resolve().parents[2]
SLUG = "ttba"


def _folder(path: Path, verdict: str, date: str, value: float, extra: dict | None = None) -> None:
    central = next(c for c in registry.get(SLUG).claims if c.central)
    path.mkdir(parents=True)
    measured = {
        "value": value,
        "ci_low": value - 0.1,
        "ci_high": value + 0.1,
        "n": 10,
        "sd": 0.1,
        "seeds": list(range(10)),
        "bound": 0.0,
        "claimed": "<",
        "unit": "seed",
        "analysis": "t",
    }
    entry = {"id": central.id, "precision": "fp32", "headline": True, "central": True}
    entry |= {"verdict": verdict, "measured": measured, "effect": central.effect}
    (path / "claims.json").write_text(json.dumps([entry]))
    (path / "run.json").write_text(
        json.dumps({"date": date, "seeds": list(range(10)), **(extra or {})})
    )


def _row(results: Path) -> dict:
    return next(r for r in scoreboard.rows(ROOT, results) if r["method"] == SLUG)


def test_without_a_confirmatory_run_the_row_is_exploratory(tmp_path):
    _folder(tmp_path / SLUG, "reproduced", "2026-12-06T00:00:00", -0.4)
    row = _row(tmp_path)
    assert row["status"] == "exploratory" and not row["confirmatory"]
    assert "Exploratory only" in scoreboard._summary(scoreboard.rows(ROOT, tmp_path))


def test_a_confirmatory_folder_without_its_registration_does_not_count(tmp_path):
    """(tests/unit/test_confirm_counts.py holds the registered case, in a real repo.)"""
    _folder(tmp_path / SLUG, "reproduced", "2026-12-06T00:00:00", -0.4)
    confirm = {"kind": "confirmatory", "registration": "2026-12-08-abc"}
    _folder(
        tmp_path / SLUG / "confirm-2026-12-08-abc", "not_reproduced", "2026-12-08", 0.3, confirm
    )
    row = _row(tmp_path)
    assert row["verdict"] == "reproduced" and not row["confirmatory"]
    assert (
        "confirm-2026-12-08-abc not counted: registration 2026-12-08-abc is not in"
        in (row["status"])
    )
    assert scoreboard.replication("inconclusive", "reproduced") == "first test"
    assert scoreboard.replication("reproduced", "reproduced") == "replicated"
    assert scoreboard.replication("reproduced", "inconclusive") == "not confirmed (undecided)"
    assert scoreboard.replication("reproduced", "premise_failed") == "not confirmed (undecided)"
    assert scoreboard.replication("reproduced", "not_reproduced") == "did not replicate"
    assert scoreboard.replication("reproduced", "reproduced_smaller") == "replicated (other size)"


def test_an_amendment_before_the_latest_result_still_counts_as_a_change(tmp_path):
    """Every amendment comes after the claim's first result; the scoreboard used to count
    only those after the *latest* results and said "no" for the rest."""
    central = next(c for c in registry.get(SLUG).claims if c.central)
    amended = ledger.amendments(ROOT, SLUG).get(central.id, [])
    assert amended  # the committed ledger has amendments of ttba's central claim
    latest = max(a["date"] for a in amended)
    _folder(tmp_path / SLUG, "reproduced", latest + "Z", -0.4)  # results after them all
    row = _row(tmp_path)
    assert row["changes"] >= len(amended) > 0
    assert row["changed"].startswith(f"{row['changes']} since the first result")


def test_the_main_table_reads_at_a_glance():
    text = (ROOT / "docs" / "results" / "README.md").read_text()
    table = text[text.index("| paper |") :].split("\n\n")[0].splitlines()
    header, rows = table[0], table[2:]
    assert header.count("|") - 1 <= 7
    assert len(rows) == len(registry.slugs()) == 19
    assert all(r.count("|") == header.count("|") for r in rows)
    figure = scoreboard.figure_rows(scoreboard.rows(ROOT), ROOT, ROOT / "docs" / "results")
    assert [r["method"] for r in figure] == registry.slugs()
    # the figure marks each headline that no registered run stands behind, as the
    # table's status column does
    exploratory = {r.split("|")[1].strip() for r in rows if "| exploratory" in r}
    assert (
        exploratory
        and {r["method"] for r in figure if r["label"].endswith(" (exploratory)")} == exploratory
    )
    assert (ROOT / "docs" / "results" / scoreboard.FIGURE).is_file()
    # a central claim decided by the sign test over tasks is drawn as what it counted
    # (its mean's interval is not what decides): the counts of its table cell
    by_method = {r["method"]: r for r in figure}
    cells = {r.split("|")[1].strip(): r.split("|")[4] for r in rows}
    counted = [m for m, r in by_method.items() if r.get("note")]
    assert "clipped_sgd" in counted
    for m in counted:
        assert by_method[m]["note"].split(" (sign test")[0] in cells[m]


def test_the_rendered_scoreboard_colours_each_verdict():
    """docs/results/index.html: the same page for a browser, every headline verdict cell
    coloured by its kind (the claims report's colours)."""
    import re

    page = (ROOT / "docs" / "results" / scoreboard.HTML).read_text()
    assert page == scoreboard.to_html((ROOT / "docs" / "results" / "README.md").read_text())
    kinds = re.findall(r'<td class="([a-z_]+)"><strong>', page)
    assert len(kinds) == 19
    assert set(kinds) <= {*scoreboard.core_claims.VERDICTS, "did_not_replicate"}


def test_the_cross_paper_figure_puts_an_off_scale_interval_at_its_own_edge():
    """An interval wholly past the right edge (lip_rcp's, 49-54 smallest effects from its
    bound) is drawn at the right edge with one arrow pointing right, never an arrow at
    the left; one running past both edges gets both; one inside gets none."""
    from reprolab.core.plots import clamp_interval

    assert clamp_interval(49.4, 54.1, 6.0) == (6.0, 6.0, [6.0])
    assert clamp_interval(-30.0, -8.0, 6.0) == (-6.0, -6.0, [-6.0])
    assert clamp_interval(-9.0, 7.5, 6.0) == (-6.0, 6.0, [-6.0, 6.0])
    assert clamp_interval(3.1, 8.0, 6.0) == (3.1, 6.0, [6.0])
    assert clamp_interval(-0.5, 0.4, 6.0) == (-0.5, 0.4, [])
