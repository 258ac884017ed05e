"""Smoke says smoke: wherever a smoke-profile verdict is shown (claims.html, the
report's summary line, the Prefect claims artifacts, MLflow's tags) it is marked as a
machinery check, not evidence; a paper-profile verdict is shown as it is."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

NOTE = "smoke-level verdicts check the machinery; they are not evidence"


def _table(profile: str) -> pd.DataFrame:
    """Two claim rows of one method, as ``report.collect`` makes them."""
    from reprolab.stages import report

    base = dict.fromkeys([*report.COLUMNS, *report.EXTRA], "")
    base.update(
        method="alpha",
        precision="fp32",
        profile=profile,
        paper="0.9",
        n=2,
        detectable="0.05",
        effect="n/a",
        central=False,
        per_task=[],
        headline=True,
        timed=False,
        experiment_id="7",
        run_id="r1",
        statement="Alpha beats the baseline",
        paper_setting="CIFAR-10",
        detail="mean gain > 0",
    )
    rows = [
        {**base, "claim": "beats", "measured": "+0.9100", "verdict": "reproduced"},
        {**base, "claim": "holds", "measured": "+0.0100", "verdict": "inconclusive"},
    ]
    return pd.DataFrame(rows, columns=[*report.COLUMNS, *report.EXTRA])


def _overview(profile: str) -> pd.DataFrame:
    from reprolab.stages.report import VERDICT_MEANING

    counts = dict.fromkeys(VERDICT_MEANING, 0)
    row = {
        "method": "alpha",
        "title": "Alpha",
        "profile": profile,
        "seeds": "0, 1",
        **counts,
        "reproduced": 1,
        "inconclusive": 1,
        "changed": [],
        "compute_s": 1.0,
        "experiment_id": "7",
    }
    return pd.DataFrame([row])


@pytest.mark.parametrize("explicit", [True, False])
def test_claims_html_of_a_smoke_profile_says_it_is_no_evidence(tmp_path, explicit):
    import html

    from reprolab.stages import report

    kwargs = {"profile": "smoke"} if explicit else {}  # else read from the rows
    page = report.to_html(_table("smoke"), {}, tmp_path, "", _overview("smoke"), **kwargs)
    text = html.unescape(page)
    # the profile line under the title, as claims.md has it
    assert re.search(rf"Profile: <b>smoke</b> <span class=\"smoke\">\({NOTE}\)</span>", text)
    assert text.find(NOTE) < text.find("<h2>Summary")
    # the summary's profile cell and every verdict cell
    assert '<td>smoke <small class="smoke">(machinery check, not evidence)</small></td>' in text
    for verdict in ("reproduced", "inconclusive"):
        cell = re.search(
            rf'<td class="{verdict}" title="[^"]*"><b>[^<]*</b>([^<]*<small[^>]*>[^<]*)', text
        )
        assert cell and "(smoke)" in cell.group(1), verdict


def test_claims_html_of_the_paper_profile_has_no_smoke_marker(tmp_path):
    from reprolab.stages import report

    page = report.to_html(_table("paper"), {}, tmp_path, "", _overview("paper"), profile="paper")
    assert "Profile: <b>paper</b></p>" in page
    assert NOTE not in page and "(smoke)" not in page and "machinery" not in page


def test_markdown_view_keeps_its_smoke_line(tmp_path):
    from reprolab.stages import report

    text = report.to_markdown(_table("smoke"), {}, "smoke", tmp_path, _overview("smoke"))
    assert f"Profile: **smoke** ({NOTE})\n" in text
    assert report.SMOKE_NOTE == NOTE


def test_report_summary_line_says_smoke_is_no_evidence():
    from reprolab.stages.report import summary_line

    smoke = summary_line(4, Path("data/reports/claims.md"), "smoke")
    assert smoke.startswith("report: 4 claim rows -> data/reports/claims.md")
    assert NOTE in smoke
    assert NOTE not in summary_line(4, Path("x.md"), "paper")


def _claims(profile: str) -> list[dict]:
    """Entries of claims.json (what the flow publishes)."""
    measured = {"value": 0.91, "ci_low": 0.89, "ci_high": 0.93, "n": 2}
    return [
        {
            "id": "beats",
            "precision": "fp32",
            "verdict": "reproduced",
            "profile": profile,
            "central": True,
            "headline": True,
            "measured": measured,
            "paper_value": "0.9",
        },
        {
            "id": "beats",
            "precision": "int8",
            "verdict": "not_reproduced",
            "profile": profile,
            "headline": False,
            "measured": measured,
            "paper_value": "0.9",
        },
    ]


def test_prefect_claims_artifact_marks_every_smoke_verdict():
    from tasks.stages import SMOKE_BANNER, compact_markdown

    text = compact_markdown({"alpha": _claims("smoke")}, "data/reports/claims.html")
    lines = text.splitlines()
    # a banner before anything else the reader sees
    assert lines[2] == SMOKE_BANNER and "not evidence" in SMOKE_BANNER
    rows = [line for line in lines if line.startswith("| beats")]
    assert len(rows) == 2
    assert "| **reproduced (smoke)** |" in rows[0]
    assert "| **not reproduced (smoke)** |" in rows[1]
    # the table's header is the one readers (and the Prefect smoke test) know
    assert "| claim | precision | verdict | measured [interval] | paper |" in text

    paper = compact_markdown({"alpha": _claims("paper")}, "data/reports/claims.html")
    assert SMOKE_BANNER not in paper and "(smoke)" not in paper
    assert "| **reproduced** |" in paper


def test_prefect_table_artifact_and_log_lines_mark_smoke_verdicts():
    from tasks.stages import CLAIM_COLUMNS, table_rows, verdict_lines

    table = pd.DataFrame(
        [
            {**dict.fromkeys(CLAIM_COLUMNS, ""), "verdict": "reproduced", "profile": "smoke"},
            {**dict.fromkeys(CLAIM_COLUMNS, ""), "verdict": "reproduced", "profile": "paper"},
        ]
    )
    rows = table_rows(table)
    assert [r["verdict"] for r in rows] == ["reproduced (smoke)", "reproduced"]
    assert [r["profile"] for r in rows] == ["smoke", "paper"]  # the column stays

    (line,) = verdict_lines(_claims("smoke"))  # the headline claim only
    assert line.startswith("beats (central) [fp32]: REPRODUCED (smoke), measured ")
    (line,) = verdict_lines(_claims("paper"))
    assert line.startswith("beats (central) [fp32]: REPRODUCED, measured ")


def test_mlflow_profile_and_evidence_tags():
    from reprolab.core.tracking import profile_tags

    assert profile_tags("smoke") == {
        "profile": "smoke",
        "evidence": "smoke: machinery check, not evidence",
    }
    assert profile_tags("paper") == {"profile": "paper"}
