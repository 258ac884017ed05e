"""No-op `dvc repro` with N methods' worth of stages (default 19, the project's target).

The project does not have 19 methods yet, so this builds a synthetic copy: the real
dvc.yaml, src/ and params.yaml layout, with N method folders (copies of a real one) and
every stage's command replaced by a writer of its declared outputs. After one `dvc
repro` records the lock, the no-op `dvc repro` that follows does what a real one does
(parse the templated DAG, hash every dependency and output, compare with dvc.lock), so
its time is the time a user waits for "nothing to do".

    python bench/bench_noop.py [--methods 19] [--repeats 3] [--out bench/results/noop.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TARGET_S = 2.0

WRITER = """import json, sys
from pathlib import Path
for p in sys.argv[1:]:
    path = Path(p)
    if path.suffix:  # a file output
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"path": p}))
    else:  # a folder output
        path.mkdir(parents=True, exist_ok=True)
        (path / "out.json").write_text(json.dumps({"path": p}))
"""


def outputs(do: dict) -> list[str]:
    paths = []
    for key in ("outs", "metrics", "plots"):
        for entry in do.get(key, []) or []:
            paths.append(next(iter(entry)) if isinstance(entry, dict) else entry)
    return paths


def build(dest: Path, n: int) -> list[str]:
    for rel in ("src", "dvc.yaml", "params.yaml", ".dvcignore"):
        src = ROOT / rel
        if src.is_dir():
            shutil.copytree(src, dest / rel, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dest / rel)
    methods_dir = dest / "src/reprolab/methods"
    slugs = [f"m{i:02d}" for i in range(1, n + 1)]
    for slug in slugs:
        shutil.copytree(methods_dir / "ensloss", methods_dir / slug)
    params = yaml.safe_load((dest / "params.yaml").read_text())
    params["methods"] = {s: {"smoke": {}, "paper": {}} for s in slugs}
    (dest / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    (dest / "bench_writer.py").write_text(WRITER)

    dag = yaml.safe_load((dest / "dvc.yaml").read_text())
    for name, stage in dag["stages"].items():
        do = stage.get("do", stage)
        if name == "validate":
            files = [f"data/config/{s}.json" for s in slugs]
            files += [f"data/config/{s}.prepare.json" for s in slugs]
            files += [f"data/config/{s}.code.json" for s in slugs]
            files += [f"data/config/asset.{a}.json" for a in params.get("assets", {})]
            do["cmd"] = "python bench_writer.py " + " ".join(files)
        else:
            do["cmd"] = "python bench_writer.py " + " ".join(outputs(do))
    (dest / "dvc.yaml").write_text(yaml.safe_dump(dag, sort_keys=False))
    return slugs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--methods", type=int, default=19)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/noop.json")
    args = parser.parse_args(argv)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "DVC_NO_ANALYTICS": "1"}
    with tempfile.TemporaryDirectory(prefix="reprolab-noop-") as tmp:
        dest = Path(tmp) / "project"
        dest.mkdir()
        slugs = build(dest, args.methods)
        for cmd in (["git", "init", "-q"], ["dvc", "init", "-q"]):
            subprocess.run(cmd, cwd=dest, env=env, check=True)
        print(f"synthetic project: {len(slugs)} methods; first `dvc repro` ...", flush=True)
        first = subprocess.run(["dvc", "repro"], cwd=dest, env=env, capture_output=True, text=True)
        if first.returncode != 0:
            print(first.stdout[-3000:], first.stderr[-3000:])
            return 1
        stages = len(yaml.safe_load((dest / "dvc.lock").read_text())["stages"])
        runs, cpu = [], []
        for i in range(args.repeats):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            proc = subprocess.run(
                ["dvc", "repro"], cwd=dest, env=env, capture_output=True, text=True
            )
            runs.append(time.perf_counter() - t0)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            if "Running stage" in proc.stdout or proc.returncode != 0:
                print(proc.stdout[-3000:], proc.stderr[-3000:])
                return 1
            print(f"  no-op run {i + 1}: {runs[-1]:.2f} s ({cpu[-1]:.2f} s CPU)", flush=True)
    result = {
        "methods": len(slugs),
        "stages": stages,
        "runs_s": runs,
        "median_s": statistics.median(runs),
        # CPU time (user + sys) of the dvc process: what the wall time would be on an
        # idle core; the wall time also carries whatever else the machine is running
        "cpu_s": cpu,
        "median_cpu_s": statistics.median(cpu),
        "target_s": TARGET_S,
        "pass": statistics.median(runs) <= TARGET_S,
        "load_average": os.getloadavg(),
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(
        f"no-op `dvc repro`, {len(slugs)} methods ({stages} stages): median "
        f"{result['median_s']:.2f} s, {result['median_cpu_s']:.2f} s CPU (target <= {TARGET_S} s; "
        f"load average {result['load_average'][0]:.1f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
