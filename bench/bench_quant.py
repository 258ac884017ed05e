"""Quantization benchmark: what each scheme costs and buys, and how long quantizing takes.

Run with ``make bench`` (``python bench/bench_quant.py --out bench/results/quant.json``).
Writes the JSON file and a Markdown table next to it (``.md``) and prints the table.
Everything runs on a throw-away copy of the project (smoke profile, params as in the
project); the project itself is never touched.

What is measured, and how
-------------------------
1. **Quantize stage per method.** ``python -m reprolab check`` and ``asset <name>``
   first, then for every method whose quantization applies,
   ``python -m reprolab prepare|train|quantize <slug>`` run in the copy, one process per
   stage as DVC runs them. Reported: the quantize process's wall time (interpreter,
   imports and tracking included), the number of units and schemes, and the time
   ``core.quant.quantize`` itself took per scheme (from ``quantized.json``), per unit.
2. **The largest model.** The first unit of each method is restored from its
   checkpoint and the model with the most parameters is kept. For fp32, int8_dynamic,
   rtn_w8a8, rtn_w4a4 and bitdgdm_w4a4 (calibrated on the method's calibration inputs):
   serialized state size, effective bytes (``core.quant.effective_bytes``), relative
   output error on the method's example input, and the latency of one forward pass on
   that input (``core.quant.latency_ms``, median of ``--repeats`` medians, interleaved,
   ``torch.set_num_threads(--threads)``). Only int8_dynamic runs a real low-bit kernel;
   the fake-quantized models compute in fp32 with extra work, so their latency is
   reported as overhead, never as a speedup. Coverage (``core.quant.coverage``): the
   share of parameters each scheme really quantized.
3. **Convolutional models.** For every method whose model has convolutions (the first
   unit, restored from its checkpoint): fp32, ``int8 linear only`` (PyTorch dynamic int8
   for ``nn.Linear`` alone, convolutions fp32: what ``int8_dynamic`` did before it
   covered convolutions) and ``int8_dynamic`` (convolutions statically quantized per
   layer, calibrated on the method's calibration inputs). Same measures as 2, plus
   coverage and the module types left at full precision.

The machine is shared; the JSON records the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_pipeline import ROOT, copy_project, load_average, log, timed, tool_env, write_atomic

SCHEMES = ("int8_dynamic", "rtn_w8a8", "rtn_w4a4", "bitdgdm_w4a4")


def quantize_stages(project: Path) -> dict[str, Any]:
    from reprolab import config, registry

    params = config.load(project / "params.yaml")
    out: dict[str, Any] = {}
    env = tool_env({"PYTHONPATH": f"{project / 'src'}:{project}"})
    # what every prepare depends on: the resolved configs and the shared assets
    timed([sys.executable, "-m", "reprolab", "check", "--out", "data/config"], project, env)
    for name in params.assets:
        log(f"asset {name}")
        timed([sys.executable, "-m", "reprolab", "asset", name], project, env)
    for slug in registry.slugs():
        spec = registry.get(slug)
        schemes = spec.schemes(params.method(slug))
        if not schemes:
            continue
        for stage in ("prepare", "train"):
            log(f"{stage} {slug}")
            timed([sys.executable, "-m", "reprolab", stage, slug], project, env)
        log(f"quantize {slug}")
        wall, _, _ = timed([sys.executable, "-m", "reprolab", "quantize", slug], project, env)
        info = json.loads((project / "data" / "quantized" / slug / "quantized.json").read_text())
        n = len(info["units"])
        out[slug] = {
            "units": n,
            "schemes": list(schemes),
            "stage_wall_s": wall,
            "quantize_s_per_unit": {s: info["quantize_seconds"][s] / n for s in schemes},
            "effective_bytes": {k: v["effective_bytes"] for k, v in info["sizes"].items()},
            "coverage": {k: v["share"] for k, v in info.get("coverage", {}).items()},
        }
    return out


def restored_models(project: Path) -> list[tuple]:
    """(parameters, slug, unit, hooks, ctx, data, model): the first unit of every method
    whose quantization applies, restored from its checkpoint."""
    import torch

    from reprolab import registry
    from reprolab.stages._common import PreparedData, context, read_units

    out = []
    for slug in registry.slugs():
        folder = project / "data" / "checkpoints" / slug
        if not (folder / "units.json").exists():
            continue
        ctx = context(slug, "evaluate", project)
        if not ctx.spec.quantization.applies:
            continue
        hooks = ctx.hooks()
        unit = read_units(ctx.paths.checkpoints, "train", slug)[0]
        data = PreparedData(ctx.paths)[unit.task]
        state = torch.load(ctx.paths.checkpoints / f"{unit.id}.pt", weights_only=True)["state"]
        model = hooks.restore(unit, ctx.cfg, data, state)
        n_params = sum(p.numel() for p in model.parameters())
        out.append((n_params, slug, unit, hooks, ctx, data, model))
    return out


def _inputs(hooks, unit, ctx, data, model) -> tuple[Any, list]:
    """The latency example and the calibration inputs (as the quantize stage takes them)."""
    example = hooks.example_input(unit, ctx.cfg, data)
    calib = (
        list(hooks.calibration_inputs(unit, ctx.cfg, data, model))
        if hasattr(hooks, "calibration_inputs")
        else [example]
    )
    return example, calib


def measure(models: dict, example: Any, repeats: int, real: set[str]) -> dict[str, Any]:
    """Size, coverage, relative output error on ``example`` against ``models["fp32"]`` and
    latency (median of ``repeats`` interleaved medians) of every model."""
    import torch

    from reprolab.core import quant

    call = quant.call_model
    with torch.inference_mode():
        ref = call(models["fp32"], example)
        ref = ref if isinstance(ref, torch.Tensor) else ref[0]
        errors = {}
        for name, m in models.items():
            got = call(m, example)
            got = got if isinstance(got, torch.Tensor) else got[0]
            errors[name] = float((got - ref).norm() / ref.norm())
    samples: dict[str, list[float]] = {name: [] for name in models}
    for _ in range(repeats):  # interleaved, so load drift hits every model alike
        for name, m in models.items():
            samples[name].append(quant.latency_ms(m, example, repeats=20, warmup=3)["median"])
    rows = {}
    for name, m in models.items():
        cov = quant.coverage(models["fp32"], m)
        rows[name] = {
            "state_bytes": quant.state_bytes(m),
            "effective_bytes": quant.effective_bytes(m),
            "coverage": cov["share"],
            "full_precision": cov["full_precision"],
            "relative_output_error": errors[name],
            "latency_ms": statistics.median(samples[name]),
            "latency_kind": "real kernel" if name in real else "fake quantization (fp32 compute)",
        }
    fp32 = rows["fp32"]
    for row in rows.values():
        row["size_ratio"] = row["effective_bytes"] / fp32["effective_bytes"]
        row["latency_ratio"] = row["latency_ms"] / fp32["latency_ms"]
    return rows


def largest_model(restored: list[tuple], threads: int, repeats: int) -> dict[str, Any]:
    import torch

    from reprolab.core import quant

    torch.set_num_threads(threads)
    if not restored:
        raise RuntimeError("no quantizable method has checkpoints")
    n_params, slug, unit, hooks, ctx, data, model = max(restored, key=lambda r: r[0])
    log(f"largest model: {slug} ({n_params} parameters)")
    example, calib = _inputs(hooks, unit, ctx, data, model)
    models = {"fp32": model}
    for scheme in SCHEMES:
        models[scheme] = quant.quantize(model, scheme, calibration=calib)
    rows = measure(models, example, repeats, real={"fp32", "int8_dynamic"})
    return {"method": slug, "unit": unit.id, "parameters": n_params, "schemes": rows}


def cnn_models(restored: list[tuple], threads: int, repeats: int) -> dict[str, Any]:
    """fp32 vs int8 on every method whose model has convolutions."""
    import copy
    import warnings

    import torch
    from torch import nn

    from reprolab.core import quant

    torch.set_num_threads(threads)
    out = {}
    for n_params, slug, unit, hooks, ctx, data, model in restored:
        convs = [m for m in model.modules() if isinstance(m, quant.CONV_TYPES)]
        if not convs:
            continue
        log(f"cnn: {slug} ({n_params} parameters, {len(convs)} convolutions)")
        example, calib = _inputs(hooks, unit, ctx, data, model)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            linear_only = torch.ao.quantization.quantize_dynamic(
                copy.deepcopy(model).eval(), {nn.Linear}, dtype=torch.qint8
            )
        models = {
            "fp32": model,
            "int8 linear only": linear_only,
            "int8_dynamic": quant.quantize(model, "int8_dynamic", calibration=calib),
        }
        rows = measure(models, example, repeats, real=set(models))
        # ttba and cplearn calibrate on their example input itself, so the error above is
        # in-sample; also calibrate on the first half of the example batch and measure
        # the error on the other half
        half = example.shape[0] // 2
        held_out = {
            "fp32": model,
            "int8 linear only": linear_only,
            "int8_dynamic": quant.quantize(model, "int8_dynamic", calibration=[example[:half]]),
        }
        with torch.inference_mode():
            ref = _first(quant.call_model(model, example[half:]))
            for name, m in held_out.items():
                got = _first(quant.call_model(m, example[half:]))
                rows[name]["held_out_output_error"] = float((got - ref).norm() / ref.norm())
        out[slug] = {
            "unit": unit.id,
            "parameters": n_params,
            "convolutions": len(convs),
            "example_shape": list(example.shape) if hasattr(example, "shape") else None,
            "calibration_batches": len(calib),
            "schemes": rows,
        }
    return out


def markdown(results: dict[str, Any]) -> str:
    lines = ["# Quantization benchmark", ""]
    big = results["largest_model"]
    lines += [
        f"Largest model: `{big['method']}` ({big['parameters']:,} parameters, unit "
        f"`{big['unit']}`), {results['threads']} torch thread(s).",
        "",
        "| precision | coverage | full precision | effective bytes | x fp32 | state bytes "
        "| output error | latency ms | x fp32 | latency is |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [_row(name, r) + f" {r['latency_kind']} |" for name, r in big["schemes"].items()]
    lines += [
        "",
        "Fake-quantized models compute in fp32 (plus the dequantize and outlier work), so "
        "their latency is overhead, not a speedup; only int8_dynamic runs low-bit kernels. "
        "Coverage: share of the parameters the scheme quantized; the fake-quantizing "
        "schemes leave convolutions in fp32.",
        "",
        "## Convolutional models: fp32 vs int8",
        "",
        "`int8 linear only`: dynamic int8 linear layers, convolutions fp32 (what "
        "`int8_dynamic` did before it covered convolutions). `int8_dynamic`: in addition "
        "every convolution statically quantized (int8 per-channel weights, calibrated uint8 "
        "input and output ranges, fbgemm / x86 kernels). Output error: relative L2 error "
        "of the model's (first) output on the method's example input (in-sample where the "
        "method calibrates on it); held-out: int8_dynamic calibrated on the first half of "
        "the example batch, error on the second half.",
        "",
    ]
    for slug, c in results.get("cnn", {}).items():
        lines += [
            f"`{slug}` ({c['parameters']:,} parameters, {c['convolutions']} convolutions, "
            f"unit `{c['unit']}`, example input {c['example_shape']}, "
            f"{c['calibration_batches']} calibration batch(es)):",
            "",
            "| precision | coverage | full precision | effective bytes | x fp32 | state bytes "
            "| output error | latency ms | x fp32 | held-out output error |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        lines += [
            _row(name, r) + f" {r['held_out_output_error']:.4f} |"
            for name, r in c["schemes"].items()
        ]
        lines.append("")
    lines += [
        "## Quantize stage per method (smoke profile)",
        "",
        "| method | units | schemes | stage wall s | quantize() ms per unit, by scheme "
        "| coverage, by scheme |",
        "|---|---|---|---|---|---|",
    ]
    for slug, r in results["quantize_stage"].items():
        per = ", ".join(f"{s} {v * 1e3:.1f}" for s, v in r["quantize_s_per_unit"].items())
        cov = ", ".join(f"{s} {v:.1%}" for s, v in r.get("coverage", {}).items())
        lines.append(
            f"| {slug} | {r['units']} | {len(r['schemes'])} | {r['stage_wall_s']:.1f} | {per} "
            f"| {cov} |"
        )
    lines += [
        "",
        f"Load average before/after: {results['load_before']['1min']:.2f} / "
        f"{results['load_after']['1min']:.2f}",
    ]
    return "\n".join(lines) + "\n"


def _first(out):
    return out if hasattr(out, "shape") else out[0]


def _row(name: str, r: dict[str, Any]) -> str:
    kept = ", ".join(f"{k} ({n:,})" for k, n in r["full_precision"].items())
    cov = "" if name == "fp32" else f"{r['coverage']:.1%}"
    return (
        f"| {name} | {cov} | {'' if name == 'fp32' else kept or 'none'} "
        f"| {r['effective_bytes']:,} | {r['size_ratio']:.3f} | {r['state_bytes']:,} "
        f"| {r['relative_output_error']:.4f} | {r['latency_ms']:.3f} | {r['latency_ratio']:.2f} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench/results/quant.json"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    results: dict[str, Any] = {"threads": args.threads, "load_before": load_average()}
    with tempfile.TemporaryDirectory(prefix="reprolab-bench-quant-") as tmp:
        project = copy_project(Path(tmp) / "project")
        sys.path[:0] = [str(project / "src"), str(project)]
        results["quantize_stage"] = quantize_stages(project)
        restored = restored_models(project)
        results["largest_model"] = largest_model(restored, args.threads, args.repeats)
        results["cnn"] = cnn_models(restored, args.threads, args.repeats)
    results["load_after"] = load_average()
    results["wall_s"] = time.perf_counter() - started
    out = args.out if args.out.is_absolute() else ROOT / args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, json.dumps(results, indent=2) + "\n")
    text = markdown(results)
    write_atomic(out.with_suffix(".md"), text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
