"""quantize@<slug>: post-training quantization of every trained unit.

Writes data/quantized/<slug>/<unit>.<scheme>.pt plus quantized.json. For a method whose
trained object is not a network, the method's spec states why quantization does not
apply and that reason is the stage's output, so the DAG stays uniform.
"""

from __future__ import annotations

import time
from pathlib import Path

import torch

from reprolab.core import io
from reprolab.core.threads import set_threads
from reprolab.core.tracking import log
from reprolab.stages._common import PreparedData, context, read_units


def run(slug: str, root: Path) -> dict:
    ctx = context(slug, "quantize", root)
    quant_spec = ctx.spec.quantization
    out = ctx.paths.quantized
    if not quant_spec.applies:
        tracker = ctx.tracker(inputs=[ctx.paths.checkpoints])
        try:
            with io.atomic_dir(out) as tmp:
                io.write_json(
                    tmp / "quantized.json", {"applies": False, "reason": quant_spec.reason}
                )
            tracker.set_tags(tracker.run_id, {"reprolab.quantization": "not applicable"})
            log(f"quantize@{slug}: not applicable ({quant_spec.reason})")
        finally:
            tracker.finish(True)
        return {"applies": False}

    from reprolab.core import quant

    schemes = [quant.check_scheme(s) for s in quant_spec.schemes]
    units = read_units(ctx.paths.checkpoints, "train", slug)
    data = PreparedData(ctx.paths)
    hooks = ctx.hooks()
    set_threads()
    tracker = ctx.tracker(inputs=[ctx.paths.checkpoints])
    ok = False
    started = time.perf_counter()
    try:
        sizes: dict[str, int] = {}
        with io.atomic_dir(out) as tmp:
            for i, unit in enumerate(units, 1):
                ckpt = torch.load(ctx.paths.checkpoints / f"{unit.id}.pt", weights_only=True)
                model = hooks.restore(unit, ctx.cfg, data[unit.task], ckpt["state"])
                for scheme in schemes:
                    qmodel = quant.quantize(model, scheme)
                    torch.save(qmodel.state_dict(), tmp / f"{unit.id}.{scheme}.pt")
                    sizes[scheme] = quant.state_bytes(qmodel)
                sizes["fp32"] = quant.state_bytes(model)
                if i % 25 == 0 or i == len(units):
                    log(f"quantize@{slug}: {i}/{len(units)} units")
            io.write_json(
                tmp / "quantized.json",
                {
                    "applies": True,
                    "schemes": schemes,
                    "units": [u.id for u in units],
                    "bytes": sizes,
                },
            )
        wall = time.perf_counter() - started
        tracker.log_metrics(
            tracker.run_id,
            {"quantize_seconds": wall, **{f"bytes_{k}": float(v) for k, v in sizes.items()}},
        )
        ok = True
        return {"units": len(units), "schemes": schemes, "seconds": wall}
    finally:
        tracker.finish(ok)
