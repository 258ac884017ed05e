"""Renderer throughput: frames/s of the torch splatting backend, forward and forward+backward;
and scene building: loading the offline mesh catalogue, and the point sampling of one
procedural or mesh scene (points only: cameras and masks are the same for both)."""

import json
import time
from pathlib import Path

import numpy as np
import torch

from reprolab.methods.lift_gs import meshes, scenes
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


def bench_scenes(reps: int = 50) -> list[dict]:
    t0 = time.perf_counter()
    catalogue = meshes.catalogue()
    load_ms = (time.perf_counter() - t0) * 1000
    p = scenes.SceneParams(n_points=192, min_objects=3, max_objects=5)
    rows = [{"what": "load mesh catalogue (trimesh import included)", "ms": round(load_ms, 1)}]
    for name, make in (
        ("procedural scene, 192 points", scenes.make_scene),
        ("mesh scene, 192 points", lambda rng, p: meshes.make_mesh_scene(rng, p, catalogue)),
    ):
        rng = np.random.default_rng(0)
        t0 = time.perf_counter()
        for _ in range(reps):
            make(rng, p)
        rows.append({"what": name, "ms": round((time.perf_counter() - t0) * 1000 / reps, 2)})
    return rows


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
    scene_rows = bench_scenes()
    (out / "lift_gs.json").write_text(
        json.dumps({"renderer": rows, "scenes": scene_rows}, indent=2)
    )
    md = ["| size | N | pass | frames/s |", "|---|---|---|---|"]
    md += [
        f"| {r['size']} | {r['n_gaussians']} | {r['pass']} | {r['frames_per_s']} |" for r in rows
    ]
    md += ["", "| scene building | ms |", "|---|---|"]
    md += [f"| {r['what']} | {r['ms']} |" for r in scene_rows]
    (out / "lift_gs.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
