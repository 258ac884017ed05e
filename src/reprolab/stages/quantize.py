"""quantize@<slug>: post-training quantization of every trained unit.

Writes data/quantized/<slug>/<unit>.<scheme>.pt (the first unit's state whole, the
others as what differs from it: units tuned from one pretrained model share most
layers) plus quantized.json: per scheme the
serialized and effective bytes, whether a real low-bit kernel runs it, its coverage (the
share of the model's parameters it really quantized, summed over units, and the module
types left at full precision), the relative output error of every quantized layer on
the calibration inputs (mean over units). The time quantizing took differs on every
run: it goes to MLflow and data/runtime/<slug>/quantize.json, not into the versioned
output. The schemes are
``methods.<slug>.<profile>.quantization`` in params.yaml, else the method's default.
For a method whose trained object is not a network, the method's spec states why
quantization does not apply and that reason is the stage's output, so the DAG stays
uniform.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch

from reprolab.core import io
from reprolab.core.progress import Progress
from reprolab.core.threads import set_threads
from reprolab.core.tracking import log
from reprolab.stages._common import PreparedData, context, read_units


class QuantizeError(RuntimeError):
    """A unit that could not be quantized; the message names it and what was found."""


def _unit_failure(slug: str, unit: str, scheme: str, model: torch.nn.Module, exc: Exception) -> str:
    """What to say when quantizing ``unit`` under ``scheme`` failed: the unit, the
    error, and whether its trained weights are finite (a diverged training run gives
    NaN or inf weights, which no quantizer can take)."""
    bad = [
        name
        for name, t in (*model.named_parameters(), *model.named_buffers())
        if t.is_floating_point() and not bool(torch.isfinite(t).all())
    ]
    why = (
        f"its checkpoint has non-finite weights in {len(bad)} tensor(s) ({', '.join(bad[:3])}"
        f"{', ...' if len(bad) > 3 else ''}): its training diverged; see its train history"
        if bad
        else "its weights are finite"
    )
    return f"quantize@{slug}: unit {unit}, scheme {scheme}: {type(exc).__name__}: {exc}; {why}"


def run(slug: str, root: Path) -> dict:
    ctx = context(slug, "quantize", root)
    ctx.assets()  # a missing or corrupt asset is named before any compute
    schemes = list(ctx.spec.schemes(ctx.cfg))
    out = ctx.paths.quantized
    if not schemes:
        reason = ctx.spec.quantization.reason or "no quantization scheme selected in params.yaml"
        tracker = ctx.tracker(inputs=[ctx.paths.checkpoints])
        try:
            with io.atomic_dir(out) as tmp:
                io.write_json(tmp / "quantized.json", {"applies": False, "reason": reason})
            tracker.set_tags(tracker.run_id, {"reprolab.quantization": "not applicable"})
            log(f"quantize@{slug}: not applicable ({reason})")
        finally:
            tracker.finish(True)
        return {"applies": False}

    from reprolab.core import quant

    parsed = [quant.parse(s) for s in schemes]
    keep = ctx.spec.quantization.keep_fp32
    hooks = ctx.hooks()
    if any(p.needs_calibration for p in parsed) and not (
        hasattr(hooks, "calibration_inputs") or hasattr(hooks, "example_input")
    ):
        raise ValueError(
            f"quantize@{slug}: scheme(s) {[p.name for p in parsed if p.needs_calibration]} "
            "calibrate thresholds, but the method has neither calibration_inputs nor "
            "example_input"
        )
    units = read_units(ctx.paths.checkpoints, "train", slug)
    data = PreparedData(ctx.paths)
    set_threads()
    tracker = ctx.tracker(inputs=[ctx.paths.checkpoints])
    ok = False
    started = time.perf_counter()
    try:
        sizes: dict[str, dict[str, int]] = {}
        layer_err: dict[str, dict[str, list[float]]] = {s: {} for s in schemes}
        seconds = dict.fromkeys(schemes, 0.0)
        covered = {
            s: {"quantized_parameters": 0, "parameters": 0, "share": 0.0, "full_precision": {}}
            for s in schemes
        }
        # the first unit's state of each scheme is stored whole, the others as what
        # differs from it (quant.save_state): LoRA units share all but a few layers
        bases: dict[str, quant.SharedBase | None] = dict.fromkeys(schemes)
        stored: dict[str, int] = {}
        with io.atomic_dir(out) as tmp:
            # a line every REPROLAB_PROGRESS_SECONDS (25 s): a unit can take minutes
            with Progress(f"quantize@{slug}", len(units)) as progress:
                for i, unit in enumerate(units, 1):
                    progress.working_on(unit.id)
                    ckpt = torch.load(ctx.paths.checkpoints / f"{unit.id}.pt", weights_only=True)
                    task_data = data[unit.task]
                    model = hooks.restore(ctx.run, unit, task_data, ckpt["state"])
                    calib = _calibration(hooks, ctx.run, unit, task_data, model)
                    sizes.setdefault(
                        "fp32",
                        {
                            "bytes": quant.state_bytes(model),
                            "effective_bytes": quant.effective_bytes(model),
                        },
                    )
                    thresholds = None  # calibrated once per unit, shared by the schemes
                    # the full-precision layers' outputs, shared by the schemes' errors
                    reference = quant.layer_outputs(model, calib) if calib else None
                    try:
                        for scheme, parsed_scheme in zip(schemes, parsed, strict=True):
                            t0 = time.perf_counter()
                            if parsed_scheme.needs_calibration and thresholds is None and calib:
                                thresholds = quant.calibrate_thresholds(model, calib)
                            qmodel = quant.quantize(
                                model,
                                scheme,
                                calibration=calib,
                                thresholds=thresholds,
                                keep_fp32=keep,
                            )
                            seconds[scheme] += time.perf_counter() - t0
                            _add_coverage(covered[scheme], quant.coverage(model, qmodel))
                            target = tmp / f"{unit.id}.{scheme}.pt"
                            bases[scheme] = quant.save_state(
                                qmodel.state_dict(), target, bases[scheme]
                            )
                            stored[scheme] = stored.get(scheme, 0) + target.stat().st_size
                            sizes.setdefault(
                                scheme,
                                {
                                    "bytes": quant.state_bytes(qmodel),
                                    "effective_bytes": quant.effective_bytes(qmodel),
                                },
                            )
                            if calib:
                                for layer, err in quant.layer_errors(
                                    model, qmodel, calib, reference
                                ).items():
                                    layer_err[scheme].setdefault(layer, []).append(err)
                    except Exception as exc:  # one unit's failure, said with what it is
                        raise QuantizeError(
                            _unit_failure(slug, unit.id, scheme, model, exc)
                        ) from exc
                    progress.advance()
                    if i % 25 == 0 or i == len(units):
                        log(f"quantize@{slug}: {i}/{len(units)} units")
            errors = {
                scheme: {layer: float(np.mean(v)) for layer, v in by_layer.items()}
                for scheme, by_layer in layer_err.items()
            }
            io.write_json(
                tmp / "quantized.json",
                {
                    "applies": True,
                    "schemes": schemes,
                    "units": [u.id for u in units],
                    "sizes": sizes,
                    "real_kernel": {p.name: p.real_kernel for p in parsed},
                    "coverage": covered,
                    "layer_relative_error": errors,
                    # bytes on disk for all units, each state stored as what differs
                    # from the first unit's (quant.save_state)
                    "stored_bytes": stored,
                },
            )
        wall = time.perf_counter() - started
        # timings differ on every run: kept out of the versioned quantized.json
        io.write_json(
            ctx.paths.runtime / "quantize.json",
            {"quantize_seconds": seconds, "wall_seconds": wall, "mlflow_run_id": tracker.run_id},
        )
        metrics = {"quantize_seconds": wall}
        for scheme in schemes:
            metrics[f"{scheme}.quantize_seconds"] = seconds[scheme]
            per_layer = list(errors[scheme].values()) or [float("nan")]
            metrics[f"{scheme}.layer_error_mean"] = float(np.mean(per_layer))
            metrics[f"{scheme}.layer_error_max"] = float(np.max(per_layer))
            metrics[f"{scheme}.coverage"] = covered[scheme]["share"]
        for precision, entry in sizes.items():
            metrics[f"{precision}.bytes"] = float(entry["bytes"])
            metrics[f"{precision}.effective_bytes"] = float(entry["effective_bytes"])
        tracker.log_metrics(tracker.run_id, metrics)
        for scheme in schemes:
            log(
                f"quantize@{slug}: {scheme}: {sizes[scheme]['effective_bytes']} effective bytes "
                f"(fp32 {sizes['fp32']['effective_bytes']}), mean layer error "
                f"{metrics[f'{scheme}.layer_error_mean']:.4f}, {seconds[scheme]:.2f} s, "
                f"{covered[scheme]['share']:.1%} of parameters quantized"
                + _kept_note(covered[scheme]["full_precision"])
            )
        ok = True
        return {"units": len(units), "schemes": schemes, "seconds": wall}
    finally:
        tracker.finish(ok)


def _add_coverage(total: dict, unit: dict) -> None:
    """Sum one unit's :func:`quant.coverage` into ``total`` (share recomputed)."""
    total["quantized_parameters"] += unit["quantized_parameters"]
    total["parameters"] += unit["parameters"]
    kept = total["full_precision"]
    for kind, n in unit["full_precision"].items():
        kept[kind] = kept.get(kind, 0) + n
    total["full_precision"] = dict(sorted(kept.items(), key=lambda kv: (-kv[1], kv[0])))
    total["share"] = (
        total["quantized_parameters"] / total["parameters"] if total["parameters"] else 0.0
    )


def _kept_note(kept: dict[str, int]) -> str:
    return "; full precision: " + ", ".join(kept) if kept else ""


def _calibration(hooks, run, unit, data, model) -> list:
    """The method's calibration inputs, else its latency example as the one batch."""
    if hasattr(hooks, "calibration_inputs"):
        inputs = list(hooks.calibration_inputs(run, unit, data, model))
    elif hasattr(hooks, "example_input"):
        inputs = [hooks.example_input(run, unit, data)]
    else:
        inputs = []
    return inputs
