"""How good can Bit-DGDM's fp32 QM9 model get on a CPU? Validity against training compute.

The quantization claims of Bit-DGDM compare W4A4 schemes against an fp32 model; they mean
little if that model is weak (paper profile: QM9 validity 0.73 against DiGress's 0.99).
This bench trains the method's own QM9 denoiser (``train_unit``, the same code the train
stage runs) at the paper profile and at 4x its training compute spent two ways (4x the epochs,
4x the molecules), and
samples ``--samples`` molecules from each with the evaluate stage's generator, recording
validity, connectedness and uniqueness, the train wall time and the sampling time.

Every config is one seed (seed 0): this is a scaling probe, not a claim check. Results are
appended to the JSON after each config, so a killed run keeps what finished and a rerun
skips configs already measured. Run it alone (``flock /tmp/reprolab-heavy.lock``) with
``REPROLAB_THREADS=1``.

    python bench/bench_bit_dgdm_fp32.py [--only NAME ...] [--out bench/results/bit_dgdm_fp32.json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

#: name -> overrides of the paper profile (4,000 molecules, 15 epochs, width 48, 3 layers, T 50)
LADDER: dict[str, dict] = {
    "paper": {},
    "epochs60": {"epochs": 60},
    "train16k": {"qm9_train": 16000},
}


def run_one(name: str, overrides: dict, samples: int) -> dict:
    import numpy as np
    import torch

    from reprolab.contract import Unit
    from reprolab.methods.bit_dgdm import diffusion, graphs, method, metrics
    from reprolab.methods.bit_dgdm.config import PROFILE_DEFAULTS, BitDGDMConfig

    cfg = BitDGDMConfig(**{**PROFILE_DEFAULTS["paper"], **overrides, "datasets": ["qm9"]})
    t0 = time.perf_counter()
    data, _ = graphs.qm9_graphs(cfg.qm9_train, cfg.qm9_val, cfg.qm9_test, cfg.data_seed)
    t_data = time.perf_counter() - t0
    unit = Unit("qm9", method.VARIANT, 0)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        trained = method.train_unit(unit, cfg, data, Path(tmp), print)
        t_train = time.perf_counter() - t0
    model = method.restore(unit, cfg, data, trained.state)
    t0 = time.perf_counter()
    with torch.inference_mode():
        drawn = diffusion.sample(model, samples, method._generator(unit, 1), cfg.sample_batch)
    t_sample = time.perf_counter() - t0
    drawn = [(x.numpy(), e.numpy()) for x, e in drawn]
    quality = metrics.molecule_metrics(drawn, set(np.asarray(data["smiles_train"]).tolist()))
    last = trained.history[-1]
    return {
        "name": name,
        "overrides": overrides,
        "qm9_train": cfg.qm9_train,
        "epochs": cfg.epochs,
        "hidden_x": cfg.hidden_x,
        "layers": cfg.layers,
        "steps": cfg.steps,
        "parameters": sum(p.numel() for p in model.parameters()),
        "graph_epochs": cfg.qm9_train * cfg.epochs,
        "samples": samples,
        **{k: quality[k] for k in ("validity", "uniqueness", "connected")},
        "val_ce_nodes": last["val_ce_nodes"],
        "val_ce_edges": last["val_ce_edges"],
        "data_s": round(t_data, 1),
        "train_s": round(t_train, 1),
        "sample_s": round(t_sample, 1),
        "threads": torch.get_num_threads(),
        "load_after": os.getloadavg()[0],
    }


def write_md(rows: list[dict], path: Path) -> None:
    lines = [
        "# Bit-DGDM fp32 QM9 model: validity against training compute",
        "",
        "`python bench/bench_bit_dgdm_fp32.py`; seed 0, one thread, "
        f"{rows[0]['samples'] if rows else 0} sampled molecules per config "
        "(validity's 95% binomial half-width is about 0.05 at 256).",
        "",
        "| config | train mols | epochs | width | T | params | validity | connected | "
        "uniqueness | val CE edges | train s | sample s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['qm9_train']} | {r['epochs']} | {r['hidden_x']} | "
            f"{r['steps']} | {r['parameters']:,} | {r['validity']:.3f} | {r['connected']:.3f} | "
            f"{r['uniqueness']:.3f} | {r['val_ce_edges']:.4f} | {r['train_s']:.0f} | "
            f"{r['sample_s']:.0f} |"
        )
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*", choices=sorted(LADDER), help="configs to run")
    ap.add_argument("--samples", type=int, default=256)
    ap.add_argument("--out", type=Path, default=Path("bench/results/bit_dgdm_fp32.json"))
    args = ap.parse_args()
    import torch

    torch.set_num_threads(int(os.environ.get("REPROLAB_THREADS", "1")))
    rows = json.loads(args.out.read_text()) if args.out.exists() else []
    done = {r["name"] for r in rows}
    for name in args.only or list(LADDER):
        if name in done:
            print(f"{name}: already measured, skipped")
            continue
        print(f"{name}: training {LADDER[name] or 'the paper profile'}", flush=True)
        row = run_one(name, LADDER[name], args.samples)
        print(
            f"{name}: validity {row['validity']:.3f}, train {row['train_s']:.0f} s, "
            f"sample {row['sample_s']:.0f} s",
            flush=True,
        )
        rows.append(row)
        tmp = args.out.with_suffix(".tmp")
        tmp.write_text(json.dumps(rows, indent=1) + "\n")
        tmp.replace(args.out)
        write_md(rows, args.out.with_suffix(".md"))


if __name__ == "__main__":
    main()
