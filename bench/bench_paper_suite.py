"""One round of the paper profile, method by method, with the units one after another
(``REPROLAB_EXECUTOR=local``, torch on every core: the setting before the pool) and on
the default pool of single-threaded processes: wall time, compute and speedup per
method, and the full suite projected from them.

Each (method, executor) runs in its own scratch copy of the project (the committed code,
params.yaml cut to the method at the paper profile and ``--seeds``), one after the other
in alternation, so load drift hits both: ``dvc repro`` of the method's chain, no stage
worker in either. Compute is what a paper run counts (units' training, quantize and
evaluate seconds: ``running.paper._round_minutes``). The two executors must give the
same verdicts and the same metrics to 1e-6 (the pool's units run on one thread, which
changes the last bits of convolution weights only); the bench says where they differ.

The projection scales each method's measured wall by the rounds and seeds of its
committed paper run (docs/results/<slug>/run.json: the seeds each round added), linear
in seeds, which undercounts fixed costs and overcounts units a round reuses.

    python bench/bench_paper_suite.py [--methods desk_reject,ensloss] [--seeds 0,1]
        [--out bench/results/paper_suite.json]

Run it alone on an idle machine: it takes about the sum of the methods' compute.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
MODES = {"local": {"REPROLAB_EXECUTOR": "local"}, "pool": {"REPROLAB_EXECUTOR": "pool"}}


def run_once(slug: str, seeds: list[int], mode: str, work: Path) -> dict:
    from reprolab.evidence.running.paper import _round_minutes
    from reprolab.ops import scratch

    dest = work / f"{slug}-{mode}"
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    scratch.copy_project(ROOT, dest, scratch.cut_params(params, [slug], seeds, "paper"))
    env = {
        **os.environ,
        **MODES[mode],
        "REPROLAB_WORKER": "off",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    env.pop("REPROLAB_THREADS", None)
    env.pop("MLFLOW_TRACKING_URI", None)
    t0 = time.perf_counter()
    proc = subprocess.run(["dvc", "repro"], cwd=dest, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{slug} ({mode}): dvc repro failed\n{proc.stderr[-3000:]}")
    claims = json.loads((dest / "data/eval" / slug / "claims.json").read_text())
    metrics = json.loads((dest / "data/eval" / slug / "metrics.json").read_text())
    return {
        "wall_s": wall,
        "compute_min": _round_minutes(dest / "data/runtime" / slug),
        "verdicts": {f"{c['id']}[{c['precision']}]": c["verdict"] for c in claims},
        # the per-variant metric means; "efficiency" holds latencies, which are timings
        "metrics": metrics.get("variants", {}),
    }


def same_metrics(a, b, tol: float = 1e-6) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_metrics(a[k], b[k], tol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_metrics(x, y, tol) for x, y in zip(a, b, strict=True))
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(a, b, rel_tol=tol, abs_tol=tol) or (math.isnan(a) and math.isnan(b))
    return a == b


def projected_seeds(slug: str) -> int:
    """Seed-units of the committed paper run: the sum over its rounds of the seeds each
    round ran (a round trains only the seeds it adds)."""
    run = json.loads((ROOT / "docs/results" / slug / "run.json").read_text())
    rounds = run.get("rounds") or []
    done: set[int] = set()
    total = 0
    for r in rounds:
        new = [s for s in r.get("seeds", []) if s not in done]
        total += len(new)
        done.update(new)
    return total or len(run.get("seeds") or [])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", default="", help="comma-separated (default: all)")
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/paper_suite.json")
    args = parser.parse_args(argv)
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    methods = [m for m in args.methods.split(",") if m] or list(params["methods"])
    unknown = [m for m in methods if m not in params["methods"]]
    if unknown:
        print(f"bench_paper_suite: unknown method(s) {unknown}", file=sys.stderr)
        return 2
    seeds = [int(s) for s in args.seeds.split(",")]
    # the suite is measured a method or a few at a time: rows of methods not rerun now are
    # kept from the last record at the same seeds, each with its own date and commit
    rows = {}
    if args.out.is_file():
        before = json.loads(args.out.read_text())
        if before.get("seeds") == seeds:
            rows = {m: r for m, r in before.get("methods", {}).items() if m not in methods}
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="reprolab-suite-") as tmp:
        for i, slug in enumerate(methods, 1):
            results = {}
            # alternate which executor goes first, so drift does not favour one
            for mode in ("local", "pool") if i % 2 else ("pool", "local"):
                print(f"[{i}/{len(methods)}] {slug}: {mode} ...", flush=True)
                results[mode] = run_once(slug, seeds, mode, Path(tmp))
                print(
                    f"  {slug} {mode}: {results[mode]['wall_s']:.0f} s wall, "
                    f"{results[mode]['compute_min']:.1f} min compute",
                    flush=True,
                )
            local, pool = results["local"], results["pool"]
            scale = projected_seeds(slug) / len(seeds)
            rows[slug] = {
                "local_wall_s": local["wall_s"],
                "pool_wall_s": pool["wall_s"],
                "speedup": local["wall_s"] / pool["wall_s"],
                "local_compute_min": local["compute_min"],
                "pool_compute_min": pool["compute_min"],
                "same_verdicts": local["verdicts"] == pool["verdicts"],
                "same_metrics": same_metrics(local["metrics"], pool["metrics"]),
                "projected_local_min": local["wall_s"] * scale / 60,
                "projected_pool_min": pool["wall_s"] * scale / 60,
                "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "commit": commit,
                "load_average_after": list(os.getloadavg()),
            }
    total = {k: sum(r[k] for r in rows.values()) for k in ("local_wall_s", "pool_wall_s")}
    proj = {
        k: sum(r[k] for r in rows.values()) for k in ("projected_local_min", "projected_pool_min")
    }
    out = {
        "seeds": seeds,
        "methods": rows,
        "total_wall_s": total,
        "suite_speedup": total["local_wall_s"] / total["pool_wall_s"],
        "projected_suite_min": proj,
        "load_average_after": list(os.getloadavg()),
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    lines = [
        "# One paper-profile round per method: units one after another vs on the pool",
        "",
        f"`python bench/bench_paper_suite.py --seeds {args.seeds} --methods <m>`: each "
        "method's chain in a fresh scratch copy, both executors one after the other "
        "(`local`: units one after another, torch on every core, the setting before the "
        "pool; `pool`: train and evaluate units on single-threaded forked processes); each "
        "row measured on its date and commit, on an otherwise idle machine.",
        "",
        "| method | local wall s | pool wall s | speedup | compute min (local, pool) | "
        "verdicts same | metrics same (1e-6) | projected full run min (local, pool) | "
        "measured (commit) |",
        "|---|---|---|---|---|---|---|---|---|",
        *(
            f"| {m} | {r['local_wall_s']:.0f} | {r['pool_wall_s']:.0f} | {r['speedup']:.2f}x | "
            f"{r['local_compute_min']:.1f}, {r['pool_compute_min']:.1f} | {r['same_verdicts']} | "
            f"{r['same_metrics']} | {r['projected_local_min']:.0f}, {r['projected_pool_min']:.0f} | "
            f"{r.get('when', out['when'])[:16]} ({r.get('commit', '?')}) |"
            for m, r in sorted(rows.items())
        ),
        "",
        f"Total: {total['local_wall_s'] / 60:.1f} min -> {total['pool_wall_s'] / 60:.1f} min "
        f"({out['suite_speedup']:.2f}x). Projected full paper suite (rounds and seeds of "
        f"each committed run, linear in seeds): {proj['projected_local_min'] / 60:.1f} h -> "
        f"{proj['projected_pool_min'] / 60:.1f} h.",
        "",
    ]
    args.out.with_suffix(".md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
