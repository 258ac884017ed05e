"""Sandbox throughput: programs/s for short programs with their tests, sequential and with
workers, next to the start-up rate of a bare interpreter measured right after (what a
fresh interpreter per program would cost at the same machine load; the sandbox forks
each sample from a zygote instead).

    python bench/bench_sandbox.py [--n 200] [--workers 1 2 4 8] [--out bench/results/sandbox.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from reprolab.core.sandbox import Limits, run_many, sandbox_python

ROOT = Path(__file__).resolve().parents[1]

PROGRAM = "def double(x):\n    return 2 * x\n"
TESTS = "assert double(3) == 6\nassert double(-1) == -2\n"


def bare_starts_per_s(python: str, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        subprocess.run([python, "-I", "-S", "-c", "pass"], check=True)
    return n / (time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/sandbox.json")
    args = parser.parse_args(argv)
    python = sandbox_python()
    limits = Limits(timeout_s=5.0, memory_mb=256)
    run_many([(PROGRAM, TESTS)] * 4, workers=1, limits=limits)  # warm the page cache
    rows = []
    for workers in args.workers:
        t0 = time.perf_counter()
        results = run_many([(PROGRAM, TESTS)] * args.n, workers=workers, limits=limits)
        wall = time.perf_counter() - t0
        if not all(r.passed for r in results):
            bad = next(r for r in results if not r.passed)
            print(f"a sample did not pass: {bad.status} {bad.error}")
            return 1
        rows.append(
            {"workers": workers, "programs": args.n, "wall_s": wall, "per_s": args.n / wall}
        )
        print(f"workers={workers}: {args.n / wall:.1f} programs/s ({args.n} in {wall:.2f} s)")
    bare = bare_starts_per_s(python, args.n)
    print(f"bare `{python} -I -S -c pass`: {bare:.1f} starts/s")
    result = {
        "python": python,
        "euid": os.geteuid(),
        "cpus": os.cpu_count(),
        "rows": rows,
        "bare_interpreter_starts_per_s": bare,
        "load_average": os.getloadavg(),
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    lines = ["| workers | programs | wall s | programs/s |", "|---|---|---|---|"]
    lines += [
        f"| {r['workers']} | {r['programs']} | {r['wall_s']:.2f} | {r['per_s']:.1f} |" for r in rows
    ]
    lines += ["", f"Bare interpreter starts (`{python} -I -S -c pass`), for scale: {bare:.1f}/s."]
    lines += [f"{os.cpu_count()} CPUs, 1-min load average {os.getloadavg()[0]:.1f} when written."]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
