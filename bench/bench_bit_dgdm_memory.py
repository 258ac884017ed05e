"""What Bit-DGDM's W4A4 model stores, by kind of tensor, and how the size ratio grows with width.

The paper reports "up to 2.8x less memory" than the 16-bit model; the paper profile measures
2.17x. This bench builds bit_dgdm's denoiser (``method.build``, the architecture the
pipeline trains) at the paper profile's widths and at wider ones, quantizes it with each
W4A4 scheme (``core.quant``, the code the quantize stage runs) and splits the stored bytes
by kind (``quant.byte_parts``): packed 4-bit codes, fp16 scales, fp16 low-rank factors,
sparse outliers (fp16 value + int32 index), fp32 biases, and the layers left unquantized
(LayerNorm). Byte counts depend on shapes only (rank and outlier count are fixed shares
of each layer), so untrained seeded weights give the trained model's sizes; the paper
profile's row is checked against the quantize stage's recorded sizes.

    python bench/bench_bit_dgdm_memory.py [--out bench/results/bit_dgdm_memory.json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCHEMES = ("rtn_w4a4", "bitdgdm_w4a4", "bitdgdm_w4a4_nodecomp")
#: name -> (hidden_x, hidden_e, hidden_y, layers, heads); the last is the width of
#: DiGress's published model config (dx 256, de 64, dy 64, 5 layers, 8 heads)
CONFIGS = {
    "paper profile": (48, 16, 16, 3, 4),
    "2x wider": (96, 32, 32, 3, 4),
    "4x wider": (192, 64, 64, 3, 4),
    "DiGress widths": (256, 64, 64, 5, 8),
}


def measure(task: str, widths: tuple[int, int, int, int, int]) -> dict:
    import numpy as np
    import torch

    from reprolab.contract import Unit
    from reprolab.core import quant
    from reprolab.methods.bit_dgdm import method
    from reprolab.methods.bit_dgdm.config import PROFILE_DEFAULTS, BitDGDMConfig

    dx, de, dy, layers, heads = widths
    cfg = BitDGDMConfig(
        **{
            **PROFILE_DEFAULTS["paper"],
            "hidden_x": dx,
            "hidden_e": de,
            "hidden_y": dy,
            "layers": layers,
            "heads": heads,
        }
    )
    n_max = 9 if task == "qm9" else 20
    torch.manual_seed(0)
    model = method.build(Unit(task, method.VARIANT, 0), cfg, {"x_train": np.zeros((1, n_max))})
    model.eval()
    kx, ke = method.TYPES[task]
    gen = torch.Generator().manual_seed(0)
    x = torch.nn.functional.one_hot(torch.randint(kx, (8, n_max), generator=gen), kx).float()
    e = torch.nn.functional.one_hot(torch.randint(ke, (8, n_max, n_max), generator=gen), ke)
    e = e.float()
    calib = [(x, e, torch.full((8, 1), 0.5), torch.ones(8, n_max, dtype=torch.bool))]
    params = sum(p.numel() for p in model.parameters())
    fp32 = quant.effective_bytes(model)
    rows = {"fp32": {"parts": quant.byte_parts(model), "bytes": fp32}}
    for scheme in SCHEMES:
        q = quant.quantize(model, scheme, calibration=calib)
        parts = quant.byte_parts(q)
        rows[scheme] = {"parts": parts, "bytes": sum(parts.values())}
    for entry in rows.values():
        entry["x_16bit"] = fp32 / 2 / entry["bytes"]
    return {"task": task, "widths": widths, "parameters": params, "schemes": rows}


def recorded_sizes() -> dict | None:
    """The quantize stage's sizes of the committed paper run (first unit: community)."""
    path = ROOT / "docs/results/bit_dgdm/metrics.json"
    if not path.is_file():
        return None
    return {k: v["effective_bytes"] for k, v in json.loads(path.read_text())["efficiency"].items()}


def markdown(results: list[dict], recorded: dict | None, seconds: float) -> str:
    from reprolab.core.quant import BYTE_PARTS

    lines = [
        f"# Bit-DGDM W4A4: stored bytes by kind ({time.strftime('%Y-%m-%d')}, {seconds:.0f} s)",
        "",
        "bit_dgdm's denoiser (QM9 task) at the paper profile's widths and wider; bytes as "
        "`quant.byte_parts` counts them. x16 = 16-bit bytes (2 per parameter) / stored "
        "bytes; the paper reports up to 2.8x.",
        "",
        "| widths (x / e / y, layers) | parameters | scheme | "
        + " | ".join(BYTE_PARTS)
        + " | total | x16 | overhead share |",
        "|---|---|---|" + "---|" * len(BYTE_PARTS) + "---|---|---|",
    ]
    for r in results:
        if r["task"] != "qm9":
            continue
        dx, de, dy, layers, _ = r["widths"]
        for scheme, entry in r["schemes"].items():
            parts = entry["parts"]
            extra = parts["low_rank"] + parts["sparse"]
            lines.append(
                f"| {r['name']}: {dx} / {de} / {dy}, {layers} | {r['parameters']:,} | {scheme} | "
                + " | ".join(f"{parts[k]:,}" for k in BYTE_PARTS)
                + f" | {entry['bytes']:,} | {entry['x_16bit']:.2f} | "
                + (f"{extra / entry['bytes']:.0%}" if scheme.startswith("bitdgdm") else "")
                + " |"
            )
    lines += [
        "",
        "overhead share: low-rank factors + sparse outliers as a share of the stored bytes.",
    ]
    if recorded:
        ours = next(r for r in results if r["task"] == "community" and r["name"] == "paper profile")
        same = all(ours["schemes"][s]["bytes"] == recorded.get(s) for s in ("fp32", *SCHEMES))
        lines += [
            "",
            "Check against the committed paper run (community task, quantize stage): "
            + ", ".join(f"{s} {recorded.get(s):,}" for s in ("fp32", *SCHEMES))
            + (
                " bytes, identical to this bench's."
                if same
                else " bytes: DIFFERENT from this bench's."
            ),
        ]
    return "\n".join(lines) + "\n"


def figure(results: list[dict], path: Path) -> Path:
    """Stacked bars: each scheme's stored bytes by kind, as a share of the 16-bit model,
    per width (QM9 task); the line marks the paper's 2.8x (1 / 2.8 of 16-bit bytes)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from reprolab.core.quant import BYTE_PARTS

    rows = [r for r in results if r["task"] == "qm9"]
    fig, axes = plt.subplots(1, len(rows), figsize=(3.2 * len(rows), 3.6), sharey=True)
    colors = dict(zip(BYTE_PARTS, plt.cm.tab10.colors, strict=False))
    for ax, r in zip(axes, rows, strict=True):
        half = r["schemes"]["fp32"]["bytes"] / 2
        for i, scheme in enumerate(SCHEMES):
            bottom = 0.0
            for kind in BYTE_PARTS:
                share = r["schemes"][scheme]["parts"][kind] / half
                ax.bar(i, share, bottom=bottom, color=colors[kind], label=kind if i == 0 else None)
                bottom += share
        ax.axhline(1 / 2.8, color="k", ls="--", lw=0.8)
        ax.set_xticks(range(len(SCHEMES)), [s.replace("_w4a4", "\nw4a4") for s in SCHEMES])
        ax.tick_params(axis="x", labelsize=7)
        dx, de, dy, layers, _ = r["widths"]
        ax.set_title(f"{r['name']}\n{dx} / {de} / {dy}, {layers} layers", fontsize=8)
    axes[0].set_ylabel("stored bytes / 16-bit bytes")
    axes[-1].legend(fontsize=6, loc="upper right")
    fig.suptitle("W4A4 size by kind of tensor; dashed: the paper's 2.8x", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/bit_dgdm_memory.json")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    results = []
    for name, widths in CONFIGS.items():
        for task in ("qm9", "community") if name == "paper profile" else ("qm9",):
            r = measure(task, widths)
            r["name"] = name
            results.append(r)
            w4 = r["schemes"]["bitdgdm_w4a4"]
            print(f"{name} ({task}): bitdgdm_w4a4 {w4['bytes']:,} bytes, {w4['x_16bit']:.2f}x")
    seconds = time.perf_counter() - t0
    recorded = recorded_sizes()
    args.out.write_text(json.dumps({"results": results, "recorded": recorded}, indent=2) + "\n")
    md = markdown(results, recorded, seconds)
    args.out.with_suffix(".md").write_text(md + f"\n![bytes by kind]({args.out.stem}.png)\n")
    figure(results, args.out.with_suffix(".png"))
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
