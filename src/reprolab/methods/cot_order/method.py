"""cot_order hooks for the pipeline stages (see reprolab.contract.MethodHooks).

One task (``synth``: the seeded program-synthesis set plus the HumanEval problems), three
trained variants (the SFT arms ``code_only``, ``cot_first``, ``code_first``) and the
profile's seeds. A unit's trained state is its LoRA adapter alone (``sft.py``: LoRA on
the attention projections of the top ``lora_layers`` layers, the frozen layers below
computed once per arm); ``restore`` merges it into the base model, so the quantize stage
quantizes an ordinary model (LoRA folded into the weights first, then int8 with the MLP
down projections kept fp32).

Evaluation: greedy decoding with the same token budget and the same stop for every arm
(the closing fence of the code block: decoding stops after the code, as in the paper,
so ``code_first`` never spends tokens on its explanation at test time and ``cot_first``
must write its reasoning inside the budget); the first fenced block is executed against
the problem's held-out asserts (own test split: held-out templates) or HumanEval's
``check`` in :mod:`reprolab.core.sandbox`. A prompt over the context window, an empty
generation, a generation without a code block and code that does not parse are failed
samples, never dropped.
"""

from __future__ import annotations

import copy
import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from reprolab.contract import Run, TrainedUnit, Unit, figures_hook
from reprolab.core import lm
from reprolab.methods.cot_order import humaneval
from reprolab.methods.cot_order import programs as P
from reprolab.methods.cot_order.config import CotOrderConfig

if TYPE_CHECKING:
    pass

TASK = "synth"
#: the closing fence of the code block (the opening one is "```python")
STOP = ("\n```\n",)
#: sample outcomes that never reached the sandbox
NO_GENERATION, NO_CODE = "no_generation", "no_code"

# ---------------------------------------------------------------- prepare


def _strings(values: Sequence[str]) -> np.ndarray:
    return np.array(list(values), dtype=np.str_) if values else np.array([], dtype="<U1")


def prepare(run: Run, raw_dir: Path) -> tuple[dict, dict]:
    """A pool of problems of *every* template (``train_*``: SFT examples, ``test_*``:
    test problems, from separate generators); each seed's held-out templates are drawn
    per seed (:func:`programs.seed_split`) and :func:`unit_rows` picks that seed's
    training examples and test problems from the pool. Enough per template that any
    split gets ``n_train`` examples and ``n_test`` problems."""
    cfg = run.cfg
    names = [t.name for t in P.TEMPLATES]
    n_held = 3 * cfg.held_out_per_family
    per_train = -(-cfg.n_train // (len(names) - n_held))
    per_test = -(-cfg.n_test // n_held)
    train = P.generate(names, per_train * len(names), cfg.data_seed, cfg.n_tests)
    test = P.generate(names, per_test * len(names), cfg.data_seed + 1, cfg.n_tests)
    problems = humaneval.load(cfg.n_humaneval) if cfg.n_humaneval else []
    arrays = {
        "train_template": _strings([e.template for e in train]),
        "train_family": _strings([e.family for e in train]),
        "train_name": _strings([e.name for e in train]),
        "train_problem": _strings([e.problem for e in train]),
        "train_reasoning": _strings([e.reasoning for e in train]),
        "train_code": _strings([e.code for e in train]),
        "test_template": _strings([e.template for e in test]),
        "test_prompt": _strings([P.prompt(e) for e in test]),
        "test_code": _strings([e.code for e in test]),
        "test_tests": _strings([e.test_source() for e in test]),
        "he_task_id": _strings([p.task_id for p in problems]),
        "he_prompt": _strings([humaneval.task_prompt(p) for p in problems]),
        "he_stub": _strings([p.prompt for p in problems]),
        "he_tests": _strings([p.tests() for p in problems]),
    }
    meta = {
        "templates": names,
        "held_out_by_seed": {
            str(s): split_for(cfg, int(s))[1] for s in run.seeds if str(s).lstrip("-").isdigit()
        },
        "sizes": {
            "train_pool": len(train),
            "test_pool": len(test),
            "train": cfg.n_train,
            "test": cfg.n_test,
            "humaneval": len(problems),
        },
    }
    return {TASK: arrays}, meta


def split_for(cfg: CotOrderConfig, seed: int) -> tuple[list[str], list[str]]:
    """(train, held-out) templates of replicate ``seed``: drawn per seed, fixed for it."""
    return P.seed_split(cfg.held_out_per_family, cfg.data_seed, seed)


def unit_rows(cfg: CotOrderConfig, data: dict, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows of the training pool, rows of the test pool) of replicate ``seed``: the
    first ``n_train`` examples of its training templates and the first ``n_test``
    problems of its held-out templates, in pool order (round-robin over templates)."""
    train_t, test_t = split_for(cfg, seed)
    train = np.flatnonzero(np.isin(data["train_template"], train_t))[: cfg.n_train]
    test = np.flatnonzero(np.isin(data["test_template"], test_t))[: cfg.n_test]
    if len(train) < cfg.n_train or len(test) < cfg.n_test:
        raise ValueError(f"the prepared pool is too small for seed {seed}")
    return train, test


def train_examples(data: dict) -> list[P.Example]:
    return [
        P.Example(str(t), str(f), str(n), str(pr), str(r), str(c), ())
        for t, f, n, pr, r, c in zip(
            data["train_template"],
            data["train_family"],
            data["train_name"],
            data["train_problem"],
            data["train_reasoning"],
            data["train_code"],
            strict=True,
        )
    ]


def sft_pairs(data: dict, arm: str, rows: Sequence[int] | None = None) -> list[tuple[str, str]]:
    """(prompt, completion) of the training examples ``rows`` (default: the whole pool)
    for ``arm``: the same examples in the same order for every arm; only the order
    inside the completion differs."""
    examples = train_examples(data)
    if rows is not None:
        examples = [examples[int(i)] for i in rows]
    return [(P.prompt(e), P.target(e, arm)) for e in examples]


# ---------------------------------------------------------------- model


_TOKENIZERS: dict[str, object] = {}
_BASES: dict[tuple, object] = {}


def tokenizer(folder: Path):
    """SmolLM2's tokenizer from the verified ``smollm2`` asset ``folder``
    (``Run.asset(lm.ASSET)``), loaded once per process and folder."""
    key = str(folder)
    if key not in _TOKENIZERS:
        _TOKENIZERS[key] = lm.load_asset_tokenizer(folder)
    return _TOKENIZERS[key]


def _base_key(cfg: CotOrderConfig, folder: Path) -> tuple:
    if cfg.model == "tiny":
        return ("tiny", cfg.tiny_layers, cfg.tiny_hidden, cfg.tiny_context)
    return ("smollm2", str(folder))


def base_model(cfg: CotOrderConfig, folder: Path):
    """A fresh copy of the base model: the tiny Llama over the real tokenizer (smoke) or
    SmolLM2-135M-Instruct from the asset (paper), both from the verified ``smollm2``
    asset ``folder``. Loaded once per process, copied."""
    key = _base_key(cfg, folder)
    if key not in _BASES:
        if cfg.model == "tiny":
            hidden = cfg.tiny_hidden
            _BASES[key] = lm.tiny_model(
                tokenizer(folder),
                layers=cfg.tiny_layers,
                hidden=hidden,
                heads=4,
                kv_heads=2,
                intermediate=2 * hidden,
                context=cfg.tiny_context,
                seed=0,
            )
        else:
            if not (folder / "config.json").is_file():
                raise FileNotFoundError(
                    f"the {lm.ASSET} asset in {folder} holds the tokenizer only; the cot_order "
                    f"model 'smollm2' needs `assets.{lm.ASSET}.<profile>.weights: true`"
                )
            _BASES[key] = lm.load(folder)[0]
    return copy.deepcopy(_BASES[key]).eval()


# ---------------------------------------------------------------- train


def units(run: Run, tasks: Sequence[str]) -> list[Unit]:
    """Every task x arm x seed, arm by arm (an arm's seeds share its cached hidden states)."""
    return [Unit(t, v, s) for t in sorted(tasks) for v in run.variants for s in run.seeds]


_HIDDEN: dict[str, tuple] = {}


def _cached_hidden(cfg: CotOrderConfig, folder: Path, model, pairs, layer: int):
    """(hidden states entering ``layer``, mask, labels) of the SFT pairs: the frozen part
    of the model, computed once per arm and process (every seed of an arm reuses it)."""
    from reprolab.methods.cot_order import sft

    blob = repr((_base_key(cfg, folder), layer, cfg.max_len, pairs)).encode()
    key = hashlib.sha256(blob).hexdigest()
    if key not in _HIDDEN:
        ids, mask, labels = sft.sft_tensors(tokenizer(folder), pairs, cfg.max_len)
        hidden = sft.hidden_before(model, layer, ids, mask, cfg.batch_size)
        _HIDDEN.clear()  # one arm at a time (units are trained arm by arm)
        _HIDDEN[key] = (hidden, mask, labels)
    return _HIDDEN[key]


def train_unit(
    run: Run, unit: Unit, data: dict, resume_dir: Path, progress: Callable[[str], None]
) -> TrainedUnit:
    from reprolab.methods.cot_order import sft

    cfg, folder = run.cfg, run.asset(lm.ASSET)
    model = base_model(cfg, folder)
    n = len(sft.decoder_layers(model))
    if cfg.lora_layers > n:
        raise ValueError(f"lora_layers={cfg.lora_layers} but the model has {n} layers")
    first = n - cfg.lora_layers
    import torch

    t0 = time.perf_counter()
    # the frozen layers' output over the whole pool, once per arm; the seed's rows of it
    pool = sft_pairs(data, unit.variant)
    hidden, mask, labels = _cached_hidden(cfg, folder, model, pool, first)
    rows = torch.as_tensor(unit_rows(cfg, data, int(unit.seed))[0])
    width = int(mask[rows].sum(dim=1).max())  # right-padded: drop the pool's extra width
    hidden, mask, labels = hidden[rows, :width], mask[rows, :width], labels[rows, :width]
    cache_s = time.perf_counter() - t0
    top = sft.truncate_to_top(model, cfg.lora_layers)
    module = sft.module_class()(
        top, lr=cfg.lr, r=cfg.lora_r, alpha=cfg.lora_alpha, seed=int(unit.seed)
    )
    loader = sft.hidden_batches(hidden, mask, labels, cfg.batch_size, int(unit.seed))
    t1 = time.perf_counter()
    lm.fit_lora(module, loader, cfg.epochs, resume_dir, trainer=run.trainer)
    fit_s = time.perf_counter() - t1
    tokens = float((labels[:, 1:] != lm.IGNORE).sum())  # completion tokens (+EOS) per epoch
    history = [{**h, "completion_tokens": tokens} for h in module.history]
    progress(
        f"{len(history)} epochs, loss {history[-1]['train_loss']:.3f}, {tokens:.0f} tokens/epoch"
    )
    state = sft.adapter_state(module.model, first)
    signals = {}
    if cfg.finish_check:
        merged = sft.merged(base_model(cfg, folder), state, cfg.lora_r, cfg.lora_alpha)
        signals = finish_signals(run, merged, data, int(unit.seed))
        progress(
            f"answers ended within {cfg.max_new_tokens} tokens: training templates "
            f"{signals['train_ended']:.0%}, held-out {signals['held_out_ended']:.0%}"
        )
    return TrainedUnit(
        state=state,
        history=history,
        timings={"cache_seconds": cache_s, "fit_seconds": fit_s},
        signals=signals,
    )


#: the budgets at which the finish check reports the share of ended answers
BUDGET_STEP = 32


def finish_signals(run: Run, model, data: dict, seed: int) -> dict[str, float]:
    """The share of answers that ended (closing fence or end of text) within
    ``max_new_tokens``, and within each multiple of 32 tokens below it
    (``<where>_ended_at_<budget>``), on ``finish_check`` fresh problems of the seed's
    *training* templates (``train_``) and as many of its *held-out* templates
    (``held_out_``; fresh problems from their own generator, never the test problems).
    A generation signal for choosing the token budget (:func:`budget_for`): whether an
    answer ends, never whether it passes."""
    cfg = run.cfg
    train_t, test_t = split_for(cfg, seed)
    groups = {
        "train": P.generate(train_t, cfg.finish_check, cfg.data_seed + 2, cfg.n_tests),
        "held_out": P.generate(test_t, cfg.finish_check, cfg.data_seed + 3, cfg.n_tests),
    }
    prompts = [P.prompt(e) for examples in groups.values() for e in examples]
    gen = lm.generate(
        model,
        tokenizer(run.asset(lm.ASSET)),
        prompts,
        cfg.max_new_tokens,
        batch_size=cfg.gen_batch,
        stop=STOP,
    )
    out: dict[str, float] = {}
    for g, where in enumerate(groups):
        part = slice(g * cfg.finish_check, (g + 1) * cfg.finish_check)
        reasons, used = gen.finish_reasons[part], [len(t) for t in gen.tokens[part]]
        out[f"{where}_ended"] = ended_within(reasons, used, cfg.max_new_tokens)
        for budget in range(BUDGET_STEP, cfg.max_new_tokens, BUDGET_STEP):
            out[f"{where}_ended_at_{budget}"] = ended_within(reasons, used, budget)
    return out


#: the share of answers that must end inside the budget, in every arm (issue 46)
FINISH_TARGET = 0.95


def budget_for(
    shares: Mapping[str, Mapping[int, float]], target: float = FINISH_TARGET
) -> tuple[int, bool]:
    """The smallest budget at which every arm's share of ended answers reaches
    ``target`` (``shares``: arm -> budget -> share, from the finish check), and True; if
    no budget measured reaches it in every arm, the budget with the largest
    worst-arm share (the smallest of those tied) and False."""
    budgets = sorted(set.intersection(*(set(v) for v in shares.values())))
    if not budgets:
        raise ValueError("no budget measured in every arm")
    worst = {b: min(arm[b] for arm in shares.values()) for b in budgets}
    for b in budgets:
        if worst[b] >= target:
            return b, True
    best = max(worst.values())
    return min(b for b in budgets if worst[b] == best), False


def ended_within(reasons: Sequence[str], used: Sequence[int], budget: int) -> float:
    """The share of answers that ended (``ENDED``) having used at most ``budget`` tokens:
    greedy decoding with a smaller budget stops the others."""
    hits = [r in ENDED and n <= budget for r, n in zip(reasons, used, strict=True)]
    return sum(hits) / len(hits)


def restore(run: Run, unit: Unit, data: dict, state: dict):
    """The base model with the unit's adapter merged into its weights (eval mode)."""
    from reprolab.methods.cot_order import sft

    cfg = run.cfg
    return sft.merged(base_model(cfg, run.asset(lm.ASSET)), state, cfg.lora_r, cfg.lora_alpha)


# ---------------------------------------------------------------- evaluate


def score(
    texts: Sequence[str],
    failed: Sequence[bool],
    program: Callable[[int, str], str],
    tests: Sequence[str],
    workers: int,
) -> list[str]:
    """Outcome of each sample: the sandbox's status ('passed', 'failed', 'syntax_error',
    'timeout', ...) for the program built from its first code block, else
    ``no_generation`` (prompt over the window, empty text) or ``no_code``."""
    from reprolab.core import sandbox

    out: list[str | None] = [None] * len(texts)
    jobs = []
    for i, (text, bad) in enumerate(zip(texts, failed, strict=True)):
        if bad:
            out[i] = NO_GENERATION
            continue
        code = P.extract_code(text)
        if code is None or not code.strip():
            out[i] = NO_CODE
            continue
        jobs.append((i, program(i, code), tests[i]))
    results = sandbox.run_many([(p, t) for _, p, t in jobs], workers=workers) if jobs else []
    for (i, _, _), result in zip(jobs, results, strict=True):
        out[i] = result.status
    return [str(s) for s in out]


#: finish reasons of an answer that ended inside the token budget: the code block's
#: closing fence, or the model's own end of text
ENDED = ("stop", "eos")


def _rates(
    statuses: list[str], reasons: Sequence[str], tokens: list[list[int]], prefix: str
) -> dict[str, float]:
    n = len(statuses)
    if n == 0:  # no problems of this kind in the profile (HumanEval: n_humaneval 0)
        names = ("pass_at_1", "code_found", "finished", "syntax_errors", "new_tokens")
        return {f"{prefix}{name}": float("nan") for name in names}
    return {
        f"{prefix}pass_at_1": sum(s == "passed" for s in statuses) / n,
        f"{prefix}code_found": sum(s not in (NO_GENERATION, NO_CODE) for s in statuses) / n,
        f"{prefix}finished": sum(r in ENDED for r in reasons) / n,
        f"{prefix}syntax_errors": sum(s == "syntax_error" for s in statuses) / n,
        f"{prefix}new_tokens": float(np.mean([len(t) for t in tokens])),
    }


def evaluate_unit(run: Run, model, unit: Unit, data: dict, history: list[dict]):
    cfg = run.cfg
    tok = tokenizer(run.asset(lm.ASSET))
    rows = unit_rows(cfg, data, int(unit.seed))[1]  # the seed's held-out templates
    own = [str(data["test_prompt"][i]) for i in rows]
    he = [str(p) for p in data["he_prompt"]]
    gen = lm.generate(model, tok, own + he, cfg.max_new_tokens, batch_size=cfg.gen_batch, stop=STOP)
    k = len(own)
    own_status = score(
        gen.texts[:k],
        gen.failed[:k],
        lambda i, code: code,
        [str(data["test_tests"][i]) for i in rows],
        cfg.sandbox_workers,
    )
    stubs = [str(s) for s in data["he_stub"]]
    he_status = score(
        gen.texts[k:],
        gen.failed[k:],
        lambda i, code: stubs[i] + "\n" + code,
        [str(t) for t in data["he_tests"]],
        cfg.sandbox_workers,
    )
    return {
        **_rates(own_status, gen.finish_reasons[:k], gen.tokens[:k], ""),
        **_rates(he_status, gen.finish_reasons[k:], gen.tokens[k:], "humaneval_"),
        "generate_seconds": gen.seconds,
    }


def _ids(run: Run, unit: Unit, data: dict, n: int):
    import torch

    tok = tokenizer(run.asset(lm.ASSET))
    examples = train_examples(data)
    rows = unit_rows(run.cfg, data, int(unit.seed))[0][:n]
    return [torch.tensor([list(tok(P.prompt(examples[int(i)])).input_ids)]) for i in rows]


def example_input(run: Run, unit: Unit, data: dict):
    """One of the unit's training prompts' token ids (a forward pass of the whole prompt)."""
    return _ids(run, unit, data, 1)[0]


def calibration_inputs(run: Run, unit: Unit, data: dict, model) -> list:
    """The unit's training prompts (never its held-out templates), one row each."""
    return _ids(run, unit, data, 4)


plots = figures_hook()
