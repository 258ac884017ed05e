"""BDIA vs standard transformer stack: training-step time and saved-activation bytes
(counted with torch.autograd.graph.saved_tensors_hooks) at two depths."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from reprolab.core.transformer import Block
from reprolab.methods.bdia.reversible import bdia_features, plain_features


def measure(depth: int, kind: str, batch=64, tokens=17, dim=64, reps=5) -> dict:
    torch.manual_seed(0)
    blocks = torch.nn.ModuleList(Block(dim, heads=4) for _ in range(depth))
    x = torch.randn(batch, tokens, dim, requires_grad=True)
    signs = [torch.randint(0, 2, (batch,)) * 2 - 1 for _ in blocks]
    if kind == "bdia":
        fn = lambda: bdia_features(blocks, x, signs, 9)  # noqa: E731
    else:  # standard transformer: gamma = 0
        zero = [torch.zeros(batch, dtype=torch.int64) for _ in blocks]
        fn = lambda: plain_features(blocks, x, zero)  # noqa: E731
    saved = [0]

    def pack(t):
        saved[0] += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = fn().square().mean()  # bytes held for backward after the forward
    loss.backward()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn().square().mean().backward()
        times.append(time.perf_counter() - t0)
    return {"depth": depth, "kind": kind, "saved_bytes": saved[0], "step_s": min(times)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/results/bdia.json")
    args = ap.parse_args()
    torch.set_num_threads(1)
    rows = [measure(d, k) for d in (4, 12) for k in ("standard", "bdia")]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2))
    lines = ["| depth | kind | saved MB | step s |", "|---|---|---|---|"]
    lines += [
        f"| {r['depth']} | {r['kind']} | {r['saved_bytes'] / 2**20:.2f} | {r['step_s']:.4f} |"
        for r in rows
    ]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
