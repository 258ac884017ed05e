"""Soak test of the tracking path: concurrent writers through the pipeline's own Tracker
(``reprolab.core.tracking``), on SQLite and on PostgreSQL behind ``mlflow server``.

Each writer is a process that opens a stage run as a train stage does, then, until the
time is up, opens unit runs (params, tags) and logs a 10-epoch history of three metrics
into each, as the train stage logs a unit. It reports what it wrote and every error.
Afterwards the store is read back through a fresh client: every run a writer finished
must be there, FINISHED, with its params and every metric point. Nothing may be lost,
and no writer may fail.

    python bench/soak_tracking.py                    # 8 writers x 120 s, SQLite and PostgreSQL
    python bench/soak_tracking.py --seconds 10 --store sqlite --writers 4

Results: ``bench/results/soak_tracking.{json,md}`` (unless ``--no-save``).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EPOCHS = 10
METRICS = ("train_loss", "val_loss", "val_acc")

WRITER = r"""
import json, os, sys, time, traceback
from pathlib import Path
from reprolab.core.tracking import Tracker

root, writer, seconds = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
written, errors = [], []
tracker = Tracker(root, "soak", "train", "soak")
tracker.start({"writer": writer}, chain=False)
deadline = time.monotonic() + seconds
i = 0
while time.monotonic() < deadline:
    name = f"w{writer}-u{i}"
    try:
        with tracker.unit_run(name, {"unit": name, "seed": i}, {"reprolab.writer": str(writer)}) as run_id:
            history = [
                {"epoch": e, "train_loss": 1.0 / (e + 1), "val_loss": 2.0 / (e + 1), "val_acc": e / 10}
                for e in range(EPOCHS)
            ]
            tracker.log_history(run_id, history)
        written.append(run_id)
    except Exception as exc:
        errors.append(f"{name}: {type(exc).__name__}: {exc}")
    i += 1
tracker.finish(True)
print("RESULT " + json.dumps({"writer": writer, "runs": written, "errors": errors}))
""".replace("EPOCHS", str(EPOCHS))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def soak(uri: str, writers: int, seconds: float) -> dict:
    """Run ``writers`` writer processes against ``uri`` for ``seconds``; read back."""
    from mlflow.tracking import MlflowClient

    env = {
        **os.environ,
        "MLFLOW_TRACKING_URI": uri,
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "PYTHONPATH": str(ROOT / "src"),
    }
    started = time.monotonic()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(ROOT), str(w), str(seconds)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for w in range(writers)
    ]
    reports, crashed = [], []
    for w, proc in enumerate(procs):
        out, err = proc.communicate(timeout=seconds + 600)
        lines = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
        if proc.returncode != 0 or not lines:
            crashed.append(f"writer {w} exited {proc.returncode}: {err[-1500:]}")
            continue
        reports.append(json.loads(lines[-1][len("RESULT ") :]))
    wall = time.monotonic() - started

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("soak")
    stored: dict[str, object] = {}
    token = None
    while exp is not None:
        page = client.search_runs(
            [exp.experiment_id],
            filter_string="tags.`reprolab.kind` = 'unit'",
            max_results=1000,
            page_token=token,
        )
        stored.update({r.info.run_id: r for r in page})
        token = page.token
        if not token:
            break
    written = [run_id for r in reports for run_id in r["runs"]]
    missing = [r for r in written if r not in stored]
    incomplete = []
    for run_id in written:
        run = stored.get(run_id)
        if run is None:
            continue
        ok = run.info.status == "FINISHED" and {"unit", "seed"} <= set(run.data.params)
        for key in METRICS:
            history = client.get_metric_history(run_id, key)
            ok = ok and sorted(m.step for m in history) == list(range(EPOCHS))
        if not ok:
            incomplete.append(run_id)
    errors = [e for r in reports for e in r["errors"]]
    return {
        "writers": writers,
        "seconds": seconds,
        "wall_seconds": round(wall, 1),
        "runs_written": len(written),
        "metric_points_written": len(written) * EPOCHS * len(METRICS),
        "runs_stored": sum(1 for r in written if r in stored),
        "missing_runs": len(missing),
        "incomplete_runs": len(incomplete),
        "writer_errors": errors[:20],
        "writer_error_count": len(errors),
        "crashed_writers": crashed,
        "runs_per_second": round(len(written) / wall, 2),
        "lost_nothing": not missing and not incomplete and not errors and not crashed,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--store", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    results = {}
    with tempfile.TemporaryDirectory(prefix="reprolab-soak-") as tmp:
        if args.store in ("sqlite", "both"):
            uri = f"sqlite:///{Path(tmp) / 'mlflow.db'}"
            print(f"soak: SQLite, {args.writers} writers x {args.seconds:.0f} s", flush=True)
            results["sqlite"] = soak(uri, args.writers, args.seconds)
            print(json.dumps(results["sqlite"]), flush=True)
        if args.store in ("postgres", "both"):
            from reprolab.ops import mlflow_server

            servers = mlflow_server.start(Path(tmp) / "server", _free_port(), _free_port())
            try:
                print(
                    f"soak: PostgreSQL, {args.writers} writers x {args.seconds:.0f} s", flush=True
                )
                results["postgres"] = soak(servers.url, args.writers, args.seconds)
                print(json.dumps(results["postgres"]), flush=True)
            finally:
                servers.stop()
    if not args.no_save:
        from reprolab.core.machine import machine

        out = ROOT / "bench" / "results"
        record = {"machine": machine(), "date": time.strftime("%Y-%m-%d %H:%M"), **results}
        (out / "soak_tracking.json").write_text(json.dumps(record, indent=2) + "\n")
        lines = [
            "# Tracking soak test (bench/soak_tracking.py)",
            "",
            f"{record['date']}, {record['machine'].get('cpu', {}).get('model', '?')}: "
            "writer processes through reprolab's Tracker, each unit run with params and a "
            f"{EPOCHS}-epoch history of {len(METRICS)} metrics; read back with a fresh client.",
            "",
            "| store | writers | seconds | runs written | metric points | stored | missing | "
            "incomplete | writer errors | runs/s |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for store, r in results.items():
            lines.append(
                f"| {store} | {r['writers']} | {r['seconds']:.0f} | {r['runs_written']} | "
                f"{r['metric_points_written']} | {r['runs_stored']} | {r['missing_runs']} | "
                f"{r['incomplete_runs']} | {r['writer_error_count']} | {r['runs_per_second']} |"
            )
        (out / "soak_tracking.md").write_text("\n".join(lines) + "\n")
    return 0 if all(r["lost_nothing"] for r in results.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
