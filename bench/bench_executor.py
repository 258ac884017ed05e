"""Where units run: the train stage of one method, timed five ways.

A tiny copy of the project with EnsLoss alone (``--pairs`` class pairs x 5 losses x 2
seeds units, ``--epochs`` each) is prepared once; then ``python -m reprolab train
ensloss`` runs, alternating for ``--rounds`` rounds, with:

- ``local``: in-process, torch on all cores (``REPROLAB_THREADS`` unset: the default);
- ``local-1t``: in-process, one torch thread (what each Dask worker uses);
- ``pool`` (the default): ``--workers`` single-threaded processes forked from the stage
  process (no start-up to pay: they inherit its imports, config and data);
- ``dask`` (cold): a local cluster of ``--workers`` single-threaded worker processes,
  started and stopped inside the stage (their start-up and imports are in the time);
- ``tcp`` (warm): an existing scheduler (``REPROLAB_EXECUTOR=tcp://...``) whose
  ``--workers`` single-threaded workers were started before and have run the stage once
  (imports done, the stage context cached per worker): the lab setting.

With ``--flow`` it also times Prefect's ``reproduce_all`` over two tiny methods
(``--flow-methods``, their test configs; setup stages done beforehand) with
``executor="local"`` (one after the other) and ``executor="dask"`` (concurrently, a
2-worker local cluster), each in a fresh copy, and checks both copies' dvc.lock agree.

The checkpoints must be identical in every single-threaded mode (the bench fails
otherwise): results do not depend on where units run. ``local`` (two threads) may differ
in the last bits of convolution weights (tests/unit/test_thread_count.py bounds it). Target: >= 1.6x over ``local`` with
2 workers on 2 cores. The load average is recorded around every run; run it alone
(``flock /tmp/reprolab-heavy.lock``) on an idle machine.

    python bench/bench_executor.py [--rounds 2] [--workers 2] [--out bench/results/executor.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODES = ("local", "local-1t", "pool", "dask", "tcp")
LABELS = {
    "local": "in-process, torch on all cores",
    "local-1t": "in-process, 1 torch thread",
    "pool": "pool of forked single-threaded processes (default)",
    "dask": "Dask local cluster, cold (start-up in the time)",
    "tcp": "Dask scheduler, warm workers (tcp://)",
}
TARGET = 1.6


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(folder.glob("*.pt")):
        h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()[:16]


FLOW = """
import sys, time
from flows.reproduce import reproduce_all
t0 = time.perf_counter()
reproduce_all(methods=sys.argv[2].split(","), root=sys.argv[1], executor=sys.argv[3])
print("SECONDS", time.perf_counter() - t0)
"""


def time_flows(methods: list[str], workers: int) -> dict:
    """reproduce_all over ``methods`` with each executor, in fresh copies."""
    import yaml

    from tests.conftest import copy_project, tool_env

    seconds, load, locks = {}, {}, {}
    for mode in ("local", "dask"):
        root = copy_project(
            Path(tempfile.mkdtemp(prefix=f"bench-flow-{mode}-")) / "p", methods=tuple(methods)
        )
        env = tool_env(
            {
                "PYTHONPATH": f"{root / 'src'}{os.pathsep}{root}",
                "REPROLAB_WORKER": "off",
                "REPROLAB_DASK_WORKERS": str(workers),
                "PREFECT_HOME": str(root.parent / "prefect-home"),
                "PREFECT_UI_ENABLED": "false",
                "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
            }
        )
        env.pop("PREFECT_API_URL", None)
        setup = [
            "validate",
            *(
                f"assets@{a}"
                for a in yaml.safe_load((root / "params.yaml").read_text()).get("assets") or {}
            ),
        ]
        subprocess.run(["dvc", "repro", *setup], cwd=root, env=env, check=True, capture_output=True)
        before = os.getloadavg()[0]
        proc = subprocess.run(
            [sys.executable, "-c", FLOW, str(root), ",".join(methods), mode],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise SystemExit(f"reproduce_all ({mode}) failed:\n{proc.stderr[-4000:]}")
        line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("SECONDS"))
        seconds[mode] = float(line.split()[1])
        load[mode] = (before, os.getloadavg()[0])
        locks[mode] = yaml.safe_load((root / "dvc.lock").read_text())
        print(f"reproduce_all {mode}: {seconds[mode]:.1f} s", flush=True)
    return {
        "methods": methods,
        "seconds": seconds,
        "load": load,
        "speedup": seconds["local"] / seconds["dask"],
        "same_dvc_lock": locks["local"] == locks["dask"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/executor.json")
    parser.add_argument("--flow", action="store_true", help="also time reproduce_all")
    parser.add_argument("--flow-methods", default="ensloss,dp_noise")
    args = parser.parse_args()

    from distributed import LocalCluster

    from reprolab.ops import executor
    from tests.conftest import TINY_ENSLOSS, copy_project, tool_env

    cfg = {**TINY_ENSLOSS, "n_pairs": args.pairs, "epochs": args.epochs, "max_rows": 600}
    root = copy_project(Path(tempfile.mkdtemp(prefix="bench-executor-")) / "p", ensloss=cfg)
    env = tool_env({"PYTHONPATH": str(root / "src"), "REPROLAB_WORKER": "off"})
    for key in ("REPROLAB_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "REPROLAB_EXECUTOR"):
        env.pop(key, None)  # each mode sets its own
    subprocess.run(
        ["dvc", "repro", "prepare@ensloss"], cwd=root, env=env, check=True, capture_output=True
    )
    # The warm cluster: started here, before any timing, like a lab's long-lived one.
    os.environ["PYTHONPATH"] = env["PYTHONPATH"]
    cluster = LocalCluster(**executor.local_cluster_kwargs(args.workers))
    address = cluster.scheduler_address
    run_env = {
        "local": {"REPROLAB_EXECUTOR": "local"},
        "local-1t": {"REPROLAB_EXECUTOR": "local", "REPROLAB_THREADS": "1", "OMP_NUM_THREADS": "1"},
        "pool": {"REPROLAB_EXECUTOR": "pool", "REPROLAB_POOL_WORKERS": str(args.workers)},
        "dask": {"REPROLAB_EXECUTOR": "dask", "REPROLAB_DASK_WORKERS": str(args.workers)},
        "tcp": {"REPROLAB_EXECUTOR": address},
    }
    times: dict[str, list[float]] = {m: [] for m in MODES}
    loads: dict[str, list[float]] = {m: [] for m in MODES}
    digests: dict[str, set[str]] = {m: set() for m in MODES}
    units = 0

    def train(mode: str) -> float:
        nonlocal units
        # every mode trains every unit: the stage reuses units the last run trained
        for done in ("data/checkpoints/ensloss", "data/.partial/train/ensloss"):
            shutil.rmtree(root / done, ignore_errors=True)
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "reprolab", "train", "ensloss"],
            cwd=root,
            env={**env, **run_env[mode]},
            check=True,
            capture_output=True,
        )
        seconds = time.perf_counter() - t0
        ckpt = root / "data/checkpoints/ensloss"
        digests[mode].add(digest(ckpt))
        units = len(json.loads((ckpt / "units.json").read_text())["units"])
        return seconds

    load_before = os.getloadavg()
    try:
        warmup = train("tcp")  # the workers import torch and build the stage context once
        print(f"tcp warm-up (workers cold): {warmup:.1f} s", flush=True)
        for r in range(args.rounds):
            for mode in MODES:
                before = os.getloadavg()[0]
                times[mode].append(train(mode))
                loads[mode].append(round(max(before, os.getloadavg()[0]), 2))
                print(f"round {r + 1} {mode}: {times[mode][-1]:.1f} s", flush=True)
    finally:
        cluster.close()
    load_after = os.getloadavg()
    # every single-threaded mode gives the same bits; ``local`` runs torch on two threads,
    # where a convolution's backward reduces in another order (last bits of the weights,
    # bounded by tests/unit/test_thread_count.py)
    same = len(set().union(*(digests[m] for m in MODES if m != "local"))) == 1
    same_as_two_threads = digests["local"] == digests["local-1t"]
    med = {m: statistics.median(times[m]) for m in MODES}
    speedup = {m: med["local"] / med[m] for m in MODES}
    out = {
        "units": units,
        "workers": args.workers,
        "cpus": os.cpu_count(),
        "epochs": args.epochs,
        "seconds": times,
        "median_seconds": med,
        "speedup_vs_local": speedup,
        "speedup_tcp_vs_local_1t": med["local-1t"] / med["tcp"],
        "tcp_warmup_seconds": warmup,
        "target": TARGET,
        "pass": max(speedup["pool"], speedup["dask"], speedup["tcp"]) >= TARGET,
        "identical_checkpoints": same,
        "two_thread_checkpoints_identical": same_as_two_threads,
        "load_average_before": load_before,
        "load_average_after": load_after,
        "load_1min_per_run": loads,
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    flow_md = ""
    if args.flow:
        out["flow"] = time_flows(args.flow_methods.split(","), args.workers)
        f = out["flow"]
        flow_md = (
            f"\n## reproduce-all over {', '.join(f['methods'])} (tiny test configs)\n\n"
            "Prefect ephemeral, setup stages done beforehand; the time of the flow call "
            "(Prefect's temporary server, for Dask the cluster's start-up included).\n\n"
            "| executor | s | 1-min load before, after |\n|---|---|---|\n"
            + "".join(
                f"| {m} | {f['seconds'][m]:.1f} | {f['load'][m][0]:.2f}, {f['load'][m][1]:.2f} |\n"
                for m in ("local", "dask")
            )
            + f"\nSpeedup {f['speedup']:.2f}x; the two copies' dvc.lock agree: "
            f"{f['same_dvc_lock']}.\n"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    rows = "".join(
        f"| {LABELS[m]} | {med[m]:.1f} | {', '.join(f'{t:.1f}' for t in times[m])} "
        f"| {speedup[m]:.2f}x | {', '.join(f'{x:.1f}' for x in loads[m])} |\n"
        for m in MODES
    )
    md = args.out.with_suffix(".md")
    md.write_text(
        "# Where units run: train@ensloss, tiny copy\n\n"
        f"{units} units, {args.epochs} epochs each, {args.workers} single-threaded workers "
        f"on {os.cpu_count()} CPUs. Load average (1, 5, 15 min) before "
        f"{', '.join(f'{x:.2f}' for x in load_before)}, after "
        f"{', '.join(f'{x:.2f}' for x in load_after)}.\n\n"
        "| executor | median s | runs | vs in-process | 1-min load per run |\n"
        "|---|---|---|---|---|\n"
        f"{rows}\n"
        f"Warm scheduler's first run (workers importing, stage context built): {warmup:.1f} s. "
        f"Warm Dask vs in-process at 1 thread: {out['speedup_tcp_vs_local_1t']:.2f}x. "
        f"Target >= {TARGET}x over in-process: {'PASS' if out['pass'] else 'FAIL'}; "
        f"identical checkpoints (every single-threaded mode): {same}; torch on two threads "
        f"gives the same bits: {same_as_two_threads}.\n{flow_md}"
    )
    print(md.read_text())
    if not same:
        raise SystemExit("checkpoints differ between the executors")


if __name__ == "__main__":
    main()
