"""Blind probe: the standard ViT's training-loss curve under SET-Adam, epoch by epoch.

Training signals only: it reads the *training* split of a prepared task file (x_train,
y_train) and nothing else, trains the paper profile's standard ViT (depth 6, dim 32,
batch 64, lr 3e-3, cosine over ``--epochs``) with the chosen optimiser, and records the
mean training loss of every epoch and the training accuracy every 10 epochs. The
``reprolab probe`` command (every variant, the whole pipeline) did not fit the shared
machine's load in the time left; this loop is the same model, optimiser, schedule and
batch size without Lightning.

    python -m reprolab.methods.bdia.loss_curve_probe --data PREPARED.npz --task mnist \
        --seed 100 --epochs 80 --out docs/results/bdia/probes/set-adam-loss-curve
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import torch

from reprolab.methods.bdia.config import PROFILE_DEFAULTS, BDIAConfig
from reprolab.methods.bdia.net import build_vit
from reprolab.methods.bdia.set_adam import SETAdam


def curve(x: torch.Tensor, y: torch.Tensor, cfg: BDIAConfig, seed: int) -> dict:
    torch.manual_seed(seed)
    net = build_vit(x.shape[1], cfg)
    opt_cls = SETAdam if cfg.optimizer == "set_adam" else torch.optim.Adam
    opt = opt_cls(net.parameters(), lr=cfg.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=cfg.epochs)
    gen = torch.Generator().manual_seed(seed)
    losses, accs, start = [], {}, time.perf_counter()
    for epoch in range(cfg.epochs):
        net.train()
        order = torch.randperm(len(x), generator=gen)
        total, batches = 0.0, 0
        for i in range(0, len(x), cfg.batch_size):
            idx = order[i : i + cfg.batch_size]
            loss = torch.nn.functional.cross_entropy(net(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total, batches = total + float(loss.detach()), batches + 1
        sched.step()
        losses.append(total / batches)
        if (epoch + 1) % 10 == 0 or epoch + 1 == cfg.epochs:
            net.eval()
            with torch.inference_mode():
                accs[epoch + 1] = float((net(x).argmax(-1) == y).float().mean())
    return {
        "train_loss": losses,
        "train_acc_every_10": accs,
        "seconds": round(time.perf_counter() - start, 1),
    }


def to_markdown(record: dict) -> str:
    lines = [
        f"# Probe `{record['name']}`: bdia, standard ViT training-loss curve",
        "",
        f"Training signals only (the training split; no validation or test data read). "
        f"Optimiser {record['optimizer']}, {record['epochs']} epochs (cosine), seed(s) "
        f"{record['seeds']}; {record['date']}, commit `{record['commit'][:10]}`.",
        "",
        "| task | seed | loss ep 1 | ep 20 | ep 40 | ep 60 | last | min of last 10 | "
        "train acc (epochs 10, 20, ..., last) | seconds |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in record["runs"]:
        loss = r["train_loss"]

        def at(e, loss=loss):
            return f"{loss[e - 1]:.4g}" if e <= len(loss) else "-"

        acc = ", ".join(f"{a:.3f}" for a in r["train_acc_every_10"].values())
        lines.append(
            f"| {r['task']} | {r['seed']} | {at(1)} | {at(20)} | {at(40)} | {at(60)} | "
            f"{loss[-1]:.4g} | {min(loss[-10:]):.4g} | {acc} | {r['seconds']} |"
        )
    lines += ["", "Every epoch's mean training loss is in the `.json` record."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", required=True, help="prepared task .npz files")
    ap.add_argument("--task", nargs="+", required=True)
    ap.add_argument("--seed", type=int, default=100)
    ap.add_argument("--epochs", type=int, default=80)
    ap.add_argument("--optimizer", default="set_adam")
    ap.add_argument("--out", required=True)
    ap.add_argument("--commit", default="")
    args = ap.parse_args()
    torch.set_num_threads(1)
    cfg = BDIAConfig(**PROFILE_DEFAULTS["paper"], epochs=args.epochs, optimizer=args.optimizer)
    record = {
        "method": "bdia",
        "name": Path(args.out).name,
        "kind": "probe: training signals only (standard ViT, training split)",
        "optimizer": args.optimizer,
        "epochs": args.epochs,
        "seeds": [args.seed],
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": args.commit,
        "runs": [],
    }
    for path, task in zip(args.data, args.task, strict=True):
        with np.load(path) as d:  # the training split only
            x = torch.as_tensor(d["x_train"], dtype=torch.float32)
            y = torch.as_tensor(d["y_train"], dtype=torch.long)
        record["runs"].append({"task": task, "seed": args.seed, **curve(x, y, cfg, args.seed)})
        out = Path(args.out)
        out.with_suffix(".json").write_text(json.dumps(record, indent=2) + "\n")
        out.with_suffix(".md").write_text(to_markdown(record))


if __name__ == "__main__":
    main()
