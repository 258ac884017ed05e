"""What the scratch copy's stage worker saves `make paper`: one paper run of a small
method with the rounds' stages forked from a worker preloaded in the copy (the default)
and one with every stage in its own process (``REPROLAB_WORKER=off``).

The run is that of the paper-rounds test at a real size: ``--method`` (default
w2s_bregman) at the paper profile (its paper defaults, under params.yaml's smoke
overrides: for w2s_bregman 20 tasks, 100 units a seed), first look on seeds 0-2, one
seed added per round up to 5 (three rounds of ``dvc repro`` of six stages). ``--tiny``
runs the method's test config instead (``SPEC.test_overrides``, the paper-rounds test's
size), where the stages' start-up is most of the time.
Each mode runs on a fresh copy of the project, ``--repeats`` times in alternation, so
load drift hits both; the saving is the ratio of the median wall times. Both modes must
give the same verdicts and values (the worker changes where a stage runs, not what it
computes); the bench fails otherwise. Results: bench/results/paper_worker.{json,md}.

Run it on an otherwise idle core:

    taskset -c 1 python bench/bench_paper_worker.py [--repeats 2] [--method w2s_bregman] [--tiny]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "src"))

from bench_pipeline import load_average, log, machine_info  # noqa: E402

MODES = {"copy worker": "on", "in-process": "off"}


def paper_params(method: str, tiny: bool) -> dict:
    """params.yaml cut to ``method`` (and the assets it reads), its smoke overrides (or,
    ``tiny``, its test config) as its paper overrides, a small evidence plan."""
    from reprolab import registry

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    section = dict(params["methods"][method])
    overrides = registry.get(method).test_overrides if tiny else section.get("smoke")
    section["paper"] = dict(overrides or {})
    wanted = set(getattr(registry.get(method), "assets", ()))
    assets = params.get("assets") or {}
    kept = {k: v for k, v in assets.items() if k in wanted} or dict(list(assets.items())[:1])
    return {
        **params,
        "profile": "smoke",
        "methods": {method: section},
        "assets": kept,
        "seeds": {**params["seeds"], "paper": [0, 1, 2]},
        "evidence": {"smoke": {}, "paper": {"step": 1, "max_seeds": 5, "budget_minutes": 60}},
    }


def one_run(method: str, mode: str, base: Path, tiny: bool) -> dict:
    from reprolab.evidence.running.paper import PaperRun
    from reprolab.ops.scratch import copy_project

    root = base / "project"
    copy_project(ROOT, root, paper_params(method, tiny), link_raw=False)
    # a first paper run of this config: no ledger entries, committed like the copy
    (root / "docs" / "results" / "ledger" / f"{method}.jsonl").unlink(missing_ok=True)
    subprocess.run(["git", "commit", "-qam", "bench: first paper run"], cwd=root, check=True)
    saved = os.environ.get("REPROLAB_WORKER")
    os.environ["REPROLAB_WORKER"] = mode
    os.environ.pop("REPROLAB_WORKER_SOCKET", None)
    try:
        t0 = time.perf_counter()
        state = PaperRun(root, [method], out=base / "out", work=base / "work", log=log).run()
        wall = time.perf_counter() - t0
    finally:
        if saved is None:
            os.environ.pop("REPROLAB_WORKER", None)
        else:
            os.environ["REPROLAB_WORKER"] = saved
    claims = json.loads((base / "out" / method / "claims.json").read_text())
    run = json.loads((base / "out" / method / "run.json").read_text())
    return {
        "wall_s": round(wall, 2),
        "rounds": len(state[method].rounds),
        "dvc_repro_s": round(run["dvc_repro_seconds_all_methods"], 2),
        "results": sorted(
            (c["id"], c["precision"], c["verdict"], (c.get("measured") or {}).get("value"))
            for c in claims
        ),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--method", default="w2s_bregman")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--tiny", action="store_true", help="the method's test config")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    name = "paper_worker_tiny.json" if args.tiny else "paper_worker.json"
    args.out = args.out or ROOT / "bench" / "results" / name
    from reprolab import registry

    registry.check_slug(args.method)
    before = load_average()
    runs: dict[str, list[dict]] = {name: [] for name in MODES}
    for repeat in range(args.repeats):
        for name, mode in MODES.items():
            log(f"repeat {repeat + 1}/{args.repeats}: {name}")
            with tempfile.TemporaryDirectory(prefix="bench-paper-") as tmp:
                runs[name].append(one_run(args.method, mode, Path(tmp), args.tiny))
            log(f"  {runs[name][-1]['wall_s']:.1f} s, {runs[name][-1]['rounds']} rounds")
    results = {r["results"].__repr__() for rs in runs.values() for r in rs}
    if len(results) != 1:
        raise SystemExit("the two modes gave different verdicts or values: see the runs")
    median = {name: statistics.median(r["wall_s"] for r in rs) for name, rs in runs.items()}
    out = {
        "method": args.method,
        "config": "test (tiny)" if args.tiny else "paper profile, smoke overrides",
        "machine": machine_info(threads=len(os.sched_getaffinity(0)), pipeline_threads=None),
        "load_before": before,
        "load_after": load_average(),
        "median_wall_s": median,
        "speedup": round(median["in-process"] / median["copy worker"], 2),
        "same_results": True,
        "runs": {
            name: [{k: v for k, v in r.items() if k != "results"} for r in rs]
            for name, rs in runs.items()
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    rounds = runs["copy worker"][0]["rounds"]
    lines = [
        "# `make paper`: stages forked from the copy's worker vs in-process",
        "",
        f"`bench/bench_paper_worker.py --repeats {args.repeats}{' --tiny' if args.tiny else ''}`:"
        f" {args.method} at "
        f"{'its test config' if args.tiny else 'the paper profile under its smoke overrides'}, "
        f"{rounds} rounds (seeds 0-2, one added per round), "
        f"on {out['machine'].get('cpu_model') or 'this CPU'}.",
        "",
        "| mode | median wall (s) | runs (s) |",
        "|---|---|---|",
        *(
            f"| {name} | {median[name]:.1f} | {', '.join(str(r['wall_s']) for r in rs)} |"
            for name, rs in runs.items()
        ),
        "",
        f"In-process / copy worker: **{out['speedup']}x**; verdicts and values identical in "
        "every run.",
        "",
    ]
    args.out.with_suffix(".md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
