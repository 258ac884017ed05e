"""The four decoders on a causal LM, many problems at once.

One :class:`~reprolab.methods.crane.decode.Decoder` per row runs the decoder's logic
(sampling, the grammar check and the mask inside spans); this module feeds them from a
batched forward pass with a KV cache:

- the few-shot prefix every row shares is computed once and its cache repeated over the
  batch; each row's own question follows it, left-padded inside its block (the padding
  is masked out, position ids count real tokens only), so a row's logits do not depend
  on the batch it runs in (up to float rounding);
- a row that finishes leaves the batch (its cache rows are dropped);
- sampling is seeded per row (``row_seeds``), so a problem's sample does not depend on
  the batch either;
- a prompt that does not fit the context window with room for one token is a failed
  sample (``stopped="prompt_too_long"``), never a crash.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from reprolab.methods.crane.decode import Decoded, Decoder, Mode
from reprolab.methods.crane.grammar import TokenMask


def run(
    model,
    prefix: Sequence[int],
    suffixes: Sequence[Sequence[int]],
    vocab: Sequence[str],
    mask: TokenMask,
    mode: Mode,
    *,
    max_new_tokens: int,
    eos_id: int,
    end_ids: Sequence[int] = (),
    temperature: float,
    row_seeds: Sequence[int],
    stop: Sequence[str],
    pad_id: int,
    batch_size: int,
    prompt_open: bool = False,
) -> list[tuple[Decoded, list[float]]]:
    """Decode every ``prefix + suffixes[i]``; returns per row the decoder's result and
    the wall time (ms) of each constrained step's grammar work. ``prompt_open``: the
    prompts end inside an open ``<<`` (direct answers)."""
    import torch

    window = int(model.config.max_position_embeddings)
    end = {int(e) for e in end_ids} - {int(eos_id)}
    rows: list[Decoder] = []
    for i, suffix in enumerate(suffixes):
        gen = torch.Generator().manual_seed(int(row_seeds[i]))
        budget = min(max_new_tokens, window - len(prefix) - len(suffix))
        rows.append(
            Decoder(
                vocab,
                mask,
                mode,
                max_new_tokens=max(budget, 0),
                eos_id=eos_id,
                temperature=temperature,
                generator=gen,
                stop=stop,
                prompt_text="<<" if prompt_open else "",
            )
        )
        if budget <= 0:
            rows[-1].out.stopped = "prompt_too_long"
    todo = [i for i, r in enumerate(rows) if not r.done]
    with torch.inference_mode():
        base = model(input_ids=torch.tensor([list(prefix)]), use_cache=True).past_key_values
        for b in range(0, len(todo), batch_size):
            _batch(
                model,
                base,
                len(prefix),
                [rows[i] for i in todo[b : b + batch_size]],
                [suffixes[i] for i in todo[b : b + batch_size]],
                pad_id,
                end,
            )
    return [(r.result(), r.check_ms) for r in rows]


def _batch(model, base, n_prefix: int, rows: list[Decoder], suffixes, pad_id: int, end: set[int]):
    import torch

    width = max(len(s) for s in suffixes)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    block = torch.zeros((len(rows), width), dtype=torch.long)
    for r, s in enumerate(suffixes):
        ids[r, width - len(s) :] = torch.tensor(list(s))
        block[r, width - len(s) :] = 1
    mask = torch.cat([torch.ones((len(rows), n_prefix), dtype=torch.long), block], dim=1)
    position = n_prefix + (block.cumsum(-1) - 1).clamp_min(0)
    cache = copy.deepcopy(base)
    cache.batch_repeat_interleave(len(rows))
    out = model(
        input_ids=ids,
        attention_mask=mask,
        position_ids=position,
        past_key_values=cache,
        use_cache=True,
        logits_to_keep=1,
    )
    cache, logits = out.past_key_values, out.logits[:, -1, :]
    position = position[:, -1:]
    live = list(range(len(rows)))
    while live:
        nxt, keep = [], []
        for k, r in enumerate(live):
            dec = rows[r]
            token = dec.choose(logits[k])
            if token is not None and token in end:  # another special token ends the row
                dec.out.stopped, dec.done = "eos", True
                token = None
            if token is None:
                continue
            dec.push(token)
            if not dec.done:
                nxt.append(token)
                keep.append(k)
        if not keep:
            break
        if len(keep) < len(live):
            index = torch.tensor(keep)
            cache.batch_select_indices(index)
            mask, position = mask[index], position[index]
            live = [live[k] for k in keep]
        mask = torch.cat([mask, torch.ones((len(live), 1), dtype=mask.dtype)], dim=1)
        position = position + 1
        out = model(
            input_ids=torch.tensor(nxt)[:, None],
            attention_mask=mask,
            position_ids=position,
            past_key_values=cache,
            use_cache=True,
        )
        cache, logits = out.past_key_values, out.logits[:, -1, :]
