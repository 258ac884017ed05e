"""ensloss, MLP setting, exponential loss: one unit trained with and without the gradient
clipping of the official recipe (``clip_exp``), and whether its weights stay finite.

The unit is the one whose NaN weights stopped the confirmatory run of registration
2026-12-07-727f32e8 in its quantize stage (``mnist-0v5__exp__s1001``, paper profile).
The bench prepares the method's data in a scratch copy of the project (params.yaml cut
to ensloss at the paper profile, seeds [1000, 1001]) and trains that unit twice, in-process:
``clip_exp = 0`` (the config before the amendment) and the committed value. It is the
committed evidence for the amendment's reason (a training signal, not a claim's result).

    python bench/bench_ensloss_clip.py [--unit mnist-0v5__exp__s1001] [--seed 1001]

About a minute on two cores (preparing MNIST included).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from bench_pipeline import prepared_copy  # noqa: E402

OUT = ROOT / "bench" / "results"


def train_once(dest: Path, unit_id: str, clip: float | None) -> dict:
    import torch

    from reprolab.stages._common import PreparedData, context

    ctx = context("ensloss", "train", dest)
    hooks = ctx.hooks()
    data = PreparedData(ctx.paths)
    run = ctx.run
    if clip is not None:
        run = dataclasses.replace(run, cfg=run.cfg.model_copy(update={"clip_exp": clip}))
    found = [u for u in hooks.units(run, data.tasks) if u.id == unit_id]
    if not found:
        raise SystemExit(f"no unit {unit_id!r} in ensloss at the paper profile")
    unit = found[0]
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as resume:
        result = hooks.train_unit(run, unit, data[unit.task], Path(resume), lambda _: None)
    seconds = time.perf_counter() - t0
    bad = [
        name
        for name, t in result.state.items()
        if t.is_floating_point() and not bool(torch.isfinite(t).all())
    ]
    return {
        "clip_exp": run.cfg.clip_exp,
        "weights_finite": not bad,
        "non_finite_tensors": bad,
        "train_s": round(seconds, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--unit", default="mnist-0v5__exp__s1001")
    ap.add_argument("--seed", type=int, default=1001)
    args = ap.parse_args()

    from reprolab.ops import scratch

    commit, dirty = scratch.commit_of(ROOT)
    with tempfile.TemporaryDirectory(prefix="ensloss-clip-") as work:
        print("preparing ensloss (paper profile) in a scratch copy ...", flush=True)
        dest = prepared_copy("ensloss", [args.seed - 1, args.seed], Path(work) / "project")
        os.environ.pop("MLFLOW_TRACKING_URI", None)
        rows = []
        for clip in (0.0, None):
            row = train_once(dest, args.unit, clip)
            print(row, flush=True)
            rows.append(row)
    record = {
        "unit": args.unit,
        "commit": commit,
        "dirty": dirty,
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "rows": rows,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "ensloss_clip.json").write_text(json.dumps(record, indent=2) + "\n")
    lines = [
        f"# ensloss: `{args.unit}` trained without and with `clip_exp`",
        "",
        f"`python bench/bench_ensloss_clip.py` ({record['date']}, commit {commit[:7]}"
        + (", uncommitted changes" if dirty else "")
        + ")",
        "",
        "| clip_exp | weights finite | non-finite tensors | train s |",
        "|---|---|---|---|",
    ]
    for r in rows:
        names = ", ".join(r["non_finite_tensors"]) or "none"
        lines.append(f"| {r['clip_exp']:g} | {r['weights_finite']} | {names} | {r['train_s']} |")
    (OUT / "ensloss_clip.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
