"""What a no-op `dvc repro` costs on this project, and where the time goes.

Run it after `make run` (the smoke pipeline up to date), on an idle machine. It times
N no-op `dvc repro` and `dvc status` after one warm-up (medians, wall and CPU), records
the DAG's shape beside them (stages, dependencies, outputs, files under the outputs,
the size of dvc.lock and params.yaml), and measures each suspect of a slow no-op in
isolation, each in fresh processes:

- ``imports``: starting Python and importing what a no-op imports (dvc.cli, the repo,
  stage, output and hashing modules);
- ``collect``: loading the stages (dvc.yaml's templates over params.yaml, dvc.lock);
- ``hashing``: every stage's ``changed()`` (its deps' and outputs' hashes against
  dvc.lock, from DVC's state database), without the read/write locks;
- ``rwlock``: a whole in-process no-op with DVC's per-stage read/write lock file,
  minus the same without it (a no-op takes it 8 times per stage, rewriting the file
  16 times: measured under cProfile, 640 locks and 1,280 edits over 80 stages);
- ``no bytecode``: the no-op with no compiled bytecode at all (an empty
  PYTHONPYCACHEPREFIX), minus the no-op as installed: what a venv without compiled
  DVC modules pays on every call in a shell that sets PYTHONDONTWRITEBYTECODE.

`make bench` runs it; rerun it at every change to the DAG's shape (a test holds the
recorded shape to the current dvc.yaml and params.yaml).

    python bench/bench_noop.py [--repeats 5] [--profile] [--out bench/results/noop.json]
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

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
#: the issue's budget: a no-op `dvc repro` and a `dvc status` on the 2-core machine it
#: was set on (an AMD EPYC instance)
TARGET_REPRO_S = 1.5
TARGET_STATUS_S = 1.0
#: the ``imports`` suspect (a fresh Python importing what a no-op imports: DVC's CLI,
#: repo, stage, output and hashing modules, none of this project's) on that machine,
#: measured with the budget (bench/results/noop.json at 4bcc1ac, 2026-12-07T07:41)
REFERENCE_IMPORTS_S = 0.2087


def machine_factor(imports_s: float) -> float:
    """How much slower this machine runs the same fixed work than the machine the budget
    was set on (>= 1: a faster machine keeps the budget as set). Project runs land on
    different 2-core hardware; the budget is held in that machine's terms, so a slower
    CPU does not read as a regression and a faster one does not hide one."""
    return max(1.0, imports_s / REFERENCE_IMPORTS_S)


#: one suspect, run in a fresh process: prints the seconds of the named phase
PHASES = r"""
import sys, time, contextlib
phase = sys.argv[1]
t0 = time.perf_counter()
import dvc.cli, dvc.repo, dvc.repo.reproduce, dvc.stage, dvc.output
import dvc_data.hashfile.build, networkx
from dvc.repo import Repo
t1 = time.perf_counter()
if phase == "imports":
    print(t1 - t0); raise SystemExit
if phase in ("lock", "nolock"):
    if phase == "nolock":
        import dvc.rwlock
        @contextlib.contextmanager
        def _free(*args, **kwargs):
            yield
        dvc.rwlock.rwlock = _free
    from dvc.cli import main
    t = time.perf_counter()
    assert main(["repro", "-q"]) == 0
    print(time.perf_counter() - t); raise SystemExit
repo = Repo(".")
with repo.lock:
    t = time.perf_counter()
    stages = list(repo.index.stages)
    t2 = time.perf_counter()
    if phase == "collect":
        print(t2 - t); raise SystemExit
    import dvc.rwlock
    @contextlib.contextmanager
    def _free(*args, **kwargs):
        yield
    dvc.rwlock.rwlock = _free
    changed = [s for s in stages if s.changed()]
    assert not changed, f"not a no-op: {changed}"
    print(time.perf_counter() - t2)
"""


def timed(cmd: list[str], env: dict | None = None) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(
            f"bench_noop: `{' '.join(cmd[2:])}` failed ({proc.returncode}):\n{proc.stderr[-2000:]}"
        )
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout


def phase(name: str, repeats: int) -> float:
    """Median seconds of one suspect's phase, each run in a fresh process."""
    values = []
    for _ in range(repeats):
        out = subprocess.run(
            [PY, "-c", PHASES, name], cwd=ROOT, capture_output=True, text=True, check=False
        )
        if out.returncode != 0:
            raise SystemExit(f"bench_noop: phase {name} failed:\n{out.stderr[-2000:]}")
        values.append(float(out.stdout.strip().splitlines()[-1]))
    return statistics.median(values)


def shape() -> dict[str, int]:
    """The DAG's shape as DVC resolves it (dvc.yaml's templates over params.yaml): the
    counts a regression of the no-op is read against."""
    from dvc.repo import Repo

    repo = Repo(str(ROOT))
    stages = list(repo.index.stages)
    outs = [o for s in stages for o in s.outs]
    files = 0
    for out in outs:
        path = Path(out.fs_path)
        files += sum(1 for p in path.rglob("*") if p.is_file()) if path.is_dir() else 1
    return {
        "stages": len(stages),
        "deps": sum(len(s.deps) for s in stages),
        "outs": len(outs),
        "files_in_outs": files,
        "dvc_lock_lines": len((ROOT / "dvc.lock").read_text().splitlines()),
        "params_yaml_lines": len((ROOT / "params.yaml").read_text().splitlines()),
    }


def profile_table(top: int = 25) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "noop.prof"
        subprocess.run(
            [PY, "-m", "cProfile", "-o", str(out), "-m", "dvc", "repro", "-q"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        text = io.StringIO()
        stats = pstats.Stats(str(out), stream=text)
        stats.sort_stats("cumulative").print_stats(r"dvc|rwlock|ruamel|voluptuous", top)
        return text.getvalue().replace(str(Path(PY).parents[1]), "<venv>").strip()


def markdown(result: dict, profile: str | None) -> str:
    s = result["suspects_s"]
    lines = [
        "# A no-op `dvc repro` on this project",
        "",
        f"`python bench/bench_noop.py` at {result['commit']} ({result['when']}; median of "
        f"{result['repeats']} after a warm-up; 1-min load average before "
        f"{result['load_average'][0]:.2f}; CPU {result['cpu_model']}). Targets: `dvc repro` <= "
        f"{TARGET_REPRO_S} s, `dvc status` <= {TARGET_STATUS_S} s on the machine they were set "
        f"on, times {result['machine_factor']:.2f} here (the `imports` suspect, "
        f"{result['suspects_s']['imports']:.3f} s, against its {REFERENCE_IMPORTS_S} s there).",
        "",
        "| command | wall s | CPU s | target s | pass |",
        "|---|---|---|---|---|",
        f"| `dvc repro` (no-op) | {result['median_s']:.2f} | {result['median_cpu_s']:.2f} | "
        f"{result['target_s']:.2f} | {result['pass_repro']} |",
        f"| `dvc status` | {result['status_median_s']:.2f} | "
        f"{result['status_median_cpu_s']:.2f} | {result['status_target_s']:.2f} | "
        f"{result['pass_status']} |",
        "",
        "The DAG's shape beside it:",
        "",
        "| stages | deps | outs | files in outs | dvc.lock lines | params.yaml lines |",
        "|---|---|---|---|---|---|",
        "| {stages} | {deps} | {outs} | {files_in_outs} | {dvc_lock_lines} | "
        "{params_yaml_lines} |".format(**result["shape"]),
        "",
        "Each suspect in isolation (median seconds, fresh processes):",
        "",
        "| suspect | s |",
        "|---|---|",
        f"| imports (Python start-up and the modules a no-op imports) | {s['imports']:.2f} |",
        f"| collecting the stages (dvc.yaml over params.yaml, dvc.lock) | {s['collect']:.2f} |",
        f"| hashing every stage's deps and outputs against dvc.lock | {s['hashing']:.2f} |",
        f"| DVC's per-stage read/write lock file (in-process no-op with it "
        f"{s['repro_with_rwlock']:.2f}, without {s['repro_without_rwlock']:.2f}) | "
        f"{s['rwlock']:.2f} |",
        f"| no compiled bytecode (every module compiled from source on each call: "
        f"{s['repro_no_bytecode']:.2f} s) | {s['no_bytecode']:.2f} |",
        "",
    ]
    if profile:
        lines += [
            "One no-op under cProfile (cumulative, DVC's functions):",
            "",
            "```",
            profile,
            "```",
            "",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="add a cProfile table")
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/noop.json")
    args = parser.parse_args(argv)
    if not (ROOT / "dvc.lock").is_file():
        print("bench_noop: no dvc.lock: run `make run` first", file=sys.stderr)
        return 2
    load = list(os.getloadavg())
    dvc = [PY, "-m", "dvc"]
    _, _, status = timed([*dvc, "status"])
    if "up to date" not in status:
        print(
            "bench_noop: the pipeline is not up to date (`dvc status` lists changes): "
            "run `make run` first, so the timed runs are no-ops",
            file=sys.stderr,
        )
        return 2
    print("bench_noop: warm-up, then the timed no-ops", flush=True)
    timed([*dvc, "repro"])
    repro = []
    for i in range(args.repeats):
        wall, cpu, out = timed([*dvc, "repro"])
        if "Running stage" in out:
            raise SystemExit("bench_noop: a timed `dvc repro` ran a stage: not a no-op")
        repro.append((wall, cpu))
        print(f"  dvc repro {i + 1}: {wall:.2f} s ({cpu:.2f} s CPU)", flush=True)
    stat = [timed([*dvc, "status"])[:2] for _ in range(args.repeats)]
    print("bench_noop: the suspects, each in fresh processes", flush=True)
    with tempfile.TemporaryDirectory(prefix="reprolab-nopyc-") as empty:
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": empty}
        no_pyc = statistics.median(timed([*dvc, "repro"], env=env)[0] for _ in range(3))
    with_lock, without_lock = phase("lock", args.repeats), phase("nolock", args.repeats)
    med_repro = statistics.median(w for w, _ in repro)
    suspects = {
        "imports": phase("imports", args.repeats),
        "collect": phase("collect", args.repeats),
        "hashing": phase("hashing", args.repeats),
        "repro_with_rwlock": with_lock,
        "repro_without_rwlock": without_lock,
        "rwlock": with_lock - without_lock,
        "repro_no_bytecode": no_pyc,
        "no_bytecode": no_pyc - med_repro,
    }
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    med_status = statistics.median(w for w, _ in stat)
    factor = machine_factor(suspects["imports"])
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        "unknown",
    )
    result = {
        "commit": commit,
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "repeats": args.repeats,
        "runs_s": [w for w, _ in repro],
        "median_s": med_repro,
        "median_cpu_s": statistics.median(c for _, c in repro),
        "status_runs_s": [w for w, _ in stat],
        "status_median_s": med_status,
        "status_median_cpu_s": statistics.median(c for _, c in stat),
        "cpu_model": cpu,
        "machine_factor": factor,
        "target_s": TARGET_REPRO_S * factor,
        "status_target_s": TARGET_STATUS_S * factor,
        "pass_repro": med_repro <= TARGET_REPRO_S * factor,
        "pass_status": med_status <= TARGET_STATUS_S * factor,
        "load_average": load,
        "shape": shape(),
        "suspects_s": suspects,
    }
    text = markdown(result, profile_table() if args.profile else None)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
