"""Post-training quantization of trained models, and how to measure what it buys.

The default scheme, ``int8_dynamic``, replaces every ``nn.Linear`` by PyTorch's
dynamically quantized linear layer: int8 weights (per-tensor affine), activations
quantized on the fly, and the matrix product run by real int8 kernels (fbgemm / x86
on this CPU). torchao's int8 path is not used here: on CPU it dispatches to a slower
reference matmul (measured in ``bench/bench_pipeline.py``), so it would report a
slowdown that says nothing about int8.
"""

from __future__ import annotations

import copy
import io
import statistics
import time
import warnings
from typing import Any

import torch
from torch import nn

SCHEMES = ("int8_dynamic",)


class UnknownSchemeError(ValueError):
    pass


def check_scheme(scheme: str) -> str:
    if scheme not in SCHEMES:
        raise UnknownSchemeError(
            f"unknown quantization scheme {scheme!r}; available: {', '.join(SCHEMES)}"
        )
    return scheme


def quantize(model: nn.Module, scheme: str) -> nn.Module:
    """Return a quantized copy of ``model`` (the fp32 model is left untouched)."""
    check_scheme(scheme)
    engines = torch.backends.quantized.supported_engines
    torch.backends.quantized.engine = "x86" if "x86" in engines else engines[-1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(
            copy.deepcopy(model).eval(), {nn.Linear}, dtype=torch.qint8
        )


def restore_quantized(arch: nn.Module, scheme: str, state: dict[str, Any]) -> nn.Module:
    """Rebuild a quantized model: quantize a fresh fp32 architecture, load the state."""
    model = quantize(arch, scheme)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.load_state_dict(state)
    return model.eval()


def load_state(path) -> dict[str, Any]:
    """``torch.load(weights_only=True)`` of a (possibly quantized) state dict, without the
    deprecation noise quantized tensors raise on every load."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.load(path, weights_only=True)


def state_bytes(model: nn.Module) -> int:
    """Serialized size of the state dict: what a checkpoint of the model costs on disk."""
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.save(model.state_dict(), buf)
    return buf.getbuffer().nbytes


def latency_ms(model: nn.Module, example: torch.Tensor, repeats: int = 30, warmup: int = 5) -> dict:
    """Median and interquartile range of one forward pass on ``example``, in ms."""
    model.eval()
    times = []
    with torch.inference_mode():
        for _ in range(warmup):
            model(example)
        for _ in range(repeats):
            start = time.perf_counter()
            model(example)
            times.append((time.perf_counter() - start) * 1e3)
    q = statistics.quantiles(times, n=4)
    return {"median": statistics.median(times), "iqr": q[2] - q[0]}
