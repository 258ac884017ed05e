"""Semi-Clipped benchmark: the adapter's training step time, Lightning vs a plain loop.

Run with ``python bench/bench_semiclipped.py --out bench/results/semiclipped.json``.
Writes the JSON file and a Markdown table next to it (``.md``) and prints the table.

Both trainers run the same work on the smoke simulator's first draw: the MLP adapter on
TVN-corrected transcriptomics, the CLIP loss against the frozen image embeddings, Adam,
the same minibatches (distinct perturbations, weak pairs). Measured: wall time of
``--epochs`` epochs after one warm-up epoch, divided by the number of optimisation
steps; median over ``--repeats`` runs. The plain loop is written out here; the
Lightning rows train a LightningModule with the same loss and optimiser, once with
``core.training.fit`` (the loop the pipeline's Lightning methods use) and once with the
Lightning ``Trainer(max_epochs, no logger, no checkpointing, no progress bar)``, so each
difference is that loop's per-step overhead.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("bench/results/semiclipped.json"))
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()

    import lightning as L
    import numpy as np
    import torch
    from torch.utils.data import DataLoader

    from reprolab.core.training import HistoryModule, fit
    from reprolab.methods.semiclipped import method, pairs
    from reprolab.methods.semiclipped.config import SemiClippedConfig

    torch.set_num_threads(args.threads)
    cfg = SemiClippedConfig(pbmc_splits=0)  # the simulator draw only
    tasks, _ = method.prepare(cfg, [0], Path("."), {})
    data = tasks["sim0"]
    rng = np.random.default_rng(0)
    epochs = [
        [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in pairs.batches(data, cfg, rng, None)]
        for _ in range(args.epochs + 1)
    ]
    n_steps = sum(len(e) for e in epochs[1:])

    def plain() -> float:
        torch.manual_seed(0)
        net = method.adapter(cfg.tx_dim, cfg.hidden, cfg.img_dim)
        opt = torch.optim.Adam(net.parameters(), lr=cfg.lr)

        def step(x, y):
            loss = method.clip_loss(net(x), y, cfg.temperature)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return float(loss.detach())

        for x, y in epochs[0]:
            step(x, y)
        t = time.perf_counter()
        for e in epochs[1:]:
            for x, y in e:
                step(x, y)
        return time.perf_counter() - t

    class Compute:
        def __init__(self):
            super().__init__()
            self.net = method.adapter(cfg.tx_dim, cfg.hidden, cfg.img_dim)

        def training_step(self, batch, _):
            x, y = batch
            return method.clip_loss(self.net(x), y, cfg.temperature)

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=cfg.lr)

    class Module(Compute, L.LightningModule):
        pass

    class FitModule(Compute, HistoryModule):
        pass

    def fitted() -> float:
        torch.manual_seed(0)
        module = FitModule()
        fit(module, DataLoader(epochs[0], batch_size=None), None, 1)
        flat = [b for e in epochs[1:] for b in e]
        t = time.perf_counter()
        fit(module, DataLoader(flat, batch_size=None), None, 1)
        return time.perf_counter() - t

    def lightning() -> float:
        torch.manual_seed(0)
        trainer_kw = dict(
            accelerator="cpu", logger=False, enable_checkpointing=False,
            enable_progress_bar=False, enable_model_summary=False,
        )  # fmt: skip
        module = Module()
        L.Trainer(max_epochs=1, **trainer_kw).fit(module, DataLoader(epochs[0], batch_size=None))
        flat = [b for e in epochs[1:] for b in e]
        trainer = L.Trainer(max_epochs=1, **trainer_kw)
        t = time.perf_counter()
        trainer.fit(module, DataLoader(flat, batch_size=None))
        return time.perf_counter() - t

    load_before = os.getloadavg()
    rows = {}
    for name, fn in (
        ("plain loop", plain),
        ("core.training.fit", fitted),
        ("lightning Trainer", lightning),
    ):
        times = [fn() for _ in range(args.repeats)]
        rows[name] = {
            "ms_per_step": 1000 * statistics.median(times) / n_steps,
            "seconds_total": statistics.median(times),
            "steps": n_steps,
        }
    result = {
        "what": "Semi-Clipped adapter training step (CLIP loss), smoke data sim0",
        "threads": args.threads,
        "repeats": args.repeats,
        "rows": rows,
        "fit_over_plain": rows["core.training.fit"]["ms_per_step"]
        / rows["plain loop"]["ms_per_step"],
        "trainer_over_plain": rows["lightning Trainer"]["ms_per_step"]
        / rows["plain loop"]["ms_per_step"],
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    md = ["| trainer | ms / step | steps | seconds (median) |", "|---|---|---|---|"]
    md += [
        f"| {k} | {v['ms_per_step']:.3f} | {v['steps']} | {v['seconds_total']:.3f} |"
        for k, v in rows.items()
    ]
    md.append(
        f"\ncore.training.fit / plain: {result['fit_over_plain']:.2f}x; Lightning Trainer / "
        f"plain: {result['trainer_over_plain']:.2f}x (threads {args.threads}, "
        f"load {load_before[0]:.2f} -> {result['load_average_after'][0]:.2f})"
    )
    text = "\n".join(md) + "\n"
    args.out.with_suffix(".md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
