"""report: one row per claim of every method -> data/reports/claims.{md,csv,html}.

Each row carries the paper's number, the measured value with its 95% interval, the
verdict, the profile and (in the .md/.html views) a link to the MLflow run that
produced it. claims.csv, quantization.csv and summary.json are versioned by DVC and
hash the same on a rerun; the views also show run links and measured latency, read from
data/runtime/, and are rewritten on every run.

This module collects the tables (``collect``, ``collect_quantization``, ``summarize``);
the views are rendered from the Jinja2 templates in ``templates/`` (``claims.md.j2``,
``quant.md.j2``, ``claims.html.j2`` and ``quant.html.j2``, the HTML autoescaped).
"""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path

import jinja2
import pandas as pd
from markupsafe import Markup

from reprolab import config, registry
from reprolab.contract import is_runtime_metric, seed_ranges
from reprolab.core import io
from reprolab.core.tracking import (
    SMOKE,
    load_env,
    log,
    open_tracker,
    run_url,
    runs_view_url,
)
from reprolab.evidence.judging import claims as core_claims
from reprolab.paths import MethodPaths, reports_dir
from reprolab.stages.runtime import machine_seconds

COLUMNS = [
    "method",
    "claim",
    "precision",
    "paper",
    "measured",
    "interval",
    "verdict",
    "profile",
    "run",
]
#: what each claim row carries besides COLUMNS (the CSV keeps CSV_EXTRA)
CSV_EXTRA = [
    "statement",
    "paper_setting",
    "n",
    "detectable",
    "effect",
    "central",
    "paper_source",
    "evidence",
    "changed",
    "check_verdict",
    "rule",
    "flags",
    "detail",
    "headline",
]
EXTRA = [*CSV_EXTRA, "per_task", "run_id", "experiment_id", "timed", "verdict_alone"]
VERDICT_MEANING = {
    "reproduced": "the interval (at the look of the sequential plan) lies wholly on the "
    "paper's side of the bound, with n >= 3",
    "reproduced_smaller": "the interval clears the bound but lies wholly below the paper's "
    "effect (or the smallest effect that matters where the paper gives no number)",
    "no_effect": "the interval holds the bound and lies within the smallest effect that "
    "matters of it (two one-sided tests at the look's level)",
    "not_reproduced": "the interval lies wholly on the other side, with n >= 3",
    "inconclusive": "the interval straddles the bound, or the evidence rules forbid a decisive"
    " verdict (the reason is given)",
    "premise_failed": "not tested: the premise registered with the claim failed on the run's "
    "seeds (what the check alone said is given)",
    "out_of_reach": "this code cannot test the claim at any affordable size on this machine;"
    " what would test it is given",
}


#: how to read the claims table's value columns (both the Markdown and the HTML view)
CLAIMS_NOTE = (
    "One line per claim and precision: ours is the measured value, its interval (read at"
    " the look of the sequential plan: 95% for one look, wider at earlier looks) and"
    " n (the replicates the verdict rests on); 'exact' marks a deterministic value"
    " compared as it is, 'exhaustive' a property every unit must show; detectable is the"
    " interval's half-width, the smallest effect the test could see."
)
#: what a smoke-profile verdict is worth, said wherever one is shown (claims.md's and
#: claims.html's profile line, the summary's profile cells, the log's summary line)
SMOKE_NOTE = "smoke-level verdicts check the machinery; they are not evidence"
#: the same, short, under the HTML claims table's "ours" column header
OURS_NOTE = "'exact' marks a deterministic value, 'exhaustive' a property every unit must show"


def run(root: Path) -> dict:
    project = config.load(root / "params.yaml")
    out = reports_dir(root)
    rows, figures = collect(root, project.slugs, forests=out / "plots")
    load_env(root)  # REPROLAB_MLFLOW_UI (the address run links point to) is set there
    ui = os.environ.get("REPROLAB_MLFLOW_UI", "http://127.0.0.1:5000")
    table = pd.DataFrame(rows, columns=[*COLUMNS, *EXTRA])
    stable = table[~table.timed.astype(bool)] if len(table) else table
    if not table.empty:
        table["run"] = [
            f"{ui}/{run_url(e, r)}" for e, r in zip(table.experiment_id, table.run_id, strict=True)
        ]
    quant_table = collect_quantization(root, project.slugs)
    overview = summarize(root, table, project.profile, project.seeds)
    markdown = to_markdown(table, figures, project.profile, out, overview) + quant_markdown(
        quant_table
    )
    out.mkdir(parents=True, exist_ok=True)
    # The CSVs and summary.json are the versioned results (dvc.yaml's outs): nothing in
    # them changes from run to run. claims.md/.html are views that add what does
    # (MLflow run links, measured latency), so they are written here but not versioned.
    with io.atomic_path(out / "quantization.csv") as tmp:
        quant_table.drop(columns=["latency_ms", "latency"]).to_csv(tmp, index=False)
    with io.atomic_path(out / "claims.csv") as tmp:
        # claims on wall time are in the views only: their values differ on every run
        stable[[c for c in COLUMNS if c != "run"] + CSV_EXTRA].to_csv(tmp, index=False)
    io.write_text(out / "claims.md", markdown)
    io.write_text(
        out / "claims.html",
        to_html(table, figures, out, quant_html(quant_table), overview, profile=project.profile),
    )
    # summary.json is versioned too: verdicts of claims on wall time are left out of it
    counts = (
        stable[stable.headline.astype(bool)].verdict.value_counts().to_dict() if len(table) else {}
    )
    io.write_json(
        out / "summary.json",
        {
            "profile": project.profile,
            # the claims of claims.csv (and of the Prefect table); those on wall time are
            # counted apart: they are in claims.md and claims.html only
            "claims": len(stable),
            "claims_on_wall_time": len(table) - len(stable),
            "verdicts": counts,
        },
    )

    tracker = open_tracker(
        root,
        "reprolab-report",
        "report",
        project.profile,
        "The claims report: every method's verdicts, next to the papers' numbers",
    )
    tracker.start(
        {
            "profile": project.profile,
            "methods": sorted(table.method.unique()) if len(table) else [],
        },
        chain=False,
    )
    try:
        tracker.log_metrics(tracker.run_id, {f"verdicts.{k}": float(v) for k, v in counts.items()})
        for name in ("claims.md", "claims.csv", "claims.html", "quantization.csv"):
            tracker.log_artifact(tracker.run_id, out / name)
    finally:
        tracker.finish(True)
    log(summary_line(len(table), out / "claims.md", project.profile))
    return {
        "markdown": markdown,
        "rows": table[COLUMNS].to_dict("records"),
        "path": str(out / "claims.md"),
    }


def summary_line(rows: int, path: Path, profile: str) -> str:
    """The report's closing log line; on the smoke profile it says what the verdicts are
    worth."""
    note = f" ({SMOKE} profile: {SMOKE_NOTE})" if profile == SMOKE else f" ({profile} profile)"
    return f"report: {rows} claim rows -> {path}{note}"


def forest_name(slug: str) -> str:
    return f"{slug}_claims_forest.png"


def collect(
    root: Path, slugs: list[str], forests: Path | None = None
) -> tuple[list[list], dict[str, list[Path]]]:
    """The claims table's rows and each method's figures. With ``forests`` (a folder),
    each method's figures start with its claims forest plot (every claim's interval
    against its bound, the paper's value marked), drawn there."""
    rows, figures = [], {}
    for slug in slugs:
        folder = MethodPaths(root, slug).eval
        if not (folder / "claims.json").is_file():
            continue
        spec = registry.get(slug)
        ids = runtime_info(root, slug)
        timed = MethodPaths(root, slug).runtime / "claims.json"
        amended = _amendments(root, slug)
        results = io.read_json(folder / "claims.json")
        results += io.read_json(timed) if timed.is_file() else []  # claims on wall time
        for c in results:
            m = c["measured"]
            n = m.get("n", m.get("n_tasks"))
            rows.append(
                [
                    slug,
                    c["id"],
                    c["precision"],
                    c["paper_value"],
                    _fmt(m["value"]),
                    _interval(m),
                    c["verdict"],
                    c["profile"],
                    "",
                    c["statement"],
                    c["paper_setting"],
                    "" if n is None else int(n),
                    _magnitude(m.get("detectable")),
                    _magnitude(c.get("effect")),
                    bool(c.get("central", False)),
                    c.get("paper_source", ""),
                    _evidence_text(c),
                    amended.get(c["id"], ("", ""))[0],
                    m.get("check_verdict", ""),
                    m.get("rule", ""),
                    " ".join(m.get("flags", [])),
                    " ".join(
                        filter(None, [m.get("summary", ""), amended.get(c["id"], ("", ""))[1]])
                    ),
                    bool(c.get("headline", c["precision"] == "fp32")),
                    m.get("per_task", []),
                    ids.get("mlflow_run_id", ""),
                    ids.get("mlflow_experiment_id", ""),
                    is_runtime_metric(c["metric"]),
                    (m.get("family") or {}).get("verdict_alone", c["verdict"]),
                ]
            )
        figures[f"{slug}: {spec.title}"] = sorted((folder / "plots").glob("*.png")) + sorted(
            (MethodPaths(root, slug).runtime / "plots").glob("*.png")  # wall-clock figures
        )
        if forests is not None:
            from reprolab.core.plots import claims_forest  # matplotlib: only when drawing

            forests.mkdir(parents=True, exist_ok=True)
            drawn = claims_forest(
                results,
                forests / forest_name(slug),
                f"{slug}: every claim's interval against its bound",
            )
            if drawn is not None:
                figures[f"{slug}: {spec.title}"].insert(0, drawn)
    return rows, figures


def _amendments(root: Path, slug: str) -> dict[str, tuple[str, str]]:
    """Per claim, from the preregistration ledger (docs/results/ledger/): a short mark
    ('amended 3 times in the ledger, last 2026-12-05: effect, config') and the full
    record (each amendment's date, reason, old and new values) for the details.

    A report shows the results of the definitions in force (a definition or config edit
    reruns evaluate), so every amendment it lists came before its results; whether the
    committed results predate an amendment is the scoreboard's "changed after results"."""
    from reprolab.evidence import ledger

    out = {}
    for claim, entries in ledger.amendments(root, slug).items():
        parts = []
        for e in entries:
            fields = "; ".join(
                f"{k}: {_short(v.get('old'))} -> {_short(v.get('new'))}"
                for k, v in sorted((e.get("changed") or {}).items())
            )
            parts.append(f"{e['date'][:10]} ({_short(e.get('reason', ''), 160)}): {fields}")
        last = entries[-1]
        mark = (
            f"amended {len(entries)} time(s) in the ledger before these results, last "
            f"{last['date'][:10]} ({', '.join(sorted(last.get('changed') or {}))})"
        )
        out[claim] = (mark, "Ledger amendments: " + " | ".join(parts))
    return out


def _short(value, limit: int = 80) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _evidence_text(c: dict) -> str:
    """How the sequential rounds ended for a claim: the round it was decided in, or why
    it is undecided and what it would need."""
    ev = c.get("evidence") or {}
    m = c["measured"]
    seq = m.get("sequential") or {}
    seeds = m.get("seeds") or []
    used = f"seeds {seed_ranges(seeds)}" if seeds else ""
    look = f"look {seq['look']} of the plan, {used}" if seq else used
    if not ev:
        return look
    if ev.get("decided_round"):
        return f"decided in round {ev['decided_round']} of {ev['rounds']}" + (
            f", {look}" if look else ""
        )
    if c["verdict"] != "inconclusive":
        return look
    text = f"undecided after {ev['rounds']} round(s)"
    if ev.get("why"):
        text += f": {ev['why']}"
    need = ev.get("needs_seeds")
    reading = core_claims.undecided_reading(c.get("measured") or {}, c.get("effect"))
    if reading:
        text += "; " + reading
    elif need and need > len(seeds):
        text += f"; needs ~{need} seeds"
        if isinstance(ev.get("needs_minutes"), int | float):
            text += f" (~{ev['needs_minutes']:.0f} more min here)"
    elif need:  # the pooled interval's estimate is met: the test over tasks is not
        text += (
            f"; the pooled interval needed ~{need} seeds and has {len(seeds)}: what stays "
            "undecided is the test over tasks"
        )
    return text


def runtime_info(root: Path, slug: str) -> dict:
    """The latest evaluate run's MLflow ids and latencies (data/runtime/<slug>/, not
    versioned: they differ on every run); empty when evaluate has not run here."""
    path = MethodPaths(root, slug).runtime / "evaluate.json"
    return io.read_json(path) if path.is_file() else {}


QUANT_COLUMNS = [
    "method",
    "precision",
    "effective_bytes",
    "x_fp32",
    "coverage",
    "full_precision",
    "layer_error_mean",
    "latency_ms",
    "latency",
]


def collect_quantization(root: Path, slugs: list[str]) -> pd.DataFrame:
    """Per method and precision: effective bytes, coverage (the share of parameters the
    scheme really quantized, and the module types it left at full precision, with their
    parameter counts), mean per-layer output error and latency (only where a real
    low-bit kernel runs), from each method's metrics.json."""
    rows = []
    for slug in slugs:
        path = MethodPaths(root, slug).eval / "metrics.json"
        if not path.is_file():
            continue
        efficiency = io.read_json(path).get("efficiency", {})
        latency = runtime_info(root, slug).get("latency_ms", {})
        base = efficiency.get("fp32", {}).get("effective_bytes")
        for precision, e in efficiency.items():
            eff = e.get("effective_bytes")
            rows.append(
                [
                    slug,
                    precision,
                    eff,
                    round(eff / base, 4) if eff and base else None,
                    e.get("coverage"),
                    _kept(e.get("full_precision")),
                    e.get("layer_error_mean"),
                    latency.get(precision),
                    "measured" if latency.get(precision) is not None else e.get("latency_note", ""),
                ]
            )
    return pd.DataFrame(rows, columns=QUANT_COLUMNS)


def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _share(x) -> str:
    """A coverage share as a percentage ('' for fp32, which has none)."""
    return "" if _missing(x) else f"{100 * x:.1f}%"


def _kept(full_precision: dict | None) -> str:
    """'BatchNorm2d (96), ...': module types left at full precision, or 'none'."""
    if full_precision is None:
        return ""
    if not full_precision:
        return "none"
    return ", ".join(f"{kind} ({n:,})" for kind, n in full_precision.items())


def _int(x) -> str:
    return "n/a" if x is None or pd.isna(x) else f"{int(x):,}"


def _magnitude(x: float | None) -> str:
    """An unsigned size (an interval's half-width): 'n/a', 'inf' or 4 significant digits."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return "inf" if math.isinf(x) else f"{x:.4g}"


def _fmt(x: float) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"  # not measured (a claim that was not tested)
    if isinstance(x, float) and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x != 0 and abs(x) < 1e-3:
        return f"{x:+.2e}"  # e.g. an invariance error of 1.9e-06, not "+0.0000"
    return f"{x:+.4f}" if abs(x) < 10 else f"{x:.4g}"


def _interval(m: dict) -> str:
    """The interval column: a 95% interval, or what stands in its place where the
    evidence rules compare exactly (a deterministic value has no interval; an
    exhaustive check counts every unit)."""
    low, high = _fmt(m["ci_low"]), _fmt(m["ci_high"])
    n = m.get("n", m.get("n_tasks"))
    if m.get("test") == "exact" or (m.get("seed_free") and n in (None, 1)):
        return "exact (deterministic)" if low == high else f"exact, range [{low}, {high}]"
    if m.get("test") == "exhaustive":
        return f"exhaustive: every unit, range [{low}, {high}]"
    return f"[{low}, {high}]"


#: a measured value and its interval as the report prints them (the Prefect artifacts too)
format_value, format_interval = _fmt, _interval


def write_views(root: Path, slugs: list[str], out: Path) -> None:
    """claims.md and claims.html for ``slugs`` of the project at ``root`` into ``out``,
    without run links (for results kept outside the project, e.g. docs/results by
    python -m reprolab paper); figures are read from ``out/plots`` when that folder exists."""
    project = config.load(root / "params.yaml")
    rows, figures = collect(root, slugs, forests=out / "plots")
    table = pd.DataFrame(rows, columns=[*COLUMNS, *EXTRA])
    forests = {forest_name(s) for s in slugs}
    figures = {  # the copies in out/plots, each method's forest plot first
        title: [p for p in paths if p.name in forests]
        + sorted(p for p in (out / "plots").glob("*.png") if p.name not in forests)
        for title, paths in figures.items()
    }
    quant_table = collect_quantization(root, slugs)
    overview = summarize(root, table, project.profile, project.seeds)
    markdown = to_markdown(table, figures, project.profile, out, overview, links=False)
    io.write_text(out / "claims.md", markdown + quant_markdown(quant_table))
    html_view = to_html(
        table, figures, out, quant_html(quant_table), overview, links=False, profile=project.profile
    )
    io.write_text(out / "claims.html", html_view)


def summarize(
    root: Path, table: pd.DataFrame, profile: str, seeds: tuple[int, ...]
) -> pd.DataFrame:
    """One row per method: the answer first (each claim's headline verdict counted once:
    at fp32, or at the scheme a quantization claim is about; verdicts that change under
    quantization; compute time)."""
    rows = []
    for slug in dict.fromkeys(table.method) if len(table) else []:
        claims = table[table.method == slug]
        first = claims[claims.headline.astype(bool)]
        # at fp32 the verdict the claim gets by itself: the family rule (central first,
        # then Holm) reads only the headline claims, the other precisions stand alone
        by_id = first[first.precision == "fp32"].set_index("claim").verdict_alone.to_dict()
        flips: dict[tuple[str, str, str], list[str]] = {}
        for r in claims[claims.precision != "fp32"].itertuples():
            if r.claim in by_id and r.verdict != by_id[r.claim]:
                flips.setdefault((r.claim, by_id[r.claim], r.verdict), []).append(r.precision)
        changed = [
            f"{claim}: {old} -> {new} at {', '.join(schemes)}"
            for (claim, old, new), schemes in sorted(flips.items())
        ]
        counts = first.verdict.value_counts()
        rows.append(
            {
                "method": slug,
                "title": registry.get(slug).title,
                "profile": profile,
                "seeds": seeds_used(root, slug, seeds),
                **{kind: int(counts.get(kind, 0)) for kind in VERDICT_MEANING},
                "changed": changed,
                "compute_s": compute_seconds(root, slug),
                "experiment_id": str(claims.experiment_id.iloc[0]),
            }
        )
    return pd.DataFrame(rows)


def seeds_used(root: Path, slug: str, seeds: tuple[int, ...]) -> str:
    """The seeds the method's evaluated units really carry (a method may cap them, e.g.
    ``max_seeds``), with the profile's set beside them when they differ."""
    profile_seeds = ", ".join(map(str, seeds))
    path = MethodPaths(root, slug).eval / "metrics.csv"
    if not path.is_file():
        return profile_seeds
    column = pd.read_csv(path, usecols=["seed"])["seed"].dropna()
    used = sorted({int(v) for v in column})
    if not used:
        return "none (seed-free)"
    text = ", ".join(map(str, used))
    return text if set(used) == set(seeds) else f"{text} (of {profile_seeds})"


def compute_seconds(root: Path, slug: str) -> float | None:
    """The machine time of the method's latest stages (from data/runtime/; the figure a
    paper run's run.json records per round), or None where training has not run here."""
    runtime = MethodPaths(root, slug).runtime
    if not (runtime / "train.json").is_file():
        return None
    return machine_seconds(runtime)


# ----------------------------------------------------------------------------- rendering
# claims.md and claims.html are rendered from the Jinja2 templates in templates/ (the
# Markdown as it is, the HTML autoescaped); what is formatted here is handed to them
# ready to print, as values (_claim_rows, _quant_rows, _figures) or filters (_environment).

TEMPLATES = Path(__file__).with_name("templates")


@functools.cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        # *.html.j2 autoescaped, *.md.j2 not
        autoescape=jinja2.select_autoescape(["html", "html.j2"]),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["secs"] = _secs
    env.filters["runs_view"] = runs_view_url
    return env


def _render(template: str, **context) -> str:
    from reprolab.evidence.judging.claims import EVIDENCE_RULES

    return (
        _environment()
        .get_template(template)
        .render(
            evidence_rules=EVIDENCE_RULES,
            verdicts=VERDICT_MEANING,
            smoke=SMOKE,
            smoke_note=SMOKE_NOTE,
            claims_note=CLAIMS_NOTE,
            ours_note=OURS_NOTE,
            **context,
        )
    )


def _verdict_text(r) -> str:
    """'inconclusive (n < 3 (n = 2); the check alone: reproduced)' etc."""
    out = r.verdict
    notes = []
    if r.rule:
        notes.append(f"{r.rule}; the check alone: {r.check_verdict}")
    if r.flags:
        notes.append(r.flags.replace("_", " "))
    if r.evidence:
        notes.append(r.evidence)
    if r.changed:
        notes.append(r.changed)
    return out + (f" ({'; '.join(notes)})" if notes else "")


def _ours(r) -> str:
    n = "" if r.n == "" else f", n={r.n}"
    return f"{r.measured} {r.interval}{n}"


def _ui() -> str:
    """The MLflow UI address links point to (mlflow.env's REPROLAB_MLFLOW_UI)."""
    return os.environ.get("REPROLAB_MLFLOW_UI", "http://127.0.0.1:5000")


def _secs(x) -> str:
    return "n/a" if x is None or pd.isna(x) else f"{x:.1f} s"


def _per_task(per_task: list) -> str:
    """'task vs baseline: better (+0.0300 [+0.0100, +0.0500], n=4); ...' (keys a check
    does not record are left out)."""

    def one(p: dict) -> str:
        vs = f" vs {p['baseline']}" if "baseline" in p else ""
        what = p.get("outcome", "")
        value = p.get("mean", p.get("value"))
        iv = (
            f" [{_fmt(p['ci_low'])}, {_fmt(p['ci_high'])}]"
            if "ci_low" in p and "ci_high" in p
            else ""
        )
        n = f", n={p['n']}" if "n" in p else ""
        return f"{p.get('task', '?')}{vs}: {what} ({_fmt(value)}{iv}{n})"

    return "; ".join(one(p) for p in per_task)


def _claim_rows(table: pd.DataFrame) -> list[dict]:
    """The claims table's rows as the templates print them: the table's columns, plus
    ``first`` (the method's first row, which carries its ``claims-<method>`` anchor),
    ``key`` (its footnote), ``ours``, ``verdict_text``, ``meaning`` and ``per_task`` as
    text."""
    rows, seen = [], set()
    for r in table.itertuples(index=False):
        rows.append(
            {
                **r._asdict(),
                "first": r.method not in seen,
                "key": f"{r.method}-{r.claim}",
                "ours": _ours(r),
                "verdict_text": _verdict_text(r),
                "meaning": VERDICT_MEANING.get(r.verdict, ""),
                "per_task": _per_task(r.per_task) if r.per_task else "",
            }
        )
        seen.add(r.method)
    return rows


def _figures(figures: dict[str, list[Path]], out: Path) -> list[tuple[str, list[tuple[str, str]]]]:
    """Per section with figures: its title and each figure's (name, path from ``out``)."""
    return [
        (title, [(p.stem, os.path.relpath(p, out)) for p in paths])
        for title, paths in figures.items()
        if paths
    ]


def _overview_rows(overview: pd.DataFrame | None) -> list:
    return [] if overview is None else list(overview.itertuples(index=False))


def to_markdown(
    table: pd.DataFrame,
    figures: dict,
    profile: str,
    out: Path,
    overview: pd.DataFrame,
    links: bool = True,
) -> str:
    """claims.md (templates/claims.md.j2), without the quantization section."""
    claims = _claim_rows(table)
    notes: dict[str, str] = {}  # footnote key -> the paper's setting and the check
    for c in claims:
        notes.setdefault(c["key"], f"Paper: {c['paper_setting']}. Check: {c['detail']}")
    return _render(
        "claims.md.j2",
        profile=profile,
        overview=_overview_rows(overview),
        claims=claims,
        notes=notes,
        figures=_figures(figures, out),
        links=links,
        ui=_ui(),
    )


def to_html(
    table: pd.DataFrame,
    figures: dict,
    out: Path,
    quant: str = "",
    overview: pd.DataFrame | None = None,
    links: bool = True,
    profile: str | None = None,
) -> str:
    """claims.html (templates/claims.html.j2); ``quant`` is the HTML of :func:`quant_html`.
    ``profile`` (the profile line under the title) defaults to the profile(s) of the
    table's rows; a smoke profile's line, summary cells and verdicts say that smoke-level
    verdicts are no evidence."""
    if profile is None:
        seen = [*table.profile, *(overview.profile if overview is not None else [])]
        profile = ", ".join(dict.fromkeys(str(p) for p in seen if p)) or "unknown"
    return _render(
        "claims.html.j2",
        profile=profile,
        overview=_overview_rows(overview),
        claims=_claim_rows(table),
        quant=Markup(quant),  # HTML rendered (and escaped) by quant.html.j2
        figures=_figures(figures, out),
        links=links,
        ui=_ui(),
    )


def _quant_rows(table: pd.DataFrame, view: str) -> list[list[str]]:
    """The quantization table's cells as text, for the ``"md"`` or the ``"html"`` view."""
    rows = []
    for r in table.itertuples():
        if view == "md":
            err = (
                ""
                if r.layer_error_mean is None or pd.isna(r.layer_error_mean)
                else f"{r.layer_error_mean:.4f}"
            )
            lat = (
                f"{r.latency_ms:.3f}"
                if r.latency_ms is not None and not pd.isna(r.latency_ms)
                else r.latency
            )
            x_fp32 = f"{r.x_fp32}"
        else:
            err = "" if _missing(r.layer_error_mean) else f"{r.layer_error_mean:.4f}"
            lat = r.latency if _missing(r.latency_ms) else f"{r.latency_ms:.3f}"
            x_fp32 = "" if _missing(r.x_fp32) else f"{r.x_fp32}"
        cells = [
            r.method,
            r.precision,
            _int(r.effective_bytes),
            x_fp32,
            _share(r.coverage),
            r.full_precision,
            err,
            lat,
        ]
        rows.append([f"{c}" for c in cells])
    return rows


def quant_markdown(table: pd.DataFrame) -> str:
    """The quantization section of claims.md (templates/quant.md.j2); '' without rows."""
    return "" if table.empty else _render("quant.md.j2", rows=_quant_rows(table, "md"))


def quant_html(table: pd.DataFrame) -> str:
    """The quantization table of :func:`quant_markdown`, as HTML (templates/quant.html.j2)."""
    return "" if table.empty else _render("quant.html.j2", rows=_quant_rows(table, "html"))
