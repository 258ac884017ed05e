"""The multi-tensor optimizer step (``foreach=True``) against torch's per-tensor CPU
default, on real units of the costliest methods: the same unit trained both ways,
alternating, its wall time each way and whether the trained weights are bit-identical.

For each method a scratch copy of the project (params.yaml cut to it at the paper
profile, ``--seeds``) prepares its data; then, in this process, its trained units
(``--units`` of them, evenly spaced over the stage's list, after one untimed warm-up
unit) are trained by the method's own ``train_unit`` with torch's Adam, AdamW and SGD
forced to ``foreach=True`` and to ``foreach=False`` (whatever the method's code passes),
``--repeats`` times each, in alternation so load drift hits both. Torch runs on one thread, as a unit does on the default pool.

    python bench/bench_foreach.py [--methods ff_graphs,grokformer] [--units 3] [--repeats 3]

Writes bench/results/foreach.{json,md} after each method. Minutes per method at the paper
profile (bit_dgdm: about half an hour beside other work).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from bench_pipeline import prepared_copy  # noqa: E402

OUT = ROOT / "bench" / "results"
METHODS = ["ff_graphs", "grokformer", "bit_dgdm"]


@contextlib.contextmanager
def forced(foreach: bool):
    """torch's Adam, AdamW and SGD built with ``foreach`` whatever the caller says."""
    import torch

    saved = {}
    for name in ("Adam", "AdamW", "SGD"):
        cls = getattr(torch.optim, name)
        saved[name] = cls.__init__

        def init(self, *args, _orig=cls.__init__, **kwargs):
            kwargs["foreach"] = foreach
            _orig(self, *args, **kwargs)

        cls.__init__ = init
    try:
        yield
    finally:
        for name, orig in saved.items():
            getattr(torch.optim, name).__init__ = orig


def bench_method(slug: str, dest: Path, n_units: int, repeats: int) -> dict:
    import torch

    from reprolab.stages._common import PreparedData, context

    os.environ.pop("MLFLOW_TRACKING_URI", None)
    ctx = context(slug, "train", dest)
    hooks = ctx.hooks()
    data = PreparedData(ctx.paths)
    trained = [u for u in ctx.units(hooks, data.tasks) if ctx.spec.trains(u)]
    # evenly spaced over the stage's list, so a method's kinds of unit (ensloss's MLP
    # and CNN settings, say) are all represented
    units = trained[:: max(1, len(trained) // n_units)][:n_units]
    with tempfile.TemporaryDirectory() as resume:  # warm-up: imports, first-call costs
        hooks.train_unit(ctx.run, units[0], data[units[0].task], Path(resume), lambda _: None)
    times: dict[str, list[float]] = {"per_tensor": [], "foreach": []}
    states: dict[str, dict] = {}
    for _ in range(repeats):
        for mode in ("per_tensor", "foreach"):
            total = 0.0
            with forced(mode == "foreach"):
                for unit in units:
                    with tempfile.TemporaryDirectory() as resume:
                        t0 = time.perf_counter()
                        result = hooks.train_unit(
                            ctx.run, unit, data[unit.task], Path(resume), lambda _: None
                        )
                        total += time.perf_counter() - t0
                    states.setdefault(mode, {})[unit.id] = result.state
            times[mode].append(total)
            print(f"  {slug} {mode}: {total:.1f} s for {len(units)} unit(s)", flush=True)
    identical = all(
        all(
            torch.equal(states["per_tensor"][u][k], states["foreach"][u][k])
            for k in states["per_tensor"][u]
        )
        for u in states["per_tensor"]
    )
    before, after = statistics.median(times["per_tensor"]), statistics.median(times["foreach"])
    return {
        "method": slug,
        "units": [u.id for u in units],
        "per_tensor_s": [round(t, 2) for t in times["per_tensor"]],
        "foreach_s": [round(t, 2) for t in times["foreach"]],
        "speedup": round(before / after, 3),
        "weights_identical": identical,
    }


def write(rows: dict[str, dict]) -> None:
    """bench/results/foreach.{json,md} from every method's latest row."""
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "foreach.json").write_text(json.dumps({"rows": list(rows.values())}, indent=2) + "\n")
    lines = [
        "# Multi-tensor optimizer step vs torch's per-tensor CPU default, on real units",
        "",
        "`python bench/bench_foreach.py`: seconds to train the units (evenly spaced over the "
        "train stage's list, after an untimed warm-up unit; one torch thread), each "
        "repeat, alternating; speedup of the medians. Each row keeps when and where it "
        "was measured (rows of earlier runs are kept until a method is measured again).",
        "",
        "| method | units | per-tensor s | foreach s | speedup | weights bit-identical "
        "| measured (commit, 1-min load) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows.values():
        where = f"{r['date']} ({r['commit'][:7]}{', dirty' if r['dirty'] else ''}, {r['load']})"
        lines.append(
            f"| {r['method']} | {len(r['units'])} | {', '.join(map(str, r['per_tensor_s']))} "
            f"| {', '.join(map(str, r['foreach_s']))} | {r['speedup']}x "
            f"| {r['weights_identical']} | {where} |"
        )
    notes = [f"- {r['method']}: {r['note']}" for r in rows.values() if r.get("note")]
    if notes:
        lines += ["", *notes]
    (OUT / "foreach.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--units", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    import torch

    from reprolab.ops import scratch

    torch.set_num_threads(1)
    seeds = [int(s) for s in args.seeds.split(",")]
    commit, dirty = scratch.commit_of(ROOT)
    previous = OUT / "foreach.json"
    rows = {}
    if previous.is_file():
        rows = {r["method"]: r for r in json.loads(previous.read_text()).get("rows", [])}
    for slug in args.methods.split(","):
        with tempfile.TemporaryDirectory(prefix=f"foreach-{slug}-") as work:
            dest = Path(work) / "project"
            print(f"{slug}: preparing (paper profile, seeds {seeds}) ...", flush=True)
            prepared_copy(slug, seeds, dest)
            row = bench_method(slug, dest, args.units, args.repeats)
        row.update(
            date=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            commit=commit,
            dirty=dirty,
            load=round(os.getloadavg()[0], 2),
        )
        rows[slug] = row
        write(rows)  # a method measured is kept, whatever happens to the next
        print(f"{slug}: {row['speedup']}x, weights identical: {row['weights_identical']}")
    print((OUT / "foreach.md").read_text())
    if not all(r["weights_identical"] for r in rows.values()):
        raise SystemExit("the two optimizer paths trained different weights (see above)")


if __name__ == "__main__":
    main()
