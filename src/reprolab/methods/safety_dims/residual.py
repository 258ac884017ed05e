"""The language-model side of safety_dims: prompts as token ids, last-token hidden
states at every layer, the refusal score, token relevance and token removal.

- :func:`encode`: a prompt in the model's chat template as ids, with the token span of
  the user's message and a mask of the tokens the wrapper added (its trigger words);
- :func:`last_states`: the residual stream at the last prompt token after every
  decoder layer (n x d per layer), and the refusal score there;
- refusal score: ``logit(first token of the refusal) - logit(first token of the
  compliant answer)`` at the last prompt token ("I" against "Sure" for SmolLM2's
  tokenizer); a prompt counts as refused when it is > 0. One forward pass, no
  generation, and differentiable;
- :func:`relevance`: gradient x input of the projection of the last-token state at one
  layer onto a direction (component 0 of the shift), summed over the embedding
  dimension: one score per input token. The reference (``BMPixel/safety-residual-space``,
  ``trigger_removal.py``) uses partial layer-wise relevance propagation (PLRP) of the
  same projection (component 0, a middle layer); gradient x input is its first-order
  counterpart (LRP's epsilon rule equals it on a linear model);
- :func:`remove_tokens`: the prompt ids with some positions deleted.

``torch`` is imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from reprolab.core import lm


class TokenizerInfo:
    """What :func:`reprolab.core.lm.tiny_model` reads from a tokenizer (vocabulary size and
    special ids), rebuilt from the prepared data so that no hook but ``prepare`` needs the
    tokenizer files."""

    def __init__(self, meta: Sequence[int]) -> None:
        vocab, bos, eos, pad = (int(x) for x in meta)
        self._vocab = vocab
        self.bos_token_id = bos if bos >= 0 else None
        self.eos_token_id = eos
        self.pad_token_id = pad if pad >= 0 else None

    def __len__(self) -> int:
        return self._vocab


def tokenizer_meta(tokenizer) -> list[int]:
    def val(x):
        return -1 if x is None else int(x)

    return [len(tokenizer), val(tokenizer.bos_token_id), val(tokenizer.eos_token_id),
            val(tokenizer.pad_token_id)]  # fmt: skip


def encode(tokenizer, text: str, triggers: Sequence[tuple[int, int]] = ()):
    """``text`` as the user's message in the chat template: (ids, user_start, user_end,
    trigger mask over ids). The template's text before and after the message and the
    message itself are tokenized separately, so the message's token span is exact."""
    full = lm.chat_prompt(tokenizer, text)
    at = full.index(text)
    pre = list(tokenizer(full[:at], add_special_tokens=False).input_ids)
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    post = list(tokenizer(full[at + len(text) :], add_special_tokens=False).input_ids)
    body = list(enc.input_ids)
    spans = [_strip(text, a, b) for a, b in triggers]
    hit = [any(s < b and a < e for a, b in spans) for s, e in enc.offset_mapping]
    ids = pre + body + post
    mask = [False] * len(pre) + hit + [False] * len(post)
    return ids, len(pre), len(pre) + len(body), mask


def _strip(text: str, a: int, b: int) -> tuple[int, int]:
    """A character span without its leading and trailing whitespace (so the token that
    carries the space before the request is not counted as a wrapper word)."""
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


def pad_rows(rows: Sequence[Sequence[int]], pad: int) -> tuple[np.ndarray, np.ndarray]:
    """Right-padded int64 matrix and the row lengths."""
    width = max(len(r) for r in rows)
    out = np.full((len(rows), width), pad, dtype=np.int64)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
    return out, np.array([len(r) for r in rows], dtype=np.int64)


def _decoder(model):
    """The decoder stack (``LlamaModel``) of a causal LM."""
    return model.model


def last_states(
    model,
    ids: np.ndarray,
    lengths: np.ndarray,
    first: tuple[int, int],
    batch_size: int = 16,
    with_states: bool = True,
) -> tuple[np.ndarray | None, np.ndarray]:
    """(states L x n x d: the residual stream at each row's last token after every decoder
    layer, or None; refusal scores n). Rows are right-padded (the causal mask keeps the
    padding out of earlier positions); batches are formed by length."""
    import torch

    n = len(lengths)
    order = np.argsort(-lengths, kind="stable")
    states = None
    scores = np.zeros(n)
    refuse, comply = first
    with torch.inference_mode():
        for b in range(0, n, batch_size):
            rows = order[b : b + batch_size]
            width = int(lengths[rows].max())
            x = torch.as_tensor(ids[rows, :width])
            mask = (torch.arange(width)[None, :] < torch.as_tensor(lengths[rows])[:, None]).long()
            out = _decoder(model)(
                input_ids=x, attention_mask=mask, output_hidden_states=with_states
            )
            last = torch.as_tensor(lengths[rows] - 1)
            pick = torch.arange(len(rows))
            final = out.last_hidden_state[pick, last]
            logits = model.lm_head(final).float()
            scores[rows] = (logits[:, refuse] - logits[:, comply]).numpy()
            if with_states:
                hs = out.hidden_states[1:]
                if states is None:
                    states = np.zeros((len(hs), n, hs[0].shape[-1]), dtype=np.float32)
                for layer, h in enumerate(hs):
                    states[layer, rows] = h[pick, last].float().numpy()
    return states, scores


def relevance(
    model,
    ids: np.ndarray,
    lengths: np.ndarray,
    layer: int,
    direction: np.ndarray,
    batch_size: int = 8,
) -> np.ndarray:
    """Gradient x input of ``<h_layer(last token), direction>`` with respect to the input
    embeddings, summed over the embedding dimension: n x width (0 on padding). Needs a
    model with autograd (fp32)."""
    import torch

    n, width_all = ids.shape
    out = np.zeros((n, width_all))
    emb_layer = model.get_input_embeddings()
    v = torch.as_tensor(np.asarray(direction, np.float32))
    for b in range(0, n, batch_size):
        rows = np.arange(b, min(n, b + batch_size))
        width = int(lengths[rows].max())
        x = torch.as_tensor(ids[rows, :width])
        mask = (torch.arange(width)[None, :] < torch.as_tensor(lengths[rows])[:, None]).long()
        with torch.enable_grad():
            emb = emb_layer(x).detach().requires_grad_(True)
            res = _decoder(model)(inputs_embeds=emb, attention_mask=mask, output_hidden_states=True)
            h = res.hidden_states[layer + 1]
            last = torch.as_tensor(lengths[rows] - 1)
            proj = h[torch.arange(len(rows)), last] @ v
            (grad,) = torch.autograd.grad(proj.sum(), emb)
        rel = (grad * emb.detach()).sum(-1) * mask
        out[rows, :width] = rel.numpy()
    return out


def top_positions(rel: np.ndarray, start: int, end: int, k: int) -> np.ndarray:
    """The ``k`` positions in [start, end) with the highest relevance (descending), fewer
    when the span is shorter than k + 1 (one token of the message always stays)."""
    k = max(0, min(k, end - start - 1))
    span = rel[start:end]
    order = np.argsort(-span, kind="stable")[:k]
    return (order + start).astype(np.int64)


def random_positions(start: int, end: int, k: int, rng: np.random.Generator) -> np.ndarray:
    k = max(0, min(k, end - start - 1))
    return np.sort(rng.choice(np.arange(start, end), size=k, replace=False)).astype(np.int64)


def remove_tokens(row: np.ndarray, length: int, positions: Sequence[int]) -> list[int]:
    """The first ``length`` ids of ``row`` without ``positions``."""
    drop = {int(p) for p in positions if 0 <= int(p) < length}
    return [int(t) for i, t in enumerate(row[:length]) if i not in drop]
