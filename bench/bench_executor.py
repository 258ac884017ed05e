"""Units on Dask vs in-process: the train stage of one method, timed both ways.

A tiny copy of the project with EnsLoss alone (``--pairs`` class pairs x 5 losses x 2
seeds units, ``--epochs`` each) is prepared once; then ``python -m reprolab train
ensloss`` runs with ``REPROLAB_EXECUTOR=local`` (one process, all cores) and with
``REPROLAB_EXECUTOR=dask`` (a local cluster of ``--workers`` single-threaded worker
processes, started and stopped inside the stage: its start-up is part of the time),
alternating for ``--rounds`` rounds. The checkpoints must be identical both ways (the
bench fails otherwise). Target: speedup >= 1.6x with 2 workers on 2 cores.

    python bench/bench_executor.py [--rounds 2] [--workers 2] [--out bench/results/executor.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(folder.glob("*.pt")):
        h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/executor.json")
    args = parser.parse_args()

    from tests.conftest import TINY_ENSLOSS, copy_project, tool_env

    cfg = {**TINY_ENSLOSS, "n_pairs": args.pairs, "epochs": args.epochs, "max_rows": 600}
    root = copy_project(Path(tempfile.mkdtemp(prefix="bench-executor-")) / "p", ensloss=cfg)
    env = tool_env({"PYTHONPATH": str(root / "src")})
    subprocess.run(
        ["dvc", "repro", "prepare@ensloss"], cwd=root, env=env, check=True, capture_output=True
    )
    load_before = os.getloadavg()
    times: dict[str, list[float]] = {"local": [], "dask": []}
    digests: dict[str, set[str]] = {"local": set(), "dask": set()}
    units = 0
    for r in range(args.rounds):
        for mode in ("local", "dask"):
            run_env = {**env, "REPROLAB_EXECUTOR": mode, "REPROLAB_DASK_WORKERS": str(args.workers)}
            t0 = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "reprolab", "train", "ensloss"],
                cwd=root,
                env=run_env,
                check=True,
                capture_output=True,
            )
            times[mode].append(time.perf_counter() - t0)
            ckpt = root / "data/checkpoints/ensloss"
            digests[mode].add(digest(ckpt))
            units = len(json.loads((ckpt / "units.json").read_text())["units"])
            print(f"round {r + 1} {mode}: {times[mode][-1]:.1f} s", flush=True)
    same = digests["local"] == digests["dask"] and len(digests["local"]) == 1
    local, dask = statistics.median(times["local"]), statistics.median(times["dask"])
    out = {
        "units": units,
        "workers": args.workers,
        "cpus": os.cpu_count(),
        "epochs": args.epochs,
        "seconds_local": times["local"],
        "seconds_dask": times["dask"],
        "speedup": local / dask,
        "target": 1.6,
        "pass": local / dask >= 1.6,
        "identical_checkpoints": same,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    md = args.out.with_suffix(".md")
    md.write_text(
        "# Units on Dask vs in-process (train@ensloss, tiny copy)\n\n"
        f"{units} units, {args.epochs} epochs each; {args.workers} single-threaded Dask workers "
        f"on {os.cpu_count()} CPUs (cluster start-up included) vs one process with all cores. "
        f"Load average before {load_before[0]:.2f}, after {out['load_average_after'][0]:.2f}.\n\n"
        "| executor | median s | runs |\n|---|---|---|\n"
        f"| in-process | {local:.1f} | {', '.join(f'{t:.1f}' for t in times['local'])} |\n"
        f"| dask ({args.workers} workers) | {dask:.1f} | {', '.join(f'{t:.1f}' for t in times['dask'])} |\n\n"
        f"Speedup {local / dask:.2f}x (target >= 1.6x: {'PASS' if out['pass'] else 'FAIL'}); "
        f"identical checkpoints: {same}.\n"
    )
    print(md.read_text())
    if not same:
        raise SystemExit("checkpoints differ between the executors")


if __name__ == "__main__":
    main()
