"""Where a method's paper-profile stages spend their time: cProfile over the train,
quantize and evaluate stages of two seeds, in the stage process with the units one after
another (``REPROLAB_EXECUTOR=local``, so every unit's work is in the profiled thread).

Each stage is profiled for at most ``--seconds`` (a unit's work repeats across units, so
the first minutes show where a stage goes): the profiler is stopped at the cap and the
stage ended. A stage cut short is then finished without the profiler (``dvc repro``,
which resumes from the units already done), so the next stage has its inputs.

Writes ``bench/results/profile/<slug>.md`` (per stage: profiled seconds, whether the cap
cut it, the top-20 functions by own time and the project's functions by cumulative
time) and ``<slug>.json`` (the same rows).

    python bench/profile_method.py bit_dgdm [--seeds 0,1] [--seconds 180]
        [--stages train,quantize,evaluate]

Run it alone on an idle machine: it costs about three caps plus the rest of training
(``--stages train`` costs one cap: a cut last stage is not finished).
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench/results/profile"

# runs in the scratch copy: the stage under cProfile, stopped at the cap (SIGALRM)
DRIVER = """
import cProfile, os, signal, sys, time
out, cap, stage, slug = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
prof = cProfile.Profile()
t0 = time.perf_counter()
def finish(cut):
    prof.disable()
    prof.dump_stats(out)
    with open(out + ".info", "w") as f:
        f.write(f"{time.perf_counter() - t0} {int(cut)}")
def at_cap(*_):
    finish(True)
    os._exit(0)
signal.signal(signal.SIGALRM, at_cap)
signal.alarm(cap)
from reprolab.ops import portable
portable.apply()  # as `python -m reprolab` does, before torch is imported
from reprolab.cli import main
prof.enable()
try:
    main([stage, slug])
finally:
    signal.alarm(0)
    finish(False)
"""


def shell(cmd: list[str], cwd: Path, env: dict) -> None:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed in {cwd}:\n{proc.stderr[-3000:]}")


def _short(path: str) -> str:
    """A function's file as the reader knows it: the package path, or python's own."""
    for marker in ("/site-packages/", "/src/"):
        if marker in path:
            return path.split(marker)[-1]
    if "/lib/python3" in path:
        return "python/" + path.split("/lib/python3")[-1].split("/", 1)[-1]
    return path


def top(stats: pstats.Stats, key: str, n: int, project_only: bool) -> list[dict]:
    rows = []
    for (path, line, func), (_cc, calls, own, cum, _callers) in stats.stats.items():
        if project_only and "/reprolab/" not in path:
            continue
        short = _short(path)
        rows.append(
            {"function": f"{short}:{line}({func})", "calls": calls, "own_s": own, "cum_s": cum}
        )
    rows.sort(key=lambda r: r[key], reverse=True)
    return rows[:n]


def profile(slug: str, seeds: list[int], stages: list[str], cap: int, work: Path) -> dict:
    from reprolab.ops import scratch

    dest = work / slug
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    scratch.copy_project(ROOT, dest, scratch.cut_params(params, [slug], seeds, "paper"))
    env = {
        **os.environ,
        "REPROLAB_EXECUTOR": "local",
        "REPROLAB_WORKER": "off",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    env.pop("MLFLOW_TRACKING_URI", None)
    t0 = time.perf_counter()
    shell(["dvc", "repro", f"prepare@{slug}"], dest, env)
    print(f"{slug}: prepared in {time.perf_counter() - t0:.0f} s", flush=True)
    result = {}
    for i, stage in enumerate(stages):
        last = i == len(stages) - 1
        prof = dest / f"{stage}.prof"
        t0 = time.perf_counter()
        cmd = [sys.executable, "-c", DRIVER, str(prof), str(cap), stage, slug]
        shell(cmd, dest, env)
        seconds, cut = (dest / f"{stage}.prof.info").read_text().split()
        t1 = time.perf_counter()
        # the stage's outputs for the next stage: a cut stage is finished by DVC (train
        # keeps the units done), a finished one is recorded as it is; the last stage's
        # outputs feed nothing, so a cut last stage is left cut
        if last:
            pass
        elif int(cut):
            shell(["dvc", "repro", f"{stage}@{slug}"], dest, {**env, "REPROLAB_EXECUTOR": "pool"})
        else:
            shell(["dvc", "commit", "-f", f"{stage}@{slug}"], dest, env)
        finished = time.perf_counter() - t1
        stats = pstats.Stats(str(prof))
        result[stage] = {
            "profiled_s": float(seconds),
            "cut_at_cap": bool(int(cut)),
            "rest_without_profiler_s": finished if int(cut) and not last else None,
            "total_s": stats.total_tt,
            "top_own": top(stats, "own_s", 20, False),
            "project_cumulative": top(stats, "cum_s", 15, True),
        }
        state = "cut at the cap" if int(cut) else "finished"
        print(
            f"{slug} {stage}: {float(seconds):.0f} s profiled ({state}), "
            f"{time.perf_counter() - t0:.0f} s with the rest",
            flush=True,
        )
    return result


def to_markdown(slug: str, seeds: list[int], cap: int, result: dict, when: str) -> str:
    lines = [
        f"# Profile: {slug} (paper profile, seeds {seeds})",
        "",
        f"`python bench/profile_method.py {slug} --seeds {','.join(map(str, seeds))} "
        f"--seconds {cap} --stages {','.join(result)}` ({when}); cProfile in the stage process, units one after "
        "another, each stage profiled for at most the cap.",
        "",
    ]
    for stage, r in result.items():
        rest = r["rest_without_profiler_s"]
        if not r["cut_at_cap"]:
            cut = "the whole stage"
        elif rest is None:
            cut = "cut at the cap (the last stage profiled: the rest not run)"
        else:
            cut = f"cut at the cap (the rest took {rest:.0f} s without it)"
        lines += [
            f"## {stage}: {r['profiled_s']:.0f} s profiled, {cut}",
            "",
            "Top 20 by own time:",
            "",
            "| function | calls | own s | cumulative s |",
            "|---|---|---|---|",
            *(
                f"| `{x['function']}` | {x['calls']} | {x['own_s']:.2f} | {x['cum_s']:.2f} |"
                for x in r["top_own"]
            ),
            "",
            "The project's functions by cumulative time:",
            "",
            "| function | calls | cumulative s |",
            "|---|---|---|",
            *(
                f"| `{x['function']}` | {x['calls']} | {x['cum_s']:.2f} |"
                for x in r["project_cumulative"]
            ),
            "",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("slug")
    parser.add_argument("--seeds", default="0,1", help="at least 2 (params.yaml asks it)")
    parser.add_argument("--seconds", type=int, default=180, help="cap per stage")
    parser.add_argument("--stages", default="train,quantize,evaluate")
    args = parser.parse_args(argv)
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    if args.slug not in params["methods"]:
        print(
            f"profile_method: {args.slug!r} is not under methods: in params.yaml", file=sys.stderr
        )
        return 2
    stages = args.stages.split(",")
    bad = sorted(set(stages) - {"train", "quantize", "evaluate"})
    if bad or args.seconds < 1:
        print(f"profile_method: --stages {bad} / --seconds {args.seconds}", file=sys.stderr)
        return 2
    seeds = [int(s) for s in args.seeds.split(",")]
    with tempfile.TemporaryDirectory(prefix="reprolab-profile-") as tmp:
        result = profile(args.slug, seeds, stages, args.seconds, Path(tmp))
    when = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    OUT.mkdir(parents=True, exist_ok=True)
    record = {"slug": args.slug, "seeds": seeds, "cap_s": args.seconds, "when": when}
    (OUT / f"{args.slug}.json").write_text(json.dumps({**record, "stages": result}, indent=1))
    (OUT / f"{args.slug}.md").write_text(to_markdown(args.slug, seeds, args.seconds, result, when))
    print(f"wrote {OUT / args.slug}.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
