"""LoRA SFT on the top layers of a causal LM, the frozen layers below computed once.

LoRA on the attention projections of the top ``k`` decoder layers only leaves every
layer below frozen, so their output (the residual stream entering layer ``n - k``) is a
fixed function of the input tokens: :func:`hidden_before` computes it once per SFT
dataset (one arm), and training runs the top ``k`` layers and the output head on it,
through the core :class:`reprolab.core.lm.LoraModule` (Lightning, adapter-only
checkpoints, resume after a kill). This is exactly LoRA on layers ``n-k .. n-1`` of the
full model (no dropout; ``tests/unit/test_cot_order_sft.py`` checks the logits), at a
fraction of the cost: on two CPU cores a LoRA step of the whole 135M model over 8 x 160
tokens takes ~25 s. The loss is the completion tokens' cross-entropy, with the output
head applied to those positions only (a 49k-word vocabulary is a fifth of the model).

The adapter is stored under the full model's layer indices (``layers.<n-k+i>``), so it is
an ordinary ``peft`` adapter of the full model: :func:`merged` loads it with
``layers_to_transform`` and merges it into the base weights.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence

import torch
from torch import nn

from reprolab.core import lm


class _Stop(Exception):
    """Raised by the pre-hook once the residual stream of the wanted layer is captured."""


def decoder_layers(model) -> nn.ModuleList:
    return model.model.layers


def hidden_before(model, layer: int, ids, mask, batch_size: int = 8) -> torch.Tensor:
    """The residual stream entering decoder layer ``layer`` (``layer == n`` is not
    allowed: use the model's last hidden state), for every row of ``ids`` / ``mask``."""
    layers = decoder_layers(model)
    if not 0 <= layer < len(layers):
        raise ValueError(f"layer must be in [0, {len(layers) - 1}], got {layer}")
    captured: dict[str, torch.Tensor] = {}

    def grab(module, args, kwargs):
        captured["h"] = kwargs["hidden_states"] if "hidden_states" in kwargs else args[0]
        raise _Stop

    handle = layers[layer].register_forward_pre_hook(grab, with_kwargs=True)
    out = []
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():  # not inference_mode: the result feeds an autograd graph
            for b in range(0, len(ids), batch_size):
                with contextlib.suppress(_Stop):  # raised once the layer is reached
                    model.model(
                        input_ids=ids[b : b + batch_size],
                        attention_mask=mask[b : b + batch_size],
                        use_cache=False,
                    )
                out.append(captured.pop("h").detach().clone())
    finally:
        handle.remove()
        model.train(was_training)
    return torch.cat(out)


def truncate_to_top(model, k: int):
    """``model`` itself, cut to its top ``k`` decoder layers (fed with
    ``inputs_embeds`` = :func:`hidden_before` of layer ``n - k``). Mutates the model."""
    layers = decoder_layers(model)
    n = len(layers)
    if not 1 <= k <= n:
        raise ValueError(f"k must be in [1, {n}], got {k}")
    model.model.layers = nn.ModuleList(list(layers)[n - k :])
    model.config.num_hidden_layers = k
    if getattr(model.config, "layer_types", None):
        model.config.layer_types = list(model.config.layer_types)[n - k :]
    return model


def _module_class():
    import torch.nn.functional as F

    class TopLoraModule(lm.LoraModule):
        """:class:`reprolab.core.lm.LoraModule` on a top-only model: batches are
        (hidden states entering the top layers, mask, labels); logits only where a
        label is."""

        def loss(self, batch) -> torch.Tensor:
            h, mask, labels = batch
            width = int(mask.sum(1).max())  # right padding: drop the all-pad columns
            h, mask, labels = h[:, :width], mask[:, :width], labels[:, :width]
            causal = self.model.get_base_model()
            out = causal.model(inputs_embeds=h, attention_mask=mask, use_cache=False)
            hidden = out.last_hidden_state[:, :-1]
            target = labels[:, 1:]
            keep = target != lm.IGNORE
            logits = causal.lm_head(hidden[keep]).float()
            return F.cross_entropy(logits, target[keep])

    return TopLoraModule


_CLASS = None


def module_class():
    global _CLASS
    if _CLASS is None:
        _CLASS = _module_class()
    return _CLASS


def hidden_batches(hidden, mask, labels, batch_size: int, seed: int):
    """A DataLoader over the cached hidden states; batch order a function of (seed,
    epoch) only, as :func:`reprolab.core.lm.completion_batches`."""
    from reprolab.core.training import EpochBatchSampler, TensorBatches

    sampler = EpochBatchSampler(len(hidden), batch_size, seed, True)
    return torch.utils.data.DataLoader(
        TensorBatches(hidden, mask, labels), sampler=sampler, batch_size=None
    )


_LAYER = re.compile(r"\.layers\.(\d+)\.")


def shift_layers(state: dict[str, torch.Tensor], offset: int) -> dict[str, torch.Tensor]:
    """Adapter keys with every ``.layers.<i>.`` renumbered to ``.layers.<i + offset>.``."""
    out = {}
    for key, value in state.items():
        new, hits = _LAYER.subn(lambda m: f".layers.{int(m.group(1)) + offset}.", key)
        if hits != 1:
            raise ValueError(f"adapter key {key!r} names {hits} layers, expected one")
        out[new] = value
    return out


def adapter_state(peft_model, offset: int) -> dict[str, torch.Tensor]:
    """The adapter's tensors (peft's state dict: no base weights), keyed for the full
    model (``offset`` = index of the first adapted layer)."""
    from peft import get_peft_model_state_dict

    state = get_peft_model_state_dict(peft_model)
    return {k: v.detach().clone().contiguous() for k, v in shift_layers(state, offset).items()}


def adapted_layers(state: dict[str, torch.Tensor]) -> list[int]:
    return sorted({int(m.group(1)) for k in state for m in [_LAYER.search(k)] if m})


def merged(base, state: dict[str, torch.Tensor], r: int, alpha: int):
    """``base`` with the adapter ``state`` (full-model layer indices) merged into its
    weights: an ordinary model again, which the quantize stage can quantize. A state
    that is empty or that misses adapter tensors raises
    :class:`reprolab.core.lm.MissingAdapterError`."""
    lm.require("peft")
    from peft import LoraConfig, get_peft_model, set_peft_model_state_dict

    layers = adapted_layers(state)
    if not state or not layers:
        raise lm.MissingAdapterError("the checkpoint holds no LoRA adapter tensors")
    n = len(decoder_layers(base))
    if layers[-1] >= n:
        raise lm.MissingAdapterError(
            f"adapter does not fit the model: it adapts layer {layers[-1]}, the model has {n}"
        )
    cfg = LoraConfig(
        r=r,
        lora_alpha=alpha,
        lora_dropout=0.0,
        target_modules=list(lm.LORA_TARGETS),
        layers_to_transform=layers,
        bias="none",
        task_type="CAUSAL_LM",
    )
    peft_model = get_peft_model(base, cfg)
    result = set_peft_model_state_dict(peft_model, state)
    missing = [k for k in result.missing_keys if "lora_" in k]
    unexpected = list(getattr(result, "unexpected_keys", []) or [])
    if missing or unexpected:
        raise lm.MissingAdapterError(
            f"adapter does not fit the model: {len(missing)} missing (e.g. "
            f"{(missing or ['-'])[0]}), {len(unexpected)} unexpected tensors"
        )
    return peft_model.merge_and_unload().eval()


def sft_tensors(tokenizer, pairs: Sequence[tuple[str, str]], max_len: int):
    """(input ids, attention mask, labels) of the (prompt, completion) pairs, via
    :func:`reprolab.core.lm.completion_batches` (labels only on the completion + EOS)."""
    loader = lm.completion_batches(tokenizer, pairs, 1, 0, max_len=max_len, shuffle=False)
    return loader.dataset.tensors
