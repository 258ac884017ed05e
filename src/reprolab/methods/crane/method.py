"""crane hooks for the pipeline stages (see reprolab.contract.MethodHooks).

Variants: ``model`` (the language model every decoder reads; its "training" is a no-op
load, see the README) and four evaluation-only decoders on it (``reuses="model"``):
``unconstrained_direct``, ``constrained_direct``, ``unconstrained_cot`` and ``crane``.
The decoders see the same problems, the same few-shot exemplars (direct prompts for the
two direct decoders, chain-of-thought prompts for the other two), the same sampling
seeds and the same token budgets; they differ only in the decoding rule.

Tasks: one reasoning-gym family, chosen by ``prepare`` on a calibration split (its own
reasoning-gym seed) before anything is evaluated: the first family of ``cfg.families``
where CRANE's condition holds (unconstrained CoT breaks the answer grammar often while its
reasoning is often right), else the first whose unconstrained-CoT accuracy lies in
[0.1, 0.9]; GSM-Symbolic too with ``include_gsm``. The measured condition is the
prepared data's ``premise_check``, every family's values its ``calibration``.

Everything a decoder needs from the tokenizer (the text of every token, the token ids of
prompts, the special ids) is computed at prepare and stored with the problems, so the
later stages read no tokenizer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

import numpy as np

from reprolab.contract import Run, TrainedUnit, Unit, figures_hook
from reprolab.core.threads import torch_threads
from reprolab.methods.crane import tasks as T
from reprolab.methods.crane.config import CraneConfig

if TYPE_CHECKING:
    import torch

MODEL = "model"
#: decoder variant -> (decoding rule, chain-of-thought prompt)
DECODERS = {
    "unconstrained_direct": ("unconstrained", False),
    "constrained_direct": ("constrained", False),
    "unconstrained_cot": ("unconstrained", True),
    "crane": ("crane", True),
}
_MASKS: dict[int, object] = {}  # vocabulary hash -> EngineMask (built once per process)

# ---------------------------------------------------------------- helpers


def _ragged(rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.cumsum([0, *[len(r) for r in rows]]).astype(np.int64)
    flat = np.array([t for r in rows for t in r], dtype=np.int64)
    return flat, offsets


def _unragged(flat: np.ndarray, offsets: np.ndarray) -> list[list[int]]:
    return [flat[offsets[i] : offsets[i + 1]].tolist() for i in range(len(offsets) - 1)]


def vocabulary(data: dict) -> list[str]:
    raw, off = bytes(np.asarray(data["vocab_bytes"]).tobytes()), data["vocab_offsets"]
    return [raw[off[i] : off[i + 1]].decode("utf-8") for i in range(len(off) - 1)]


def token_mask(run: Run, vocab: list[str], tokenizer=None, grammar=None):
    """The decoders' mask: llguidance over SmolLM2's tokenizer (the smollm2 asset; the
    tiny smoke model shares it) for ``grammar`` (arithmetic by default), built once per
    process and grammar."""
    from reprolab.methods.crane.engine import EngineMask
    from reprolab.methods.crane.grammar import Grammar

    grammar = grammar or Grammar()
    key = (hash(tuple(vocab)), grammar.text)
    if key not in _MASKS:
        if tokenizer is None:
            from reprolab.core import lm

            tokenizer = lm.load_tokenizer(run.asset("smollm2"))
        _MASKS[key] = EngineMask(tokenizer, vocab, grammar)
    return _MASKS[key]


class _Shape:
    """What lm.tiny_model reads of a tokenizer (size and special ids)."""

    def __init__(self, n: int, eos: int, pad: int):
        self.n, self.eos_token_id, self.bos_token_id, self.pad_token_id = n, eos, None, pad

    def __len__(self) -> int:
        return self.n


def tiny(cfg: CraneConfig, n_vocab: int, eos: int, pad: int, seed: int):
    from reprolab.core import lm

    h = cfg.tiny_hidden
    return lm.tiny_model(
        _Shape(n_vocab, eos, pad),
        layers=cfg.tiny_layers,
        hidden=h,
        heads=4,
        kv_heads=2,
        intermediate=2 * h,
        context=2048,
        seed=seed,
    )


def decode_problems(
    run: Run,
    model,
    data: dict,
    prefix_key: str,
    suffixes,
    mode: str,
    cot: bool,
    budget: int,
    seed: int,
    cfg: CraneConfig,
    vocab=None,
    tokenizer=None,
    grammar=None,
):
    from reprolab.methods.crane import batched

    vocab = vocab or vocabulary(data)
    return batched.run(
        model,
        np.asarray(data[prefix_key]).tolist(),
        suffixes,
        vocab,
        token_mask(run, vocab, tokenizer, grammar),
        mode,
        max_new_tokens=budget,
        eos_id=int(data["eos_id"][0]),
        end_ids=np.asarray(data["end_ids"]).tolist(),
        temperature=cfg.temperature,
        row_seeds=[seed * 1_000_003 + i for i in range(len(suffixes))],
        stop=T.STOP,
        pad_id=int(data["pad_id"][0]),
        batch_size=cfg.batch_size,
        prompt_open=not cot,
    )


def matches(text: str, gold: float | str, grammar) -> bool:
    """Whether sentence ``text`` is the gold answer: its exact value equals ``gold`` (a
    number), or it is equivalent to ``gold`` (an expression over variables: the
    symbolic family) at random values of the variables."""
    from reprolab.methods.crane.grammar import equivalent

    if isinstance(gold, str):
        return equivalent(grammar, text, gold)
    value = grammar.value(text)
    return value is not None and abs(float(value) - gold) <= 1e-6 * max(1.0, abs(gold))


def score(decoded, cot: bool, gold: float | str, grammar=None) -> tuple[bool, bool, bool]:
    """(answered, valid, correct) of one output: the answer is the first closed
    ``<< ... >>`` span (the prompt's open ``<<`` counts for direct prompts); valid when
    it is a sentence of the grammar (arithmetic by default), correct when it is the gold
    answer (:func:`matches`). No answer, an empty output or a failed prompt is invalid
    and wrong."""
    import re

    from reprolab.methods.crane.grammar import Grammar

    grammar = grammar or Grammar()
    text = ("" if cot else "<<") + decoded.text
    m = re.search(r"<<(.*?)>>", text, re.S)
    if m is None:
        return False, False, False
    if not grammar.complete(m.group(1)):
        return True, False, False
    return True, True, matches(m.group(1), gold, grammar)


def budget_for(task: str, cot: bool, cfg: CraneConfig) -> int:
    if not cot:
        return cfg.max_tokens_direct
    return cfg.max_tokens_cot_gsm if task == T.GSM else cfg.max_tokens_cot


def span_breaks(text: str, grammar) -> bool:
    """The output's first ``<<`` span (up to ``>>``, or to the end when still open)
    fails CRANE's check: where CRANE's mask would have stepped in. No span: False."""
    from reprolab.methods.crane.grammar import CLOSE, OPEN

    if OPEN not in text:
        return False
    span = text[text.index(OPEN) + len(OPEN) :]
    if CLOSE in span:
        span = span[: span.index(CLOSE) + len(CLOSE)]
    return not grammar.span_ok(span)


#: the fixed repairs of a symbolic answer that breaks the grammar (written before any
#: output was read): the common ways of writing a right expression outside CRANE's
#: grammar (other multiplication and minus signs, units and currency, implicit
#: multiplication ``2x`` / ``2(x+y)`` / ``(x)(y)``, a trailing period, an equation)
_REPAIRS = (
    (r"[×·⋅]|\\times|\\cdot", "*"),
    (r"÷", "/"),
    (r"[−–]", "-"),
    (r"[$,]", ""),
    (r"(?<=[0-9)])\s*(?=[a-z(])", "*"),
    (r"(?<=\))\s*(?=[0-9])", "*"),
    (r"\.\s*$", ""),
)


def readings(span: str) -> list[str]:
    """Lenient readings of an answer span (up to ``>>`` or the end): the span, each side
    of an ``=``, after :data:`_REPAIRS`."""
    import re

    span = span.split(">>")[0].strip()
    out = []
    for part in [span, *span.split("=")]:
        for pattern, sub in _REPAIRS:
            part = re.sub(pattern, sub, part)
        part = part.strip()
        if part and part not in out:
            out.append(part)
    return out


def reasoning_right(text: str, gold: float | str, grammar=None) -> bool:
    """Whether the output reaches the gold answer, whether or not its span parses.
    Numeric gold: the last number written before the first ``>>`` (in the whole output
    when no span closes) is the gold answer. Symbolic gold (an expression): a lenient
    reading of the first span (:func:`readings`) is equivalent to it."""
    import re

    if isinstance(gold, str):
        from reprolab.methods.crane.grammar import OPEN

        if OPEN not in text:
            return False
        span = text[text.index(OPEN) + len(OPEN) :]
        return any(matches(r, gold, grammar) for r in readings(span))
    head = text[: text.index(">>")] if ">>" in text else text
    numbers = re.findall(r"-?\d+(?:\.\d+)?", head)
    return bool(numbers) and abs(float(numbers[-1]) - gold) <= 1e-6 * max(1.0, abs(gold))


def span_judgements(texts: list[str], golds, grammar) -> tuple[list, list, list]:
    """Per chain-of-thought output: (correct, the span breaks the grammar, the reasoning
    is right), as :func:`score`, :func:`span_breaks`, :func:`reasoning_right`."""
    correct = [
        score(SimpleNamespace(text=t), True, g, grammar)[2]
        for t, g in zip(texts, golds, strict=True)
    ]
    breaks = [span_breaks(t, grammar) for t in texts]
    right = [reasoning_right(t, g, grammar) for t, g in zip(texts, golds, strict=True)]
    return correct, breaks, right


def calibrate(texts: list[str], golds: list, cfg: CraneConfig, grammar) -> dict:
    """Unconstrained-CoT outputs on the calibration split: accuracy, and CRANE's
    condition (the span breaks the grammar often while the reasoning is often right)."""
    n = len(texts)
    correct, breaks, right = span_judgements(texts, golds, grammar)
    acc, invalid, reasoning = sum(correct) / n, sum(breaks) / n, sum(right) / n
    return {
        "n": n,
        "accuracy": acc,
        "in_range": cfg.calibration_low <= acc <= cfg.calibration_high,
        "invalid_span_rate": invalid,
        "reasoning_correct": reasoning,
        "invalid_and_right": sum(b and r for b, r in zip(breaks, right, strict=True)) / n,
        "answered": sum("<<" in t and ">>" in t.split("<<", 1)[1] for t in texts) / n,
        "premise_holds": invalid >= cfg.premise_invalid_min
        and reasoning >= cfg.premise_reasoning_min,
    }


#: the calibration results kept with a task's data and reported as training signals
#: (unconstrained CoT on the calibration split, never on evaluation problems)
CALIBRATION_SIGNALS = ("answered", "invalid_span_rate", "reasoning_correct", "invalid_and_right")


def choose_family(calibration: dict[str, dict]) -> str:
    """The first family where CRANE's condition holds, else the first whose accuracy is
    in range, else the one closest to 0.5 (first on ties)."""
    for key in ("premise_holds", "in_range"):
        hits = [f for f, c in calibration.items() if c[key]]
        if hits:
            return hits[0]
    return min(calibration, key=lambda f: abs(calibration[f]["accuracy"] - 0.5))


# ---------------------------------------------------------------- prepare


def prepare(run: Run, raw_dir: Path) -> tuple[dict, dict]:
    """Problems, prompts and token ids per task; the easier family picked on the
    calibration split with the model the decoders will read."""
    from reprolab.core import lm

    cfg = run.cfg
    tok = lm.load_tokenizer(run.asset("smollm2"))
    n_vocab = len(tok)
    vocab = [
        tok.decode([i], skip_special_tokens=True, clean_up_tokenization_spaces=False)
        for i in range(n_vocab)
    ]
    encoded = [v.encode("utf-8") for v in vocab]
    common = {
        "vocab_bytes": np.frombuffer(b"".join(encoded), dtype=np.uint8).copy(),
        "vocab_offsets": np.cumsum([0, *[len(e) for e in encoded]]).astype(np.int64),
        "eos_id": np.array([tok.eos_token_id], dtype=np.int64),
        "pad_id": np.array([lm._pad_id(tok)], dtype=np.int64),
        "end_ids": np.array(sorted(tok.all_special_ids), dtype=np.int64),
    }

    def ids(text: str) -> list[int]:
        return list(tok(text, add_special_tokens=False).input_ids)

    def task_arrays(family: str, shots, problems_by_seed: dict[int, list]) -> dict:
        out = dict(common)
        out["prefix_direct"] = np.array(ids(T.prefix(shots, cot=False)), dtype=np.int64)
        out["prefix_cot"] = np.array(ids(T.prefix(shots, cot=True)), dtype=np.int64)
        for s, problems in problems_by_seed.items():
            for cot, name in ((False, "direct"), (True, "cot")):
                flat, off = _ragged([ids(T.query(p, cot)) for p in problems])
                out[f"s{s}_{name}_ids"], out[f"s{s}_{name}_off"] = flat, off
            out[f"s{s}_gold"] = np.array([p.gold for p in problems], dtype=np.float64)
            if family == T.SYMBOLIC:  # the answer is an expression over the variables
                out[f"s{s}_gold_expr"] = np.array([p.expression for p in problems], dtype=str)
        return out

    # ---- calibration: which easier family (unconstrained CoT, its own split)
    if cfg.model == "smollm2":
        model = lm.load(run.asset("smollm2"))[0]
    else:
        model = tiny(cfg, n_vocab, tok.eos_token_id, lm._pad_id(tok), seed=0)
    calibration = {}
    shots_of, seen = {}, {}
    started = time.perf_counter()
    with torch_threads(cfg.threads):
        for family in cfg.families:
            grammar = T.grammar_for(family)
            shots = T.exemplars(family, cfg.shots, grammar)
            shots_of[family] = shots
            exclude = {p.question for p in shots}
            cal = T.draw_problems(family, T.CALIBRATION_SEED, cfg.n_calibration, exclude, grammar)
            seen[family] = exclude | {p.question for p in cal}
            data = task_arrays(family, shots, {0: cal})
            rows = decode_problems(
                run,
                model,
                data,
                "prefix_cot",
                _unragged(data["s0_cot_ids"], data["s0_cot_off"]),
                "unconstrained",
                True,
                cfg.max_tokens_cot,
                0,
                cfg,
                vocab,
                tok,
                grammar,
            )
            calibration[family] = calibrate(
                [d.text for d, _ in rows], [gold_of(p, family) for p in cal], cfg, grammar
            )
    chosen = choose_family(calibration)
    tasks = [T.GSM, chosen] if cfg.include_gsm else [chosen]
    evaluated = list(run.seeds)
    datasets = {}
    for family in tasks:
        grammar = T.grammar_for(family)
        shots = shots_of.get(family) or T.exemplars(family, cfg.shots, grammar)
        exclude = seen.get(family, {p.question for p in shots})
        n = cfg.n_problems_gsm if (family == T.GSM and cfg.n_problems_gsm) else cfg.n_problems
        by_seed = {
            s: T.draw_problems(family, T.EVAL_SEED + s, n, exclude, grammar) for s in evaluated
        }
        datasets[family] = task_arrays(family, shots, by_seed)
        if family in calibration:  # CRANE's condition on the calibration split (probes read it)
            for key in CALIBRATION_SIGNALS:
                datasets[family][f"calib_{key}"] = np.array([calibration[family][key]])
    meta = {
        "tasks": sorted(datasets),
        "easier_family": chosen,
        "premise_check": {
            "family": chosen,
            "rule": (
                f"CRANE's condition on the calibration split (reasoning-gym seed "
                f"{T.CALIBRATION_SEED}, {cfg.n_calibration} problems, unconstrained CoT): "
                f"invalid-span rate >= {cfg.premise_invalid_min} (the answer span breaks "
                f"the grammar) and reasoning-correct rate >= {cfg.premise_reasoning_min} "
                f"(the last number before the span closes is the gold answer)"
            ),
            **{k: calibration[chosen][k] for k in ("invalid_span_rate", "reasoning_correct")},
            "holds": bool(calibration[chosen]["premise_holds"]),
        },
        "calibration": {
            "rule": (
                f"every family of {list(cfg.families)} on {cfg.n_calibration} calibration "
                f"problems (reasoning-gym seed {T.CALIBRATION_SEED}); the first where CRANE's "
                f"condition holds (premise_check), else the first whose unconstrained-CoT "
                f"accuracy lies in [{cfg.calibration_low}, {cfg.calibration_high}], else "
                f"the closest to 0.5"
            ),
            "model": cfg.model,
            "results": calibration,
            "chosen_in_range": bool(calibration[chosen]["in_range"]),
            "seconds": round(time.perf_counter() - started, 1),
        },
        "splits": {
            "exemplar_seed": T.EXEMPLAR_SEED,
            "calibration_seed": T.CALIBRATION_SEED,
            "evaluation_seeds": {str(s): T.EVAL_SEED + s for s in evaluated},
        },
        "family_settings": {f: T.FAMILY_SETTINGS[f] for f in datasets},
        "vocabulary": n_vocab,
    }
    return datasets, meta


def gold_of(p, family: str) -> float | str:
    """The gold answer :func:`score` compares with: the expression for the symbolic
    family, the value otherwise."""
    return p.expression if family == T.SYMBOLIC else p.gold


def units(run: Run, tasks: Sequence[str]) -> list[Unit]:
    return run.default_units(tasks)


# ---------------------------------------------------------------- train


def train_unit(
    run: Run, unit: Unit, data: dict, resume_dir: Path, progress: Callable[[str], None]
) -> TrainedUnit:
    """No training: the decoders read the model as it is (few-shot prompts, as in the
    paper). The tiny smoke model is its random initialisation, saved so that quantize and
    evaluate restore the same one; the real model is re-read from the asset."""
    import torch

    cfg = run.cfg
    signals = {
        f"calib_{k}": float(np.asarray(data[f"calib_{k}"])[0])
        for k in CALIBRATION_SIGNALS
        if f"calib_{k}" in data
    }
    if cfg.model == "smollm2":
        return TrainedUnit(state={"pretrained_unchanged": torch.ones(1)}, signals=signals)
    n = len(data["vocab_offsets"]) - 1
    model = tiny(cfg, n, int(data["eos_id"][0]), int(data["pad_id"][0]), seed=unit.seed)
    return TrainedUnit(state=model.state_dict(), signals=signals)


def restore(run: Run, unit: Unit, data: dict, state: dict) -> torch.nn.Module:
    cfg = run.cfg
    if cfg.model == "smollm2":
        from reprolab.core import lm

        return lm.load(run.asset("smollm2"))[0]
    from reprolab.core.training import restore_module

    n = len(data["vocab_offsets"]) - 1
    model = tiny(cfg, n, int(data["eos_id"][0]), int(data["pad_id"][0]), seed=unit.seed)
    return restore_module(model, state)


# ---------------------------------------------------------------- evaluate


def evaluate_unit(run: Run, model, unit: Unit, data: dict, history: list[dict]) -> dict[str, float]:
    cfg = run.cfg
    if unit.variant == MODEL:
        return {"parameters": float(sum(p.numel() for p in model.parameters()))}
    mode, cot = DECODERS[unit.variant]
    name = "cot" if cot else "direct"
    s = unit.seed
    suffixes = _unragged(data[f"s{s}_{name}_ids"], data[f"s{s}_{name}_off"])
    if f"s{s}_gold_expr" in data:  # the symbolic family: expressions over variables
        gold = [str(g) for g in np.asarray(data[f"s{s}_gold_expr"])]
    else:
        gold = [float(g) for g in np.asarray(data[f"s{s}_gold"])]
    grammar = T.grammar_for(unit.task)
    started = time.perf_counter()
    with torch_threads(cfg.threads):
        rows = decode_problems(
            run,
            model,
            data,
            f"prefix_{name}",
            suffixes,
            mode,
            cot,
            budget_for(unit.task, cot, cfg),
            s,
            cfg,
            grammar=grammar,
        )
    seconds = time.perf_counter() - started
    scored = [score(d, cot, g, grammar) for (d, _), g in zip(rows, gold, strict=True)]
    # CRANE's condition on this unit's outputs: the span breaks the grammar while the
    # reasoning is right (what the mask can repair; it bounds CRANE's gain over
    # unconstrained CoT). Direct outputs start inside the span the prompt opened.
    texts = [("" if cot else "<<") + d.text for d, _ in rows]
    _, breaks, right = span_judgements(texts, gold, grammar)
    answered, valid, correct = (np.array(x, dtype=float) for x in zip(*scored, strict=True))
    checks = [ms for _, ms in rows for ms in ms]
    masks = [ms for d, _ in rows for ms in d.mask_ms]
    checked = sum(d.checked_steps for d, _ in rows)
    masked = sum(d.masked_steps for d, _ in rows)
    tokens = sum(len(d.token_ids) for d, _ in rows)
    return {
        "accuracy": float(correct.mean()),
        "validity": float(valid.mean()),
        "answered": float(answered.mean()),
        # of the answers written, the share that parse (the grammar's own effect)
        "answer_validity": float(valid.sum() / answered.sum()) if answered.sum() else 0.0,
        "span_breaks": float(np.mean(breaks)),
        "reasoning_right": float(np.mean(right)),
        "right_but_invalid": float(np.mean([b and r for b, r in zip(breaks, right, strict=True)])),
        "new_tokens": float(tokens / len(rows)),
        "constrained_steps": float(checked / len(rows)),
        "masked_share": float(masked / checked) if checked else 0.0,
        "failed_prompts": float(sum(d.stopped == "prompt_too_long" for d, _ in rows)),
        "n_problems": float(len(rows)),
        # wall time: runtime metrics (data/runtime, MLflow), never versioned
        "constrained_step_ms": float(np.mean(checks)) if checks else 0.0,
        "mask_build_ms": float(np.mean(masks)) if masks else 0.0,
        "decode_seconds": float(seconds),
    }


def example_input(run: Run, unit: Unit, data: dict) -> torch.Tensor:
    import torch

    return torch.tensor([np.asarray(data["prefix_direct"])[:32].tolist()])


plots = figures_hook()


runtime_plots = figures_hook("RUNTIME_FIGURES")
