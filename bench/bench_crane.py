"""CRANE's grammar cost on SmolLM2's real vocabulary: mask build time and ms per
constrained step, for the decoders' mask (llguidance, ``EngineMask``) and the lark mask
it replaced (``TokenMask``: lark's parser copied per candidate token), side by side.

Run with ``python bench/bench_crane.py --out bench/results/crane.json`` (writes the JSON
and a Markdown table next to it). Measured, one thread (the machine may be shared):

- setup: building each mask (lark: cutting the 49k-token vocabulary to the tokens made
  of the grammar's characters; llguidance: its tokenizer trie and the compiled grammar);
- per span prefix typical of an answer: the check of one sampled token (lark's
  ``span_ok``, what every constrained step pays) and each mask (``allowed``, paid only
  when the sampled token fails: the mask cost per masked token);
- whole constrained steps: a constrained decode of a random tiny model over the real
  tokenizer with each mask (its tokens fail almost always, so nearly every step builds a
  mask: the worst case), ms of grammar work per step, model time excluded.
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
from reprolab.methods.crane.engine import EngineMask
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
    vocab = [
        tok.decode([i], skip_special_tokens=True, clean_up_tokenization_spaces=False)
        for i in range(len(tok))
    ]
    grammar = Grammar()
    grammar.valid_prefix("")  # build the lark parser outside the timings
    masks, build_ms = {}, {}
    for name, make in (
        ("lark", lambda: TokenMask(grammar, vocab)),
        ("llguidance", lambda: EngineMask(tok, vocab, grammar)),
    ):
        t0 = time.perf_counter()
        masks[name] = make()
        build_ms[name] = (time.perf_counter() - t0) * 1e3
    digit = vocab.index("7")
    spans = {}
    for s in SPANS:
        allowed = {name: m.allowed(s) for name, m in masks.items()}
        if allowed["lark"] != allowed["llguidance"]:
            raise SystemExit(f"the two masks disagree on {s!r}")
        spans[s] = {
            "check_ms": _ms(lambda s=s: grammar.span_ok(s + vocab[digit]), args.repeat * 20),
            **{
                f"mask_ms_{n}": _ms(lambda s=s, m=m: m.allowed(s), args.repeat)
                for n, m in masks.items()
            },
            "allowed": len(allowed["lark"]),
        }
    model = lm.tiny_model(_Shape(len(vocab), tok.eos_token_id, tok.eos_token_id), init_std=0.3)
    prompt = list(tok("Answer: <<").input_ids)
    worst = {}
    for name, mask in masks.items():
        dec = Decoder(vocab, mask, "constrained", max_new_tokens=24, eos_id=tok.eos_token_id)
        ids = list(prompt)
        with torch.inference_mode():
            while not dec.done:
                token = dec.choose(model(input_ids=torch.tensor([ids])).logits[0, -1])
                if token is None:
                    break
                ids.append(token)
                dec.push(token)
        worst[name] = {
            "steps": len(dec.check_ms),
            "masked_share": dec.out.masked_steps / max(dec.out.checked_steps, 1),
            "ms_per_constrained_step": statistics.mean(dec.check_ms) if dec.check_ms else 0.0,
            "ms_per_masked_step": statistics.mean(dec.out.mask_ms) if dec.out.mask_ms else 0.0,
            "tokens": dec.out.token_ids,
        }
    if worst["lark"]["tokens"] != worst["llguidance"]["tokens"]:
        raise SystemExit("the two masks decoded different tokens")
    out = {
        "vocabulary": len(vocab),
        "candidates_lark": len(masks["lark"].candidates),
        "mask_build_ms": build_ms,
        "spans": spans,
        "random_model": {
            n: {k: v for k, v in w.items() if k != "tokens"} for n, w in worst.items()
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    mean = {n: statistics.mean(v[f"mask_ms_{n}"] for v in spans.values()) for n in masks}
    lines = [
        f"CRANE grammar cost over SmolLM2's vocabulary ({len(vocab)} tokens); mask build: "
        f"lark {build_ms['lark']:.0f} ms ({len(masks['lark'].candidates)} candidates), "
        f"llguidance {build_ms['llguidance']:.0f} ms",
        "",
        "| span prefix | check one token, lark (ms) | mask, lark (ms) | mask, llguidance (ms) "
        "| tokens allowed |",
        "|---|---|---|---|---|",
        *[
            f"| `{s or '(empty)'}` | {v['check_ms']:.3f} | {v['mask_ms_lark']:.1f} "
            f"| {v['mask_ms_llguidance']:.2f} | {v['allowed']} |"
            for s, v in spans.items()
        ],
        f"| mean | | {mean['lark']:.1f} | {mean['llguidance']:.2f} | |",
        "",
        "Constrained decode of a random tiny model (the same tokens with either mask; "
        "grammar work per step, model time excluded):",
        "",
        "| mask | steps | masked | ms per masked step | ms per constrained step |",
        "|---|---|---|---|---|",
        *[
            f"| {n} | {w['steps']} | {w['masked_share']:.0%} | {w['ms_per_masked_step']:.2f} "
            f"| {w['ms_per_constrained_step']:.2f} |"
            for n, w in worst.items()
        ],
    ]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
