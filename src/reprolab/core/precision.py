"""Full-precision variants of a trained network without the quantize stage: a method
that declares ``MethodSpec.precisions = ("fp32", "bf16")`` is evaluated on a copy of its
model cast to bf16 (a language model's usual inference precision)."""

from __future__ import annotations

import copy
from typing import Any

import torch

DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def cast(model: Any, precision: str) -> Any:
    """A copy of ``model`` whose parameters and floating inputs are ``precision`` and
    whose floating outputs come back as float32, so evaluation code is unchanged."""
    if precision not in DTYPES:
        raise ValueError(f"unknown precision {precision!r}; known: {', '.join(DTYPES)}")
    if not isinstance(model, torch.nn.Module):
        raise TypeError(
            f"precision {precision!r} needs an nn.Module; got {type(model).__name__} "
            "(declare precisions=('fp32',) for a method whose trained object is not a network)"
        )
    dtype = getattr(torch, DTYPES[precision])
    return Cast(copy.deepcopy(model).to(dtype), dtype).eval()


def _convert(obj: Any, dtype: Any) -> Any:
    if isinstance(obj, torch.Tensor) and obj.is_floating_point():
        return obj.to(dtype)
    if isinstance(obj, tuple | list):
        return type(obj)(_convert(o, dtype) for o in obj)
    if isinstance(obj, dict):
        return {k: _convert(v, dtype) for k, v in obj.items()}
    return obj


class Cast(torch.nn.Module):
    """Runs the wrapped module in ``dtype``: floating inputs cast in, outputs to fp32."""

    def __init__(self, inner: Any, dtype: Any) -> None:
        super().__init__()
        self.inner = inner
        self.dtype = dtype

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        out = self.inner(*_convert(args, self.dtype), **_convert(kwargs, self.dtype))
        return _convert(out, torch.float32)

    def __getattr__(self, name: str) -> Any:  # reach the inner model's own attributes
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(super().__getattr__("inner"), name)
