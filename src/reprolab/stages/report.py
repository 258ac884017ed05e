"""report: one row per claim of every method -> data/reports/claims.{md,csv,html}.

Each row carries the paper's number, the measured value with its 95% interval, the
verdict, the profile and (in the .md/.html views) a link to the MLflow run that
produced it. claims.csv, quantization.csv and summary.json are versioned by DVC and
hash the same on a rerun; the views also show run links and measured latency, read from
data/runtime/, and are rewritten on every run.
"""

from __future__ import annotations

import html
import math
import os
from pathlib import Path

import pandas as pd

from reprolab import config, registry
from reprolab.contract import is_runtime_metric
from reprolab.core import io
from reprolab.core.tracking import UI_WORKFLOW, load_env, log, open_tracker
from reprolab.paths import MethodPaths, reports_dir

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


def run(root: Path) -> dict:
    project = config.load(root / "params.yaml")
    rows, figures = collect(root, project.slugs)
    out = reports_dir(root)
    load_env(root)  # REPROLAB_MLFLOW_UI (the address run links point to) is set there
    ui = os.environ.get("REPROLAB_MLFLOW_UI", "http://127.0.0.1:5000")
    table = pd.DataFrame(
        rows, columns=[*COLUMNS, "statement", "detail", "run_id", "experiment_id", "timed"]
    )
    stable = table[~table.timed.astype(bool)] if len(table) else table
    if not table.empty:
        table["run"] = [
            f"{ui}/#/experiments/{e}/runs/{r}?{UI_WORKFLOW}"
            for e, r in zip(table.experiment_id, table.run_id, strict=True)
        ]
    quant_table = collect_quantization(root, project.slugs)
    markdown = to_markdown(table, figures, project.profile, out) + quant_markdown(quant_table)
    out.mkdir(parents=True, exist_ok=True)
    # The CSVs and summary.json are the versioned results (dvc.yaml's outs): nothing in
    # them changes from run to run. claims.md/.html are views that add what does
    # (MLflow run links, measured latency), so they are written here but not versioned.
    with io.atomic_path(out / "quantization.csv") as tmp:
        quant_table.drop(columns=["latency_ms", "latency"]).to_csv(tmp, index=False)
    with io.atomic_path(out / "claims.csv") as tmp:
        # claims on wall time are in the views only: their values differ on every run
        stable[[c for c in COLUMNS if c != "run"] + ["statement", "detail"]].to_csv(
            tmp, index=False
        )
    io.write_text(out / "claims.md", markdown)
    io.write_text(out / "claims.html", to_html(table, figures, out, quant_html(quant_table)))
    # summary.json is versioned too: verdicts of claims on wall time are left out of it
    counts = (
        stable[stable.precision == "fp32"].verdict.value_counts().to_dict() if len(table) else {}
    )
    io.write_json(
        out / "summary.json",
        {"profile": project.profile, "claims": len(table), "fp32_verdicts": counts},
    )

    tracker = open_tracker(root, "reprolab-report", "report", project.profile)
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
    log(f"report: {len(table)} claim rows -> {out / 'claims.md'}")
    return {
        "markdown": markdown,
        "rows": table[COLUMNS].to_dict("records"),
        "path": str(out / "claims.md"),
    }


def collect(root: Path, slugs: list[str]) -> tuple[list[list], dict[str, list[Path]]]:
    rows, figures = [], {}
    for slug in slugs:
        folder = MethodPaths(root, slug).eval
        if not (folder / "claims.json").is_file():
            continue
        spec = registry.get(slug)
        ids = runtime_info(root, slug)
        timed = MethodPaths(root, slug).runtime / "claims.json"
        results = io.read_json(folder / "claims.json")
        results += io.read_json(timed) if timed.is_file() else []  # claims on wall time
        for c in results:
            m = c["measured"]
            rows.append(
                [
                    slug,
                    c["id"],
                    c["precision"],
                    f"{c['paper_value']} ({c['paper_setting']})",
                    _fmt(m["value"]),
                    f"[{_fmt(m['ci_low'])}, {_fmt(m['ci_high'])}]",
                    c["verdict"],
                    c["profile"],
                    "",
                    c["statement"],
                    m.get("summary", ""),
                    ids.get("mlflow_run_id", ""),
                    ids.get("mlflow_experiment_id", ""),
                    is_runtime_metric(c["metric"]),
                ]
            )
        figures[f"{slug}: {spec.title}"] = sorted((folder / "plots").glob("*.png")) + sorted(
            (MethodPaths(root, slug).runtime / "plots").glob("*.png")  # wall-clock figures
        )
    return rows, figures


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


def quant_markdown(table: pd.DataFrame) -> str:
    if table.empty:
        return ""
    lines = [
        "",
        "## Quantization: size, coverage, error and latency",
        "",
        "Effective bytes count packed low-bit codes, fp16 scales, low-rank factors and sparse"
        " outliers (see `reprolab.core.quant`); coverage is the share of the model's"
        " parameters the scheme really quantized, and full precision names the module types"
        " it left in fp32 (parameters in parentheses); layer error is the mean relative"
        " output error of the quantized layers on calibration inputs. Latency only where a"
        " real low-bit kernel runs.",
        "",
        "| method | precision | effective bytes | x fp32 | coverage | full precision "
        "| mean layer error | latency ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples():
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
        lines.append(
            f"| {r.method} | {r.precision} | {_int(r.effective_bytes)} | {r.x_fp32} "
            f"| {_share(r.coverage)} | {r.full_precision} | {err} | {lat} |"
        )
    return "\n".join(lines) + "\n"


def quant_html(table: pd.DataFrame) -> str:
    """The quantization table of :func:`quant_markdown`, as HTML."""
    if table.empty:
        return ""
    head = "".join(
        f"<th>{c}</th>"
        for c in (
            "method",
            "precision",
            "effective bytes",
            "x fp32",
            "coverage",
            "full precision",
            "mean layer error",
            "latency ms",
        )
    )
    body = []
    for r in table.itertuples():
        err = "" if _missing(r.layer_error_mean) else f"{r.layer_error_mean:.4f}"
        lat = r.latency if _missing(r.latency_ms) else f"{r.latency_ms:.3f}"
        cells = [
            r.method,
            r.precision,
            _int(r.effective_bytes),
            "" if _missing(r.x_fp32) else r.x_fp32,
            _share(r.coverage),
            r.full_precision,
            err,
            lat,
        ]
        body.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    return (
        "<h2>Quantization: size, coverage, error and latency</h2>"
        "<p>Coverage: share of parameters the scheme really quantized; full precision: module"
        " types left in fp32 (parameters). Latency only where a real low-bit kernel runs.</p>"
        f"<table><tr>{head}</tr>{''.join(body)}</table>"
    )


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


def _fmt(x: float) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"  # not measured (a claim that was not tested)
    if isinstance(x, float) and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:+.4f}" if abs(x) < 10 else f"{x:.4g}"


def to_markdown(table: pd.DataFrame, figures: dict, profile: str, out: Path) -> str:
    lines = [
        "# Claims: paper vs measured",
        "",
        f"Profile: **{profile}**"
        + (
            " (smoke-level verdicts check the machinery; they are not evidence)"
            if profile == "smoke"
            else ""
        ),
        "",
        "Measured value and 95% interval as each claim's check defines them (its method's"
        " README says how); detail: the check's one-line summary, e.g. per-task paired"
        " outcomes over seeds.",
        "",
        "| method | claim | precision | paper | measured | 95% interval | detail | verdict | profile | run |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples():
        lines.append(
            f"| {r.method} | {r.claim} | {r.precision} | {r.paper} | {r.measured} | {r.interval} "
            f"| {r.detail} | **{r.verdict}** | {r.profile} | [mlflow]({r.run}) |"
        )
    for title, paths in figures.items():
        if paths:
            lines += ["", f"## {title}", ""]
            lines += [f"![{p.stem}]({os.path.relpath(p, out)})" for p in paths]
    return "\n".join(lines) + "\n"


def to_html(table: pd.DataFrame, figures: dict, out: Path, quant: str = "") -> str:
    head = "".join(f"<th>{c}</th>" for c in COLUMNS)
    body = []
    for r in table.itertuples():
        cells = [
            r.method,
            r.claim,
            r.precision,
            r.paper,
            r.measured,
            r.interval,
            f"<b>{r.verdict}</b>",
            r.profile,
        ]
        tds = "".join(
            f"<td>{c if c.startswith('<b>') else html.escape(str(c))}</td>" for c in cells
        )
        body.append(f"<tr>{tds}<td><a href='{html.escape(r.run)}'>mlflow</a></td></tr>")
    imgs = "".join(
        f"<h2>{html.escape(t)}</h2>"
        + "".join(f"<img src='{os.path.relpath(p, out)}' width=560>" for p in ps)
        for t, ps in figures.items()
        if ps
    )
    return (
        "<!doctype html><meta charset=utf-8><title>reprolab claims</title>"
        "<style>td,th{border:1px solid #ccc;padding:4px}table{border-collapse:collapse}</style>"
        f"<h1>Claims: paper vs measured</h1><table><tr>{head}</tr>{''.join(body)}</table>"
        f"{quant}{imgs}"
    )
