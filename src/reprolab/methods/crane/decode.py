"""CRANE's two-state decoder, independent of the model behind it.

``step(ids) -> logits`` is any next-token function (a causal LM with its KV cache kept
by the caller's closure, or a toy model in tests); ``vocab[i]`` is the text token i
decodes to. Three decoders share the loop, so they differ only where the paper says:

- ``unconstrained``: sample every token from the model.
- ``constrained``: the whole output is one constrained span (constrained direct
  answering): every token must keep it a valid prefix of the grammar.
- ``crane``: unconstrained until the output ends with ``<<``; then each sampled token is
  checked (``grammar.span_ok``), and only if it fails are the logits masked to the
  tokens the mask allows (llguidance's :class:`~reprolab.methods.crane.engine.EngineMask`
  in the pipeline, or the lark :class:`~reprolab.methods.crane.grammar.TokenMask`) and
  the token drawn again; back to unconstrained once ``>>`` closes the span.

The end-of-sequence token is allowed inside a span only when the span is already a whole
sentence. A span in which no token is allowed ends the generation (recorded, never a
crash). Time spent computing masks is measured per masked step.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import torch

from reprolab.methods.crane.grammar import CLOSE, OPEN, TokenMask

Mode = Literal["unconstrained", "constrained", "crane"]
MODES: tuple[Mode, ...] = ("unconstrained", "constrained", "crane")


@dataclass
class Decoded:
    text: str
    token_ids: list[int]
    spans: list[str] = field(default_factory=list)  # closed constrained spans
    open_span: str | None = None  # a span still open when generation ended
    checked_steps: int = 0  # tokens sampled inside a span
    masked_steps: int = 0  # of those, steps where the sample failed and a mask was used
    mask_ms: list[float] = field(default_factory=list)
    stopped: str = "budget"  # budget | eos | stop | dead_end


def _pick(logits: torch.Tensor, temperature: float, generator: torch.Generator | None) -> int:
    if temperature <= 0:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits / temperature, dim=-1)
    return int(torch.multinomial(probs, 1, generator=generator))


class Decoder:
    """One sequence's decoding state (the loop body of :func:`decode`), so that a batched
    driver can run one per row: :meth:`choose` picks the next token from the model's
    logits (checking it, and masking only on failure, inside a span); :meth:`push`
    appends it and moves between the two states. ``done`` says the row has finished
    (``out.stopped`` says why)."""

    def __init__(
        self,
        vocab: Sequence[str],
        mask: TokenMask,
        mode: Mode,
        *,
        max_new_tokens: int,
        eos_id: int | None = None,
        temperature: float = 0.0,
        generator: torch.Generator | None = None,
        stop: Sequence[str] = (),
        prompt_text: str = "",
    ):
        if mode not in MODES:
            raise ValueError(f"unknown decoder {mode!r}; expected one of {', '.join(MODES)}")
        self.vocab, self.mask, self.mode = vocab, mask, mode
        self.grammar = mask.grammar
        self.max_new_tokens = max_new_tokens
        self.eos_id, self.temperature, self.generator = eos_id, temperature, generator
        self.stop = tuple(stop)
        self.out = Decoded(text="", token_ids=[])
        self.span: str | None = None  # None: the unconstrained state
        if mode == "constrained":
            self.span = ""
        elif mode == "crane" and prompt_text.rfind(OPEN) > prompt_text.rfind(CLOSE):
            self.span = prompt_text[prompt_text.rindex(OPEN) + len(OPEN) :]
        self.done = max_new_tokens <= 0
        #: wall time of the grammar work (check, and mask when needed) per checked step
        self.check_ms: list[float] = []

    def choose(self, logits: torch.Tensor) -> int | None:
        """The next token, or None when the row ends here (EOS, or a span in which no
        token is allowed); the row is then ``done``."""
        logits = logits.float()
        token = _pick(logits, self.temperature, self.generator)
        out, span, grammar = self.out, self.span, self.grammar
        if span is not None:
            t0 = time.perf_counter()
            out.checked_steps += 1
            if not _fits(grammar, span, token, self.vocab, self.eos_id):
                t1 = time.perf_counter()
                allowed = self.mask.allowed(span)
                if self.eos_id is not None and grammar.complete(span):
                    allowed.append(self.eos_id)
                out.mask_ms.append((time.perf_counter() - t1) * 1e3)
                out.masked_steps += 1
                if not allowed:
                    out.stopped = "dead_end"
                    self.done = True
                    self.check_ms.append((time.perf_counter() - t0) * 1e3)
                    return None
                keep = torch.full_like(logits, float("-inf"))
                keep[allowed] = logits[allowed]
                token = _pick(keep, self.temperature, self.generator)
            self.check_ms.append((time.perf_counter() - t0) * 1e3)
        if self.eos_id is not None and token == self.eos_id:
            out.stopped = "eos"
            self.done = True
            return None
        return token

    def push(self, token: int) -> None:
        """Append ``token`` (chosen by :meth:`choose`) and update the state."""
        out, mode = self.out, self.mode
        out.token_ids.append(token)
        piece = self.vocab[token]
        out.text += piece
        if self.span is not None:
            span = self.span + piece
            self.span = span
            if CLOSE in span:  # closed: back to unconstrained (crane) or done
                out.spans.append(span[: span.index(CLOSE)])
                rest = span[span.index(CLOSE) + len(CLOSE) :]
                self.span = None
                if mode == "constrained":
                    out.stopped = "stop"
                    self.done = True
                    return
                if OPEN in rest:  # a new span opened in the same token
                    self.span = rest[rest.rindex(OPEN) + len(OPEN) :]
        elif mode == "crane" and OPEN in out.text[-(len(piece) + len(OPEN)) :]:
            # whatever this token already wrote after "<<" is checked next
            self.span = out.text[out.text.rindex(OPEN) + len(OPEN) :]
        if self.stop and any(s in out.text for s in self.stop):
            out.stopped = "stop"
            self.done = True
        elif len(out.token_ids) >= self.max_new_tokens:
            self.done = True  # stopped stays "budget"

    def result(self) -> Decoded:
        self.out.open_span = self.span
        return self.out


def decode(
    step: Callable[[list[int]], torch.Tensor],
    prompt_ids: Sequence[int],
    vocab: Sequence[str],
    mask: TokenMask,
    mode: Mode,
    *,
    max_new_tokens: int,
    eos_id: int | None = None,
    temperature: float = 0.0,
    generator: torch.Generator | None = None,
    stop: Sequence[str] = (),
    prompt_text: str = "",
) -> Decoded:
    """Generate up to ``max_new_tokens`` tokens after ``prompt_ids`` with one decoder.
    ``prompt_text``: the prompt as text, so that ``crane`` starts inside a span when the
    prompt ends in an open ``<<``."""
    dec = Decoder(
        vocab,
        mask,
        mode,
        max_new_tokens=max_new_tokens,
        eos_id=eos_id,
        temperature=temperature,
        generator=generator,
        stop=stop,
        prompt_text=prompt_text,
    )
    ids = list(prompt_ids)
    while not dec.done:
        token = dec.choose(step(ids))
        if token is None:
            break
        ids.append(token)
        dec.push(token)
    return dec.result()


def _fits(grammar, span: str, token: int, vocab: Sequence[str], eos_id: int | None) -> bool:
    if eos_id is not None and token == eos_id:
        return grammar.complete(span)
    return grammar.span_ok(span + vocab[token])
