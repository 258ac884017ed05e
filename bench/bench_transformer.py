"""The tiny transformer's training step under Lightning vs a plain PyTorch loop.

The shared ViT of ``reprolab.core.transformer`` (the model rotation_fusion, bdia and
ff_graphs train) on random 28x28 inputs, trained by the project's ``ClassifierModule``
through ``core.training.fit`` (what every method's Lightning path does), and by the
equivalent plain loop (same model, Adam, cosine schedule, same batches). Per-step time
is the median over steady epochs (the first is warm-up); rounds alternate the two so a
change in the machine's load hits both. Two model sizes, so the fixed per-step cost of
the training loop shows against steps of different length.

    python bench/bench_transformer.py [--rounds 3] [--epochs 4] [--steps 30]
        [--out bench/results/transformer.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/transformer.json")
    args = parser.parse_args()

    import torch

    from reprolab.core.training import ClassifierModule, batches, fit
    from reprolab.core.transformer import n_params, vit

    torch.set_num_threads(args.threads)
    bs = 64
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(bs * args.steps, 784, generator=gen)
    y = torch.randint(0, 10, (bs * args.steps,), generator=gen)

    class Timed(ClassifierModule):
        times: list[float]

        def on_train_epoch_start(self) -> None:
            self.t0 = time.perf_counter()

        def on_train_epoch_end(self) -> None:
            self.times.append(time.perf_counter() - self.t0)

    def lightning(size: dict) -> list[float]:
        torch.manual_seed(0)
        module = Timed(vit(**size), 1e-3, args.epochs)
        module.times = []
        fit(module, batches(x, y, bs, 0, True), None, args.epochs)
        return module.times

    def plain(size: dict) -> list[float]:
        torch.manual_seed(0)
        net = vit(**size)
        opt = torch.optim.Adam(net.parameters(), lr=1e-3)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs)
        loader = batches(x, y, bs, 0, True)
        net.train()
        times = []
        for epoch in range(args.epochs):
            t0 = time.perf_counter()
            loader.sampler.set_epoch(epoch)
            for xb, yb in loader:
                loss = torch.nn.functional.cross_entropy(net(xb), yb)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
            times.append(time.perf_counter() - t0)
            sched.step()
        return times

    def per_step_ms(times: list[float]) -> float:
        return statistics.median(times[1:]) / args.steps * 1e3

    sizes = {
        "dim32_depth2": {"dim": 32, "depth": 2, "heads": 2},
        "dim64_depth4": {"dim": 64, "depth": 4, "heads": 4},
    }
    lightning(sizes["dim32_depth2"])  # warm-up: the first Trainer pays lazy imports
    out = {
        "threads": args.threads,
        "batch_size": bs,
        "steps_per_epoch": args.steps,
        "load_average_before": os.getloadavg(),
        "models": {},
    }
    for name, size in sizes.items():
        light, flat, ratios = [], [], []
        for _ in range(args.rounds):
            lm, pm = per_step_ms(lightning(size)), per_step_ms(plain(size))
            light.append(lm)
            flat.append(pm)
            ratios.append(lm / pm)
        out["models"][name] = {
            "params": n_params(vit(**size)),
            "lightning_ms_per_step": statistics.median(light),
            "plain_ms_per_step": statistics.median(flat),
            "ratio": statistics.median(ratios),
        }
        m = out["models"][name]
        print(
            f"{name} ({m['params']:,} params): Lightning {m['lightning_ms_per_step']:.2f} ms, "
            f"plain {m['plain_ms_per_step']:.2f} ms per step, ratio {m['ratio']:.2f}x",
            flush=True,
        )
    out["load_average_after"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
