"""What the confirmatory paper suite cost, from the record: each method's registered run
(docs/results/<slug>/confirm-<id>/run.json, the latest registration that ran), its
compute and the wall time of its ``dvc repro``. Methods whose registered run has not run yet are counted
from their last exploratory paper run (docs/results/<slug>/run.json), marked so.

Nothing is timed here: every number was measured by the paper runs themselves (on the
default pool of single-threaded processes, one method at a time) and committed with
their results. The file answers "how long does the whole suite take on this kind of
machine" with the suite's own measurements, not a projection from a sample.

    python bench/suite_record.py [--hours 4]

Writes bench/results/suite_record.{json,md}.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
OUT = ROOT / "bench" / "results"


def latest_run(folder: Path) -> tuple[str, Path] | None:
    """The registered run with the latest date in ``folder``, else the exploratory one."""
    runs = sorted(
        (json.loads(p.read_text())["date"], p.parent) for p in folder.glob("confirm-*/run.json")
    )
    if runs:
        return "confirmatory", runs[-1][1]
    if (folder / "run.json").is_file():
        return "exploratory", folder
    return None


def row(slug: str, kind: str, folder: Path) -> dict:
    run = json.loads((folder / "run.json").read_text())
    rounds = run.get("rounds") or []
    wall = sum(r.get("dvc_repro_seconds") or 0 for r in rounds) or run.get(
        "dvc_repro_seconds_all_methods"
    )
    return {
        "method": slug,
        "kind": kind,
        "registration": run.get("registration"),
        "seeds": len(run.get("seeds") or []),
        "rounds": len(rounds),
        "compute_min": run.get("compute_minutes"),
        "wall_min": round(wall / 60, 1) if wall else None,
        "cpus": (run.get("machine") or {}).get("cpus"),
        "cpu": ((run.get("machine") or {}).get("cpu") or {}).get("model"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hours", type=float, default=4.0, help="the suite's wall-time target")
    args = ap.parse_args()
    rows = []
    for folder in sorted(p for p in RESULTS.iterdir() if p.is_dir()):
        found = latest_run(folder)
        if found:
            rows.append(row(folder.name, *found))
    if not rows:
        raise SystemExit(f"no run.json under {RESULTS}")
    frame = pd.DataFrame(rows).sort_values("wall_min", ascending=False)
    done = frame[frame.kind == "confirmatory"]
    total_wall = float(frame.wall_min.sum())
    summary = {
        "methods": len(frame),
        "confirmatory_runs": len(done),
        "confirmatory_wall_h": round(float(done.wall_min.sum()) / 60, 2),
        "confirmatory_compute_h": round(float(done.compute_min.sum()) / 60, 2),
        "suite_wall_h": round(total_wall / 60, 2),
        "target_h": args.hours,
        "cpus": sorted({c for c in frame.cpus.dropna().astype(int)}),
        "cpu_models": sorted(set(frame.cpu.dropna())),
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "suite_record.json").write_text(
        json.dumps({"summary": summary, "rows": frame.to_dict("records")}, indent=2) + "\n"
    )
    lines = [
        "# The paper suite's cost, from the record",
        "",
        "`python bench/suite_record.py`: every method's latest registered run (else its last "
        "exploratory paper run), as measured by the run itself and committed with its "
        "results. Wall is the run's `dvc repro` time over all its rounds; compute is the "
        "machine time the run counted against its budget (units trained side by side on "
        "the pool each count their share; an exploratory run counted units before the "
        "pool by their own seconds, so its compute can exceed its wall).",
        "",
        "| method | run | seeds | rounds | compute min | wall min |",
        "|---|---|---|---|---|---|",
    ]
    for r in frame.to_dict("records"):
        run = r["registration"] if r["kind"] == "confirmatory" else "exploratory"
        lines.append(
            f"| {r['method']} | {run} | {r['seeds']} | {r['rounds']} | {r['compute_min']} "
            f"| {r['wall_min']} |"
        )
    lines += [
        "",
        f"Confirmatory runs on record: {summary['confirmatory_runs']} of {summary['methods']}, "
        f"{summary['confirmatory_wall_h']} h of wall ({summary['confirmatory_compute_h']} h "
        f"of compute). The whole suite, counting the others' exploratory runs: "
        f"{summary['suite_wall_h']} h of wall against a {args.hours:g}-hour target, on "
        f"{', '.join(map(str, summary['cpus']))}-core machines "
        f"({'; '.join(summary['cpu_models'])}).",
    ]
    (OUT / "suite_record.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
