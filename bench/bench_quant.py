"""Quantization benchmark: what each scheme costs and buys, and how long quantizing takes.

Run with ``make bench`` (``python bench/bench_quant.py --out bench/results/quant.json``).
Writes the JSON file and a Markdown table next to it (``.md``) and prints the table.
Everything runs on a throw-away copy of the project (smoke profile, params as in the
project); the project itself is never touched.

What is measured, and how
-------------------------
1. **Quantize stage per method.** For every method whose quantization applies,
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
   reported as overhead, never as a speedup.

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
        }
    return out


def largest_model(project: Path, threads: int, repeats: int) -> dict[str, Any]:
    import torch

    from reprolab import registry
    from reprolab.core import quant
    from reprolab.stages._common import PreparedData, context, read_units

    torch.set_num_threads(threads)
    best = None
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
        if best is None or n_params > best[0]:
            best = (n_params, slug, unit, hooks, ctx, data, model)
    if best is None:
        raise RuntimeError("no quantizable method has checkpoints")
    n_params, slug, unit, hooks, ctx, data, model = best
    log(f"largest model: {slug} ({n_params} parameters)")
    example = hooks.example_input(unit, ctx.cfg, data)
    calib = (
        hooks.calibration_inputs(unit, ctx.cfg, data, model)
        if hasattr(hooks, "calibration_inputs")
        else [example]
    )
    models = {"fp32": model}
    for scheme in SCHEMES:
        models[scheme] = quant.quantize(model, scheme, calibration=calib)
    call = quant.call_model
    with torch.inference_mode():
        ref = call(model, example)
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
        real = name in ("fp32", "int8_dynamic")
        rows[name] = {
            "state_bytes": quant.state_bytes(m),
            "effective_bytes": quant.effective_bytes(m),
            "relative_output_error": errors[name],
            "latency_ms": statistics.median(samples[name]),
            "latency_kind": "real kernel" if real else "fake quantization (fp32 compute)",
        }
    fp32 = rows["fp32"]
    for row in rows.values():
        row["size_ratio"] = row["effective_bytes"] / fp32["effective_bytes"]
        row["latency_ratio"] = row["latency_ms"] / fp32["latency_ms"]
    return {"method": slug, "unit": unit.id, "parameters": n_params, "schemes": rows}


def markdown(results: dict[str, Any]) -> str:
    lines = ["# Quantization benchmark", ""]
    big = results["largest_model"]
    lines += [
        f"Largest model: `{big['method']}` ({big['parameters']:,} parameters, unit "
        f"`{big['unit']}`), {results['threads']} torch thread(s).",
        "",
        "| precision | effective bytes | x fp32 | state bytes | output error | latency ms "
        "| x fp32 | latency is |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in big["schemes"].items():
        lines.append(
            f"| {name} | {r['effective_bytes']:,} | {r['size_ratio']:.3f} | "
            f"{r['state_bytes']:,} | {r['relative_output_error']:.4f} | {r['latency_ms']:.3f} "
            f"| {r['latency_ratio']:.2f} | {r['latency_kind']} |"
        )
    lines += [
        "",
        "Fake-quantized models compute in fp32 (plus the dequantize and outlier work), so "
        "their latency is overhead, not a speedup; only int8_dynamic runs low-bit kernels.",
        "",
        "## Quantize stage per method (smoke profile)",
        "",
        "| method | units | schemes | stage wall s | quantize() ms per unit, by scheme |",
        "|---|---|---|---|---|",
    ]
    for slug, r in results["quantize_stage"].items():
        per = ", ".join(f"{s} {v * 1e3:.1f}" for s, v in r["quantize_s_per_unit"].items())
        lines.append(
            f"| {slug} | {r['units']} | {len(r['schemes'])} | {r['stage_wall_s']:.1f} | {per} |"
        )
    lines += [
        "",
        f"Load average before/after: {results['load_before']['1min']:.2f} / "
        f"{results['load_after']['1min']:.2f}",
    ]
    return "\n".join(lines) + "\n"


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
        results["largest_model"] = largest_model(project, args.threads, args.repeats)
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
