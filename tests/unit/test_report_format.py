"""Numbers in the claims report: a claim that was not tested shows 'n/a', never a bound."""

from __future__ import annotations

import math
from pathlib import Path

from reprolab.stages.report import _fmt, _interval


def test_untested_values_read_not_available():
    assert _fmt(float("nan")) == "n/a" and _fmt(None) == "n/a"


def test_unbounded_interval_ends_keep_their_sign():
    assert _fmt(-math.inf) == "-inf" and _fmt(math.inf) == "inf"


def test_finite_values_are_signed():
    assert _fmt(0.25) == "+0.2500" and _fmt(-0.5) == "-0.5000" and _fmt(1234.5) == "1234"

    # a tiny non-zero value is not printed as zero
    assert _fmt(1.878e-06) == "+1.88e-06" and _fmt(0.0) == "+0.0000"


def test_exact_and_exhaustive_checks_do_not_pose_as_intervals():
    seeded = {"ci_low": 0.1, "ci_high": 0.3, "n": 5}
    assert _interval(seeded) == "[+0.1000, +0.3000]"
    one = {"ci_low": 6.4272, "ci_high": 6.4272, "n": 1, "seed_free": True}
    assert _interval(one) == "exact (deterministic)"
    two = {"ci_low": 2.0046, "ci_high": 2.011, "n": 2, "seed_free": True, "test": "exact"}
    assert _interval(two) == "exact, range [+2.0046, +2.0110]"
    every = {"ci_low": 0.0, "ci_high": 0.0, "n": 4, "test": "exhaustive"}
    assert _interval(every) == "exhaustive: every unit, range [+0.0000, +0.0000]"


def test_summary_shows_the_seeds_the_units_really_used(tmp_path):
    import pandas as pd

    from reprolab.paths import MethodPaths
    from reprolab.stages.report import seeds_used

    folder = MethodPaths(tmp_path, "m").eval
    folder.mkdir(parents=True)
    assert seeds_used(tmp_path, "m", (0, 1, 2)) == "0, 1, 2"  # not evaluated yet
    rows = [{"task": "t", "variant": "v", "seed": s, "metric": "acc", "value": 1.0} for s in (0, 1)]
    pd.DataFrame(rows).to_csv(folder / "metrics.csv", index=False)
    assert seeds_used(tmp_path, "m", (0, 1, 2, 3, 4)) == "0, 1 (of 0, 1, 2, 3, 4)"
    assert seeds_used(tmp_path, "m", (0, 1)) == "0, 1"
    pd.DataFrame([{**rows[0], "seed": None}]).to_csv(folder / "metrics.csv", index=False)
    assert seeds_used(tmp_path, "m", (0, 1)) == "none (seed-free)"


# --------------------------------------------------------------- the rendered views


def _claims_table():
    """Four hand-built claim rows of two methods (as ``report.collect`` makes them)."""
    import pandas as pd

    from reprolab.stages import report

    base = dict.fromkeys([*report.COLUMNS, *report.EXTRA], "")
    base.update(
        precision="fp32",
        profile="smoke",
        n=5,
        detectable="0.05",
        effect="n/a",
        central=False,
        per_task=[],
        headline=True,
        timed=False,
        experiment_id="7",
        run_id="r1",
        run="http://ui/#/experiments/7/runs/r1?a=1&b=2",
    )
    statement = "Alpha beats <script>alert('x')</script> & the baseline"
    rows = [
        {
            **base,
            "method": "alpha",
            "claim": "beats_baseline",
            "paper": 0.9,
            "measured": "+0.9100",
            "interval": "[+0.8900, +0.9300]",
            "verdict": "reproduced",
            "statement": statement,
            "paper_setting": "CIFAR-10, 5 seeds",
            "detail": "mean gain > 0",
            "central": True,
            "paper_source": "Table 2",
            "effect": "0.01",
            "evidence": "decided in round 1 of 2",
        },
        {
            **base,
            "method": "alpha",
            "claim": "beats_baseline",
            "precision": "int8",
            "paper": 0.9,
            "measured": "+0.5000",
            "interval": "[+0.4000, +0.6000]",
            "verdict": "not_reproduced",
            "statement": statement,
            "paper_setting": "CIFAR-10, 5 seeds",
            "detail": "mean gain > 0",
            "headline": False,
        },
        {
            **base,
            "method": "beta",
            "claim": "invariant",
            "paper": "0",
            "measured": "+0.0000",
            "interval": "exact (deterministic)",
            "n": 1,
            "verdict": "inconclusive",
            "statement": "Beta's output is invariant",
            "paper_setting": "MNIST",
            "detail": "max error = 0",
            "rule": "n < 3 (n = 1)",
            "check_verdict": "reproduced",
            "flags": "identical_replicates",
            "per_task": [
                {
                    "task": "t1",
                    "baseline": "b",
                    "outcome": "better",
                    "mean": 0.03,
                    "ci_low": 0.01,
                    "ci_high": 0.05,
                    "n": 4,
                }
            ],
        },
        {
            **base,
            "method": "beta",
            "claim": "every_unit",
            "paper": "all",
            "measured": "+0.0000",
            "interval": "exhaustive: every unit, range [+0.0000, +0.0000]",
            "n": "",
            "verdict": "out_of_reach",
            "statement": "Every unit shows it",
            "paper_setting": "-",
            "detail": "needs a GPU",
        },
    ]
    return pd.DataFrame(rows, columns=[*report.COLUMNS, *report.EXTRA])


def _overview():
    """``report.summarize``'s table for :func:`_claims_table`, by hand."""
    import pandas as pd

    from reprolab.stages.report import VERDICT_MEANING

    counts = dict.fromkeys(VERDICT_MEANING, 0)
    return pd.DataFrame(
        [
            {
                "method": "alpha",
                "title": "Alpha <b>",
                "profile": "smoke",
                "seeds": "0, 1",
                **counts,
                "reproduced": 1,
                "changed": ["beats_baseline: reproduced -> not_reproduced at int8"],
                "compute_s": 12.34,
                "experiment_id": "7",
            },
            {
                "method": "beta",
                "title": "Beta",
                "profile": "smoke",
                "seeds": "none (seed-free)",
                **counts,
                "inconclusive": 1,
                "out_of_reach": 1,
                "changed": [],
                "compute_s": None,
                "experiment_id": "8",
            },
        ]
    )


#: to_markdown's text for _claims_table() without run links, as the string-built report
#: wrote it before the views moved to templates/ (RULES, VERDICTS and NOTE stand for
#: EVIDENCE_RULES, VERDICT_MEANING and CLAIMS_NOTE)
GOLDEN_MARKDOWN = """\
# Claims: paper vs measured

Profile: **smoke** (smoke-level verdicts check the machinery; they are not evidence)

## Summary (verdicts at fp32; a claim about a quantization scheme at that scheme)

| method | paper | profile | seeds | reproduced | reproduced smaller | no effect | not reproduced | inconclusive | premise failed | out of reach | changes under quantization | compute |
|---|---|---|---|---|---|---|---|---|---|---|---|---|
| [alpha](#claims-alpha) | Alpha <b> | smoke | 0, 1 | 1 | 0 | 0 | 0 | 0 | 0 | 0 | beats_baseline: reproduced -> not_reproduced at int8 | 12.3 s |
| [beta](#claims-beta) | Beta | smoke | none (seed-free) | 0 | 0 | 0 | 0 | 1 | 0 | 1 | none | n/a |

**Evidence rules.** RULES

Verdicts: VERDICTS.

## Claims

NOTE The paper's setting is in the footnote.

| method | claim | precision | the claim | paper | ours | detectable | verdict |
|---|---|---|---|---|---|---|---|
| alpha | beats_baseline | fp32 | <a id="claims-alpha"></a>**Central claim.** Alpha beats <script>alert('x')</script> & the baseline | 0.9 (Table 2)[^alpha-beats_baseline] | +0.9100 [+0.8900, +0.9300], n=5 | 0.05 (smallest effect that matters 0.01) | **reproduced (decided in round 1 of 2)** |
| alpha | beats_baseline | int8 | Alpha beats <script>alert('x')</script> & the baseline | 0.9[^alpha-beats_baseline] | +0.5000 [+0.4000, +0.6000], n=5 | 0.05 | **not_reproduced** |
| beta | invariant | fp32 | <a id="claims-beta"></a>Beta's output is invariant | 0[^beta-invariant] | +0.0000 exact (deterministic), n=1 | 0.05 | **inconclusive (n < 3 (n = 1); the check alone: reproduced; identical replicates)** |
| beta | every_unit | fp32 | Every unit shows it | all[^beta-every_unit] | +0.0000 exhaustive: every unit, range [+0.0000, +0.0000] | 0.05 | **out_of_reach** |

### Per-task outcomes of the checks over tasks

- beta invariant [fp32]: t1 vs b: better (+0.0300 [+0.0100, +0.0500], n=4)

[^alpha-beats_baseline]: Paper: CIFAR-10, 5 seeds. Check: mean gain > 0
[^beta-invariant]: Paper: MNIST. Check: max error = 0
[^beta-every_unit]: Paper: -. Check: needs a GPU

## alpha: Alpha

![acc](plots/acc.png)
"""


def _figures(out):
    return {"alpha: Alpha": [out / "plots" / "acc.png"], "beta: Beta": []}


def test_markdown_view_keeps_its_text(tmp_path):
    from reprolab.evidence.judging.claims import EVIDENCE_RULES
    from reprolab.stages import report

    text = report.to_markdown(
        _claims_table(), _figures(tmp_path), "smoke", tmp_path, _overview(), links=False
    )
    verdicts = "; ".join(f"*{k}*: {v}" for k, v in report.VERDICT_MEANING.items())
    expected = (
        GOLDEN_MARKDOWN.replace("RULES", EVIDENCE_RULES)
        .replace("VERDICTS", verdicts)
        .replace("NOTE", report.CLAIMS_NOTE)
    )
    assert text == expected


def test_markdown_rows_carry_each_claims_verdict_and_run_link(tmp_path, monkeypatch):
    from reprolab.core.tracking import runs_view_url
    from reprolab.stages import report

    monkeypatch.setenv("REPROLAB_MLFLOW_UI", "http://ui")
    table = _claims_table()
    text = report.to_markdown(table, {}, "paper", tmp_path, _overview())
    assert "Profile: **paper**\n" in text
    assert f"| [mlflow](http://ui/{runs_view_url('7')}) |\n" in text
    rows = [line for line in text.splitlines() if line.startswith(("| alpha |", "| beta |"))]
    assert len(rows) == len(table)
    for line, claim in zip(rows, table.itertuples(), strict=True):
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        assert (cells[0], cells[1].split()[0], cells[2]) == (
            claim.method,
            claim.claim,
            claim.precision,
        )
        assert cells[7].startswith(f"**{claim.verdict}"), line
        assert cells[8] == f"[mlflow]({claim.run})", line
    # the quantization section follows the claims, after a blank line; none without rows
    quant = report.quant_markdown(_quant_table())
    assert quant.startswith("\n## Quantization: size, coverage, error and latency\n")
    assert (
        "| alpha | int8<x> | 300 | 0.3 | 99.9% | BatchNorm2d (64) | 0.0100 | no kernel |\n" in quant
    )
    assert report.quant_markdown(_quant_table().iloc[0:0]) == ""


class _TagBalance:
    """Checks that every element an HTML document opens is closed, in order."""

    VOID = {"meta", "br", "img", "hr", "input", "link", "wbr", "col", "area", "source"}

    def __init__(self, text: str):
        from html.parser import HTMLParser

        self.stack: list[str] = []
        self.errors: list[str] = []
        parser = HTMLParser(convert_charrefs=True)
        parser.handle_starttag = self._start
        parser.handle_endtag = self._end
        parser.feed(text)
        parser.close()

    def _start(self, tag, attrs):
        if tag not in self.VOID:
            self.stack.append(tag)

    def _end(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()


def _quant_table():
    import pandas as pd

    from reprolab.stages import report

    return pd.DataFrame(
        [
            ["alpha", "fp32", 1000, 1.0, None, "", None, 2.0, "measured"],
            ["alpha", "int8<x>", 300, 0.3, 0.9994, "BatchNorm2d (64)", 0.01, None, "no kernel"],
        ],
        columns=report.QUANT_COLUMNS,
    )


def test_html_view_is_well_formed_and_escaped_by_the_template(tmp_path):
    import html
    import re

    from reprolab.stages import report

    quant = report.quant_html(_quant_table())
    page = report.to_html(_claims_table(), _figures(tmp_path), tmp_path, quant, _overview())
    balance = _TagBalance(page)
    assert not balance.errors and not balance.stack, (balance.errors, balance.stack)
    # a statement's markup is text, escaped by Jinja2's autoescape, never markup
    assert "<script>" not in page and "&lt;script&gt;alert(" in page
    assert "Alpha &lt;b&gt;" in page and "&amp; the baseline" in page
    assert "?a=1&amp;b=2" in page  # the run link, escaped in its attribute
    assert "<td>int8&lt;x&gt;</td>" in quant and "<td>99.9%</td><td>BatchNorm2d (64)</td>" in quant
    # what the tests and the browser screenshots read
    for verdict in ("reproduced", "not_reproduced", "inconclusive", "out_of_reach"):
        assert re.search(rf'<td class="{verdict}" title="[^"]+"><b>{verdict}', page), verdict
        assert f'<span class="{verdict}">{verdict}</span>' in page  # the legend
    assert page.count('id="claims-alpha"') == 1 and page.count('id="claims-beta"') == 1
    assert '<a href="#claims-alpha">alpha</a>' in page
    assert page.count("<details><summary>details</summary>") == 4
    assert "<b>Per task:</b> t1 vs b: better" in page
    assert '<img src="plots/acc.png"' in page
    # each method's section: its heading, its claims (its forest plot first when drawn),
    # then its own figures, before the next method's section
    forest = tmp_path / "plots" / "alpha_claims_forest.png"
    with_forest = {"alpha: Alpha": [forest, tmp_path / "plots" / "acc.png"], "beta: Beta": []}
    sections = report.to_html(_claims_table(), with_forest, tmp_path, quant, _overview())
    order = [
        sections.find('id="claims-alpha"'),
        sections.find('src="plots/alpha_claims_forest.png"'),
        sections.find("<td>beats_baseline</td>"),
        sections.find('id="figures-alpha"'),
        sections.find('src="plots/acc.png"'),
        sections.find('id="claims-beta"'),
        sections.find("<td>invariant</td>"),
    ]
    assert -1 not in order and order == sorted(order), order
    summary, claims = page.find("Summary"), page.find(">Claims<")
    assert 0 <= summary < claims < page.find("Quantization")
    header = re.search(r"<th>ours \(interval, n\)(.*?)</th>", page).group(1)
    # the claims table's header explains 'exact' and 'exhaustive' as the Markdown does
    assert "'exact' marks a deterministic value" in html.unescape(header)
    assert "'exhaustive' a property every unit must show" in html.unescape(header)
    assert "'exact' marks a deterministic value" in report.CLAIMS_NOTE
    # without run links (write_views), and with no claims at all
    bare = report.to_html(_claims_table(), {}, tmp_path, "", _overview(), links=False)
    assert "mlflow" not in bare and "<th>runs</th>" not in bare
    empty = report.to_html(_claims_table().iloc[0:0], {}, tmp_path)
    assert not _TagBalance(empty).stack and "<h2>Claims</h2>" in empty


def test_templates_ship_with_the_package():
    import tomllib

    from reprolab.stages import report

    names = {p.name for p in report.TEMPLATES.glob("*.j2")}
    assert {"claims.md.j2", "claims.html.j2", "quant.md.j2", "quant.html.j2"} <= names
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert "templates/*.j2" in pyproject["tool"]["setuptools"]["package-data"]["reprolab.stages"]


def test_changes_under_quantization_compare_each_precision_with_the_claim_alone(tmp_path):
    """The family rule (central first, then Holm) reads only the headline fp32 claims: a
    claim it left untested at fp32 is compared across precisions by its verdict alone,
    so a closed family is not reported as a change under quantization."""
    import pandas as pd

    from reprolab.stages import report

    def table(fp32_alone):
        base = dict.fromkeys([*report.COLUMNS, *report.EXTRA], "")
        fp32 = {
            **base,
            "method": "lift_gs",
            "claim": "c",
            "precision": "fp32",
            "verdict": "inconclusive",  # the central claim undecided: not tested
            "verdict_alone": fp32_alone,
            "headline": True,
        }
        int8 = {**fp32, "precision": "int8_dynamic", "verdict": "not_reproduced"}
        int8.update(verdict_alone="not_reproduced", headline=False)
        return pd.DataFrame([fp32, int8], columns=[*report.COLUMNS, *report.EXTRA])

    same = report.summarize(tmp_path, table("not_reproduced"), "paper", (0,))
    assert list(same.changed) == [[]]
    assert same.inconclusive.tolist() == [1]  # the headline count keeps the family's verdict
    moved = report.summarize(tmp_path, table("reproduced"), "paper", (0,))
    assert list(moved.changed) == [["c: reproduced -> not_reproduced at int8_dynamic"]]


def test_the_family_rule_keeps_each_claims_verdict_alone():
    from reprolab.evidence.judging.claims import adjust_family

    def result(cid, verdict, central=False):
        return {"id": cid, "headline": True, "central": central, "verdict": verdict}

    results = [
        {**result("c", "inconclusive", central=True), "measured": {}},
        {**result("s", "not_reproduced"), "measured": {}},
    ]
    out = adjust_family(results, lambda r, a: r, 0.05)
    assert out[1]["verdict"] == "inconclusive"
    assert [r["measured"]["family"]["verdict_alone"] for r in out] == [
        "inconclusive",
        "not_reproduced",
    ]
