"""CRANE's grammar cost on SmolLM2's real vocabulary: mask build time and ms per
constrained step.

Run with ``python bench/bench_crane.py --out bench/results/crane.json`` (writes the JSON
and a Markdown table next to it). Measured, one thread (the machine may be shared):

- setup: building the :class:`TokenMask` (cutting the 49k-token vocabulary to the tokens
  made of the grammar's characters);
- per span prefix typical of an answer: the check of one sampled token
  (``span_ok``, what every constrained step pays) and the mask (``allowed``, paid only
  when the sampled token fails);
- whole constrained steps: a constrained decode of a random tiny model over the real
  tokenizer (its tokens fail almost always, so nearly every step builds a mask: the
  worst case), ms of grammar work per step, model time excluded.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from reprolab.core import lm
from reprolab.methods.crane.decode import Decoder
from reprolab.methods.crane.grammar import Grammar, TokenMask
from reprolab.methods.crane.method import _Shape

SPANS = ["", "12", "3*4 +", "(12 - 3", "2*6 + 3*", "24*256-"]


def _ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("bench/results/crane.json"))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    tok = lm.load_tokenizer()
    vocab = [tok.decode([i], skip_special_tokens=True) for i in range(len(tok))]
    grammar = Grammar()
    grammar.valid_prefix("")  # build the lark parser outside the timings
    t0 = time.perf_counter()
    mask = TokenMask(grammar, vocab)
    build_ms = (time.perf_counter() - t0) * 1e3
    digit = vocab.index("7")
    spans = {
        s: {
            "check_ms": _ms(lambda s=s: grammar.span_ok(s + vocab[digit]), args.repeat * 20),
            "mask_ms": _ms(lambda s=s: mask.allowed(s), args.repeat),
            "allowed": len(mask.allowed(s)),
        }
        for s in SPANS
    }
    model = lm.tiny_model(_Shape(len(vocab), tok.eos_token_id, tok.eos_token_id), init_std=0.3)
    dec = Decoder(vocab, mask, "constrained", max_new_tokens=24, eos_id=tok.eos_token_id)
    ids = list(tok("Answer: <<").input_ids)
    with torch.inference_mode():
        while not dec.done:
            token = dec.choose(model(input_ids=torch.tensor([ids])).logits[0, -1])
            if token is None:
                break
            ids.append(token)
            dec.push(token)
    out = {
        "vocabulary": len(vocab),
        "candidates": len(mask.candidates),
        "mask_build_ms": build_ms,
        "spans": spans,
        "random_model_steps": len(dec.check_ms),
        "random_model_masked_share": dec.out.masked_steps / max(dec.out.checked_steps, 1),
        "ms_per_constrained_step_worst": statistics.mean(dec.check_ms) if dec.check_ms else 0.0,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    lines = [
        f"CRANE grammar cost over SmolLM2's vocabulary ({len(vocab)} tokens, "
        f"{len(mask.candidates)} candidates); mask build {build_ms:.1f} ms",
        "",
        "| span prefix | check one token (ms) | mask (ms) | tokens allowed |",
        "|---|---|---|---|",
        *[
            f"| `{s or '(empty)'}` | {v['check_ms']:.3f} | {v['mask_ms']:.1f} | {v['allowed']} |"
            for s, v in spans.items()
        ],
        "",
        f"Constrained decode of a random tiny model ({out['random_model_steps']} steps, "
        f"{out['random_model_masked_share']:.0%} masked): "
        f"{out['ms_per_constrained_step_worst']:.1f} ms of grammar work per step (worst case).",
    ]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
