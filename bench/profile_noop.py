"""Where a no-op `dvc repro` spends its time, on the project as it is (run it after
`make run`, on an idle machine): the wall and CPU of N no-op runs and of `dvc status`,
the stage, output and file counts beside them, and a cProfile of one no-op grouped by
the suspects of a slow no-op (DVC's per-stage read/write locks, hashing the outputs and
dependencies, parsing dvc.yaml / dvc.lock / params.yaml, imports).

    python bench/profile_noop.py [--repeats 5] [--out bench/results/noop_profile.md]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path.cwd()
DVC = [sys.executable, "-m", "dvc"]
#: the suspects, each the cumulative time of the DVC functions that do it
SUSPECTS = {
    "per-stage read/write locks (dvc.rwlock.rwlock)": ("dvc/rwlock.py", "rwlock"),
    "hashing outputs and deps (dvc.output.Output.status)": ("dvc/output.py", "status"),
    "collecting the stages (dvc.yaml, dvc.lock, params)": (
        "dvc/repo/reproduce.py",
        "collect_stages",
    ),
    "stage.changed (deps + outs + cmd, all stages)": ("dvc/stage/__init__.py", "changed"),
    "imports": ("<frozen importlib._bootstrap>", "_find_and_load"),
}


def timed(cmd: list[str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def counts() -> dict[str, int]:
    import yaml

    lock = yaml.safe_load((ROOT / "dvc.lock").read_text()) or {}
    stages = lock.get("stages", {})
    outs = sum(len(s.get("outs", [])) for s in stages.values())
    deps = sum(len(s.get("deps", [])) for s in stages.values())
    files = sum(1 for _ in (ROOT / "data").rglob("*") if _.is_file())
    return {
        "stages": len(stages),
        "outs": outs,
        "deps": deps,
        "files_under_data": files,
        "dvc_lock_lines": len((ROOT / "dvc.lock").read_text().splitlines()),
    }


def profile() -> tuple[dict[str, float], str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "noop.prof"
        subprocess.run(
            [sys.executable, "-m", "cProfile", "-o", str(out), "-m", "dvc", "repro"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        stats = pstats.Stats(str(out))
        total = max(v[3] for v in stats.stats.values())
        found = {}
        for name, (path, func) in SUSPECTS.items():
            found[name] = max(
                (v[3] for (f, _, fn), v in stats.stats.items() if f.endswith(path) and fn == func),
                default=0.0,
            )
        text = io.StringIO()
        pstats.Stats(str(out), stream=text).sort_stats("cumulative").print_stats(30)
        return found, text.getvalue(), total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("bench/results/noop_profile.md"))
    args = parser.parse_args()
    if not (ROOT / "dvc.lock").is_file():
        print("profile_noop: no dvc.lock here: run `make run` first", file=sys.stderr)
        return 2
    print("profile_noop: one warm-up no-op, then the timed runs", flush=True)
    timed([*DVC, "repro"])
    repro = [timed([*DVC, "repro"]) for _ in range(args.repeats)]
    status = [timed([*DVC, "status"]) for _ in range(args.repeats)]
    found, table, total = profile()
    result = {
        "repro_wall_s": statistics.median(w for w, _ in repro),
        "repro_cpu_s": statistics.median(c for _, c in repro),
        "status_wall_s": statistics.median(w for w, _ in status),
        "status_cpu_s": statistics.median(c for _, c in status),
        "load_average": list(os.getloadavg()),
        **counts(),
        "profile_total_s": total,
        "suspects_s": found,
    }
    lines = [
        "# Where a no-op `dvc repro` spends its time",
        "",
        f"`python bench/profile_noop.py` (median of {args.repeats} after a warm-up; load "
        f"average {result['load_average'][0]:.1f}):",
        "",
        "| measure | value |",
        "|---|---|",
        *(
            f"| {k} | {v:.3g} |" if isinstance(v, float) else f"| {k} | {v} |"
            for k, v in result.items()
            if k not in ("suspects_s", "load_average")
        ),
        "",
        "Cumulative seconds of one profiled no-op, by suspect (they overlap: "
        "stage.changed holds the hashing):",
        "",
        "| suspect | s |",
        "|---|---|",
        *(f"| {k} | {v:.2f} |" for k, v in found.items()),
        "",
        "```",
        table.strip(),
        "```",
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines))
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    print("\n".join(lines[:30]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
