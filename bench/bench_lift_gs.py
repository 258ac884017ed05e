"""Renderer throughput: frames/s of the torch splatting backend, forward and forward+backward."""

import json
import time
from pathlib import Path

import torch

from reprolab.methods.lift_gs.render import Camera, TorchRenderer


def bench(size: int, n: int, backward: bool, reps: int = 5) -> float:
    g = torch.Generator().manual_seed(0)
    means = ((torch.rand(n, 3, generator=g) - 0.5) * 2).requires_grad_(backward)
    sig = torch.full((n,), 0.05).requires_grad_(backward)
    op = torch.full((n,), 0.5).requires_grad_(backward)
    feat = torch.rand(n, 8, generator=g).requires_grad_(backward)
    cam = Camera(
        size, size, size / 2, size / 2, torch.eye(3), torch.tensor([0.0, 0.0, 3.0]), size, size
    )
    r = TorchRenderer()
    t0 = time.perf_counter()
    for _ in range(reps):
        out = r.render(means, sig, op, feat, cam)
        if backward:
            out.sum().backward()
    return reps / (time.perf_counter() - t0)


def main() -> None:
    torch.set_num_threads(1)
    rows = [
        {
            "size": s,
            "n_gaussians": n,
            "pass": p,
            "frames_per_s": round(bench(s, n, p == "fwd+bwd"), 2),
        }
        for s in (32, 64)
        for n in (256, 1024)
        for p in ("fwd", "fwd+bwd")
    ]
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / "lift_gs.json").write_text(json.dumps(rows, indent=2))
    md = ["| size | N | pass | frames/s |", "|---|---|---|---|"]
    md += [
        f"| {r['size']} | {r['n_gaussians']} | {r['pass']} | {r['frames_per_s']} |" for r in rows
    ]
    (out / "lift_gs.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
