"""grokformer benchmark: normalized-Laplacian eigendecomposition time against graph size.

Run with ``python bench/bench_grokformer.py --out bench/results/grokformer.json``.
Writes the JSON file, a Markdown table next to it (same name, ``.md``) and prints the
table.

What is measured: for each size N, one CSBM graph (3 classes, expected degree 10,
homophily 0.5, the generator of the grokformer method); the time of building the dense
normalized Laplacian and of its full eigendecomposition with ``numpy.linalg.eigh``
(float64, what the method's prepare stage uses) and with ``torch.linalg.eigh`` (float32),
each the median of ``--repeats`` runs after one warm-up call, on ``--threads`` threads; plus one forward of
GrokFormer's spectral branch U diag(h(lambda)) U^T X (16 channels) on that basis. The
eigendecomposition is O(N^3); the fitted log-log slope is reported.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from reprolab.methods.grokformer import graphs
from reprolab.methods.grokformer.net import FourierFilter, spectral_apply


def _median_seconds(fn, repeats: int) -> float:
    fn()  # warm-up: the first call of a LAPACK routine pays its set-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run(sizes: list[int], repeats: int, threads: int) -> dict:
    torch.set_num_threads(threads)
    rows = []
    for n in sizes:
        g = graphs.csbm(n, 3, 4, 0.5, degree=10.0, separation=1.0, seed=0)
        nodes = len(g["y"])
        a = graphs.adjacency(g["edge_index"], nodes)
        lap = graphs.normalized_laplacian(a)
        lap32 = torch.as_tensor(lap, dtype=torch.float32)
        build = _median_seconds(lambda a=a: graphs.normalized_laplacian(a), repeats)
        np_eigh = _median_seconds(lambda lap=lap: np.linalg.eigh(lap), repeats)
        torch_eigh = _median_seconds(lambda m=lap32: torch.linalg.eigh(m), repeats)
        lam, u = torch.linalg.eigh(lap32)
        filt = FourierFilter(3, 16)
        x = torch.randn(nodes, 16)

        def forward(lam=lam, u=u, x=x, filt=filt):
            with torch.no_grad():
                spectral_apply(u, filt(lam.clamp(0, 2)), x)

        fwd = _median_seconds(forward, repeats)
        rows.append(
            {
                "nodes": nodes,
                "edges": int(g["edge_index"].shape[1] // 2),
                "laplacian_ms": 1000 * build,
                "numpy_eigh_ms": 1000 * np_eigh,
                "torch_eigh_ms": 1000 * torch_eigh,
                "spectral_forward_ms": 1000 * fwd,
            }
        )
        print(f"N={nodes}: numpy eigh {1000 * np_eigh:.1f} ms", flush=True)
    big = [r for r in rows if r["nodes"] >= 200] or rows
    slope = (
        float(
            np.polyfit(
                np.log([r["nodes"] for r in big]), np.log([r["numpy_eigh_ms"] for r in big]), 1
            )[0]
        )
        if len(big) >= 2
        else float("nan")
    )
    return {
        "benchmark": "grokformer eigendecomposition vs graph size",
        "threads": threads,
        "repeats": repeats,
        "machine": platform.processor() or platform.machine(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "load_average_1min": os.getloadavg()[0],
        "rows": rows,
        "numpy_eigh_loglog_slope": slope,
    }


def markdown(result: dict) -> str:
    lines = [
        f"# {result['benchmark']}",
        "",
        f"Threads: {result['threads']}, median of {result['repeats']} runs; torch "
        f"{result['torch']}, numpy {result['numpy']}; load average "
        f"{result['load_average_1min']:.1f} at the end (shared machine). Log-log slope of numpy eigh time "
        f"vs N (N >= 200): {result['numpy_eigh_loglog_slope']:.2f} (O(N^3) gives 3).",
        "",
        "| nodes | edges | Laplacian (ms) | numpy eigh f64 (ms) | torch eigh f32 (ms) "
        "| spectral forward (ms) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['nodes']} | {r['edges']} | {r['laplacian_ms']:.2f} | "
            f"{r['numpy_eigh_ms']:.1f} | {r['torch_eigh_ms']:.1f} | "
            f"{r['spectral_forward_ms']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench/results/grokformer.json"))
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 200, 400, 800, 1600])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    result = run(args.sizes, args.repeats, args.threads)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    md = markdown(result)
    args.out.with_suffix(".md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
