"""Post-training quantization of trained models, and how to measure what it buys.

Schemes (names parsed in :mod:`reprolab.core.schemes`):

``int8_dynamic``
    Every ``nn.Linear`` becomes PyTorch's dynamically quantized linear layer: int8
    weights (per-tensor affine), activations quantized on the fly, the product run by
    real int8 kernels (fbgemm / x86). Every ``nn.Conv1d/2d/3d`` becomes an
    :class:`Int8Conv`: torch.ao eager static quantization of that one layer (quantize the
    fp32 input with a per-tensor uint8 range, int8 convolution with per-output-channel
    weights, dequantize the output), its input and output ranges calibrated by
    observers (the x86 default qconfig: histogram for activations, per-channel min/max
    for weights) on the calibration inputs, so a model with convolutions needs them.
    Inputs and outputs stay fp32, so the model is called as before. Convolutions the
    kernel cannot run (string padding such as ``"same"``, circular or replicate padding)
    stay fp32, and :func:`coverage` says so. The only scheme whose latency means
    something on this CPU. torchao's int8 path is not used: on CPU it dispatches to a
    slower reference matmul for linear layers (measured in ``bench/bench_pipeline.py``)
    and has no eager int8 convolution.

``rtn_w<b>a<b>``
    Round-to-nearest fake quantization: symmetric per-output-channel weights, symmetric
    per-token activations (one scale per row of the layer input). Weights are stored as
    packed integer codes plus fp16 scales, so sizes are real; the product runs in fp32,
    so there is no speedup and none is reported. Convolutions stay fp32 (as do
    ``nn.MultiheadAttention``'s own projections, for every scheme): :func:`coverage`
    records the share of parameters each scheme actually quantized.

``bitdgdm_w<b>a<b>`` (and ``_noact`` / ``_nodecomp`` ablations)
    Bit-DGDM's outlier-aware quantization, as far as it can be reconstructed (the paper
    text and code were not available; see ``methods/bit_dgdm/README.md``):

    - activations ``X = X_D + S_X``: entries with ``|x| > tau`` (a per-layer threshold
      calibrated from the full-precision model's own inputs, the ``ACT_OUTLIER_QUANTILE``
      quantile of ``|x|``) form a sparse full-precision matrix ``S_X``; the dense rest
      ``X_D`` is quantized per token;
    - weights ``W = L R^T + S_W + E``: a robust-PCA style alternating solver finds a
      rank-``r`` part ``L R^T`` and an ``alpha``-sparse outlier part ``S_W`` (both kept
      in fp16); the residual ``E`` is quantized per channel;
    - ``Y = Q(X_D) Q(E)^T + X_D (L R^T + S_W)^T + S_X W_hat^T`` with
      ``W_hat = L R^T + S_W + Q(E)``: the card's four products, with the low-bit
      product on the outlier-free parts and full precision on the sparse and low-rank
      paths.

Effective bytes (:func:`effective_bytes`) count what a deployment would store: packed
low-bit codes, fp16 scales, fp16 low-rank factors, sparse outliers as fp16 values plus
int32 indices, fp32 biases and every layer that was not quantized at full size.
"""

from __future__ import annotations

import collections
import copy
import functools
import hashlib
import io
import math
import statistics
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from reprolab.core.schemes import SCHEMES, Scheme, UnknownSchemeError, check_scheme, parse
from reprolab.core.threads import torch_threads

__all__ = [
    "SCHEMES",
    "UnknownSchemeError",
    "check_scheme",
    "parse",
    "quantize",
    "restore_quantized",
    "effective_bytes",
    "byte_parts",
    "BYTE_PARTS",
    "layer_errors",
    "layer_outputs",
    "state_bytes",
    "latency_ms",
    "QuantLinear",
    "Int8Conv",
    "coverage",
    "call_model",
]

#: share of activation entries per layer treated as outliers (kept in full precision)
ACT_OUTLIER_QUANTILE = 0.99
#: share of weight entries per layer kept as sparse fp16 outliers (``alpha``)
WEIGHT_SPARSITY = 0.005
#: rank of the low-rank weight part, as a share of ``min(out, in)`` (at least 1)
RANK_FRACTION = 1 / 16
#: alternating steps of the low-rank + sparse solver
DECOMP_ITERS = 8
#: activation entries per layer kept to estimate its threshold
_CALIB_SAMPLE = 1_000_000


# --------------------------------------------------------------------------- primitives


def qmax(bits: int) -> int:
    return 2 ** (bits - 1) - 1


def _rounded(x: torch.Tensor, bits: int, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric round-to-nearest along ``dim``: the codes as whole floats in
    [-qmax, qmax] and one scale per slice."""
    amax = x.abs().amax(dim=dim, keepdim=True)
    scale = torch.where(amax > 0, amax / qmax(bits), torch.ones_like(amax))
    return torch.clamp(torch.round(x / scale), -qmax(bits), qmax(bits)), scale


def quantize_codes(x: torch.Tensor, bits: int, dim: int = -1) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric round-to-nearest along ``dim``: integer codes in [-qmax, qmax] and one
    scale per slice, with ``x ~ codes * scale``."""
    codes, scale = _rounded(x, bits, dim)
    return codes.to(torch.int8), scale


def fake_quant(x: torch.Tensor, bits: int, dim: int = -1) -> torch.Tensor:
    """Quantize-dequantize ``x`` along ``dim`` (per token for activations with dim=-1,
    per output channel for an (out, in) weight with dim=1). The error of each entry is
    at most half a step, ``max|x_slice| / (2 qmax)``. The same values as
    ``codes * scale`` of :func:`quantize_codes`, without the round trip through int8."""
    if bits >= 16:
        return x
    codes, scale = _rounded(x, bits, dim)
    return codes.mul_(scale)


def split_outliers(x: torch.Tensor, threshold: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``x = dense + sparse`` exactly: ``sparse`` holds the entries with ``|x| > threshold``."""
    mask = x.abs() > threshold
    sparse = torch.where(mask, x, torch.zeros_like(x))
    return x - sparse, sparse


def decompose(
    w: torch.Tensor, rank: int, sparsity: float, iters: int = DECOMP_ITERS
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Low-rank plus sparse split ``w ~ L R^T + S`` by alternating projections (robust-PCA
    style): ``L R^T`` is the best rank-``rank`` fit of ``w - S``; ``S`` keeps the
    ``sparsity`` share of entries of ``w - L R^T`` with the largest magnitude.

    Runs on one torch thread whatever the stage's setting: a multi-threaded SVD differs
    in its last bits, the top-k selection then picks other entries and the split moves
    by up to 1e-3, so the quantized weights (and dvc.lock) would depend on the thread
    count. The matrices are layer-sized, where one thread costs little."""
    with torch_threads(1):
        return _decompose(w, rank, sparsity, iters)


def _decompose(
    w: torch.Tensor, rank: int, sparsity: float, iters: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    w = w.detach().to(torch.float32)
    m, n = w.shape
    rank = max(0, min(rank, m, n))
    k = int(round(sparsity * w.numel()))
    s = torch.zeros_like(w)
    left, right = w.new_zeros(m, rank), w.new_zeros(n, rank)
    for _ in range(max(1, iters)):
        if rank:
            u, sv, vh = torch.linalg.svd(w - s, full_matrices=False)
            left, right = u[:, :rank] * sv[:rank], vh[:rank].T
        resid = w - left @ right.T
        s = torch.zeros_like(w)
        if k:
            idx = resid.abs().flatten().topk(k).indices
            s.view(-1)[idx] = resid.view(-1)[idx]
    return left, right, s


def _pack(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """Integer codes as stored: two 4-bit codes per byte when ``bits <= 4``."""
    flat = codes.flatten().to(torch.int16)
    if bits > 4:
        return flat.to(torch.int8)
    nib = (flat + 8).to(torch.uint8)
    if nib.numel() % 2:
        nib = torch.cat([nib, nib.new_zeros(1)])
    return nib[0::2] | (nib[1::2] << 4)


def _unpack(packed: torch.Tensor, bits: int, numel: int) -> torch.Tensor:
    if bits > 4:
        return packed.to(torch.int16)[:numel]
    low = (packed & 0x0F).to(torch.int16) - 8
    high = (packed >> 4).to(torch.int16) - 8
    return torch.stack([low, high], dim=1).flatten()[:numel]


# ------------------------------------------------------------------------------ layer


class QuantLinear(nn.Module):
    """A fake-quantized replacement of ``nn.Linear`` (RTN or Bit-DGDM).

    Buffers hold exactly what a deployment stores (packed codes, fp16 scales and
    factors, sparse outliers); the dequantized fp32 weight is rebuilt once and cached.
    """

    def __init__(self, in_features: int, out_features: int, scheme: Scheme, bias: bool):
        super().__init__()
        self.in_features, self.out_features, self.scheme = in_features, out_features, scheme
        self.register_buffer("codes", torch.zeros(0, dtype=torch.int8))
        self.register_buffer("scale", torch.zeros(out_features, dtype=torch.float16))
        self.register_buffer("bias", torch.zeros(out_features) if bias else None)
        self.register_buffer("lr_left", torch.zeros(out_features, 0, dtype=torch.float16))
        self.register_buffer("lr_right", torch.zeros(in_features, 0, dtype=torch.float16))
        self.register_buffer("sparse_idx", torch.zeros(0, dtype=torch.int32))
        self.register_buffer("sparse_val", torch.zeros(0, dtype=torch.float16))
        self.register_buffer("act_threshold", torch.tensor(math.inf))
        # (dense, extra, dense + extra): the dequantized weight, rebuilt once
        self._cache: tuple[torch.Tensor, torch.Tensor | None, torch.Tensor] | None = None

    @classmethod
    def from_linear(cls, linear: nn.Linear, scheme: Scheme, threshold: float = math.inf):
        w = linear.weight.detach().to(torch.float32)
        out_f, in_f = w.shape
        layer = cls(in_f, out_f, scheme, linear.bias is not None)
        if linear.bias is not None:
            layer.bias = linear.bias.detach().to(torch.float32).clone()
        resid = w
        if scheme.decompose:
            rank = max(1, math.ceil(RANK_FRACTION * min(out_f, in_f)))
            left, right, s = decompose(w, rank, WEIGHT_SPARSITY)
            layer.lr_left, layer.lr_right = left.half(), right.half()
            idx = s.flatten().nonzero().flatten()
            layer.sparse_idx = idx.to(torch.int32)
            layer.sparse_val = s.flatten()[idx].half()
            resid = w - layer._extra_weight()  # what fp16 storage really leaves over
        _, scale = quantize_codes(resid, scheme.w_bits, dim=1)
        scale = scale.half().float()  # quantize with the scale exactly as stored
        codes = torch.clamp(torch.round(resid / scale), -qmax(scheme.w_bits), qmax(scheme.w_bits))
        layer.codes = _pack(codes.to(torch.int8), scheme.w_bits)
        layer.scale = scale.flatten().half()
        layer.act_threshold = torch.tensor(float(threshold))
        return layer

    def _extra_weight(self) -> torch.Tensor | None:
        """``L R^T + S_W`` in fp32 (None without the decomposition)."""
        if not self.scheme.decompose:
            return None
        extra = self.lr_left.float() @ self.lr_right.float().T
        flat = extra.flatten()
        flat[self.sparse_idx.long()] += self.sparse_val.float()
        return flat.view(self.out_features, self.in_features)

    def _weights(self) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
        if self._cache is None:
            numel = self.out_features * self.in_features
            codes = _unpack(self.codes, self.scheme.w_bits, numel).view(
                self.out_features, self.in_features
            )
            dense = codes.float() * self.scale.float()[:, None]
            extra = self._extra_weight()
            self._cache = (dense, extra, dense if extra is None else dense + extra)
        return self._cache

    def dequantized_weight(self) -> torch.Tensor:
        return self._weights()[2]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dense_w, extra_w, whole_w = self._weights()
        sparse_x = None
        if self.scheme.sparse_act and math.isfinite(float(self.act_threshold)):
            x, sparse_x = split_outliers(x, float(self.act_threshold))
        y = fake_quant(x, self.scheme.a_bits) @ dense_w.T
        if extra_w is not None:
            y = y + x @ extra_w.T
        if sparse_x is not None:
            y = y + sparse_x @ whole_w.T
        return y if self.bias is None else y + self.bias

    def byte_parts(self) -> dict[str, int]:
        """Stored bytes by kind (see :data:`BYTE_PARTS`)."""
        numel = self.out_features * self.in_features
        return {
            "codes": math.ceil(numel * self.scheme.w_bits / 8),
            "scales": 2 * self.scale.numel() + (4 if self.scheme.sparse_act else 0),
            "low_rank": 2 * (self.lr_left.numel() + self.lr_right.numel()),
            "sparse": (2 + 4) * self.sparse_val.numel(),
            "bias": 4 * (self.bias.numel() if self.bias is not None else 0),
        }

    def effective_bytes(self) -> int:
        return sum(self.byte_parts().values())

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # Buffer shapes (rank, outlier count, packed length) differ per layer: take the
        # saved tensors as they are.
        for name in list(self._buffers):
            key = prefix + name
            if key in state_dict:
                self._buffers[name] = state_dict[key].clone()
        self._cache = None
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def extra_repr(self) -> str:
        return f"{self.in_features}, {self.out_features}, scheme={self.scheme.name}"


#: the convolutions int8 quantizes (torch.ao has static int8 kernels for each)
CONV_TYPES = (nn.Conv1d, nn.Conv2d, nn.Conv3d)


class Int8Conv(nn.Module):
    """One convolution run by a real int8 kernel, fp32 in and fp32 out.

    ``quant`` quantizes the input to uint8 (per-tensor scale and zero point, calibrated),
    ``conv`` is the fp32 convolution and, after torch.ao's ``prepare`` / calibration /
    ``convert``, ``torch.ao.nn.quantized.Conv{1,2,3}d`` with int8 per-output-channel
    weights (fbgemm / x86), ``dequant`` turns its quantized output back into fp32."""

    def __init__(self, conv: nn.Module):
        super().__init__()
        self.quant = torch.ao.quantization.QuantStub()
        self.conv = conv
        self.dequant = torch.ao.quantization.DeQuantStub()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dequant(self.conv(self.quant(x)))

    def byte_parts(self) -> dict[str, int]:
        """int8 weights, a scale and zero point per output channel (fp32 + int32), fp32
        bias, and the input's and output's scale and zero point."""
        weight, bias = self.conv.weight(), self.conv.bias()
        if weight.qscheme() in (torch.per_channel_affine, torch.per_channel_symmetric):
            n_scales = weight.q_per_channel_scales().numel()
        else:
            n_scales = 1
        return {
            "codes": weight.numel(),
            "scales": 8 * n_scales + 16,
            "bias": 4 * (bias.numel() if bias is not None else 0),
        }

    def effective_bytes(self) -> int:
        return sum(self.byte_parts().values())


def _int8_conv_ok(conv: nn.Module) -> bool:
    """Whether torch.ao's quantized convolution can run this layer."""
    return (
        type(conv) in CONV_TYPES
        and not isinstance(conv.padding, str)
        and conv.padding_mode in ("zeros", "reflect")
        and conv.weight.dtype == torch.float32
    )


def _set_engine() -> None:
    engines = torch.backends.quantized.supported_engines
    torch.backends.quantized.engine = "x86" if "x86" in engines else engines[-1]


def _int8(model: nn.Module, calibration: Sequence[Any] | None, restoring: bool) -> nn.Module:
    """The int8 model: :class:`Int8Conv` for every convolution the kernel runs
    (observers calibrated on ``calibration``; ``restoring``: no calibration, the ranges
    come from the saved state), dynamic int8 for every ``nn.Linear``."""
    _set_engine()
    qmodel = copy.deepcopy(model).eval()
    convs = [name for name, m in qmodel.named_modules() if _int8_conv_ok(m)]
    if convs and not restoring and not calibration:
        raise ValueError(
            "quantization scheme 'int8_dynamic' quantizes convolutions with calibrated "
            f"activation ranges ({len(convs)} in this model) and needs calibration inputs "
            "(the method's calibration_inputs or example_input hook)"
        )
    with warnings.catch_warnings():
        # torch.ao's eager API warns that it is deprecated (and about reduce_range) on
        # every call; it is what torch 2.13 ships for CPU int8 convolution.
        warnings.simplefilter("ignore")
        if convs:
            qconfig = torch.ao.quantization.get_default_qconfig(torch.backends.quantized.engine)
            for name in convs:
                wrapper = Int8Conv(qmodel.get_submodule(name))
                wrapper.qconfig = qconfig
                _replace(qmodel, name, wrapper)
            torch.ao.quantization.prepare(qmodel, inplace=True)
            if not restoring:
                with torch.inference_mode():
                    for inp in calibration:
                        call_model(qmodel, inp)
            torch.ao.quantization.convert(qmodel, inplace=True)
        torch.ao.quantization.quantize_dynamic(qmodel, {nn.Linear}, dtype=torch.qint8, inplace=True)
    return qmodel.eval()


# ------------------------------------------------------------------------- the models


def call_model(model: nn.Module, inputs: Any) -> Any:
    """Run ``model`` on one input: a tensor, or a tuple of positional arguments."""
    return model(*inputs) if isinstance(inputs, tuple | list) else model(inputs)


def _linears(model: nn.Module) -> dict[str, nn.Linear]:
    """The layers the fake-quantizing schemes replace: every ``nn.Linear`` except the
    output projection inside ``nn.MultiheadAttention``, whose forward reads the weight
    directly (write attention with explicit ``nn.Linear`` projections to quantize it)."""
    skip = {
        f"{name}.out_proj" if name else "out_proj"
        for name, m in model.named_modules()
        if isinstance(m, nn.MultiheadAttention)
    }
    return {
        name: m
        for name, m in model.named_modules()
        if isinstance(m, nn.Linear) and name not in skip
    }


def _is_quantized(module: nn.Module) -> bool:
    """Whether ``module`` is a layer some scheme put in place of a full-precision one."""
    return isinstance(module, QuantLinear | Int8Conv | torch.ao.nn.quantized.dynamic.Linear)


def _quantized_names(model: nn.Module) -> list[str]:
    return [name for name, m in model.named_modules() if _is_quantized(m)]


def _replace(model: nn.Module, name: str, new: nn.Module) -> None:
    parent_name, _, child = name.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    setattr(parent, child, new)


def calibrate_thresholds(
    model: nn.Module, inputs: Iterable[Any], quantile: float = ACT_OUTLIER_QUANTILE
) -> dict[str, float]:
    """Per ``nn.Linear``, the ``quantile`` of ``|x|`` over its inputs when ``model`` runs
    on ``inputs`` (for Bit-DGDM: the full-precision model's own samples)."""
    seen: dict[str, list[torch.Tensor]] = {}
    gen = torch.Generator().manual_seed(0)

    def hook(name):
        def record(_module, args):
            flat = args[0].detach().abs().flatten().float()
            if flat.numel() > _CALIB_SAMPLE:
                flat = flat[torch.randint(flat.numel(), (_CALIB_SAMPLE,), generator=gen)]
            seen.setdefault(name, []).append(flat)

        return record

    handles = [m.register_forward_pre_hook(hook(n)) for n, m in _linears(model).items()]
    try:
        with torch.inference_mode():
            for inp in inputs:
                call_model(model, inp)
    finally:
        for h in handles:
            h.remove()
    out = {}
    for name, parts in seen.items():
        values = torch.cat(parts)
        if values.numel() > _CALIB_SAMPLE:
            values = values[torch.randint(values.numel(), (_CALIB_SAMPLE,), generator=gen)]
        k = min(values.numel(), max(1, math.ceil(quantile * values.numel())))
        out[name] = float(values.kthvalue(k).values)  # O(n) selection, not a sort
    return out


def quantize(
    model: nn.Module,
    scheme: str,
    calibration: Sequence[Any] | None = None,
    thresholds: dict[str, float] | None = None,
    keep_fp32: Sequence[str] = (),
) -> nn.Module:
    """Return a quantized copy of ``model`` (the fp32 model is left untouched).

    ``calibration``: model inputs (a tensor, or a tuple of positional arguments, each)
    for the schemes that calibrate: Bit-DGDM's sparse-activation thresholds, and int8's
    activation ranges when the model has convolutions.
    ``thresholds``: the result of :func:`calibrate_thresholds` on them, to reuse one
    calibration across several schemes of the same model.
    ``keep_fp32``: name suffixes of ``nn.Linear`` layers left in full precision (a
    method's :attr:`reprolab.contract.Quantization.keep_fp32`, e.g. a language model's
    outlier-heavy projections); :func:`coverage` lists them as full precision."""
    spec = parse(scheme)
    if spec.kind == "int8_dynamic":
        return _keep(model, _int8(model, calibration, restoring=False), keep_fp32)
    if not spec.needs_calibration:
        thresholds = {}
    elif thresholds is None:
        if not calibration:
            raise ValueError(
                f"quantization scheme {scheme!r} calibrates activation thresholds and needs "
                "calibration inputs (the method's calibration_inputs or example_input hook)"
            )
        thresholds = calibrate_thresholds(model.eval(), calibration)
    qmodel = copy.deepcopy(model).eval()
    for name, linear in _linears(qmodel).items():
        if not _kept(name, keep_fp32):
            _replace(
                qmodel,
                name,
                QuantLinear.from_linear(linear, spec, thresholds.get(name, math.inf)),
            )
    return qmodel


def _kept(name: str, keep_fp32: Sequence[str]) -> bool:
    return bool(keep_fp32) and name.endswith(tuple(keep_fp32))


def _keep(fp_model: nn.Module, qmodel: nn.Module, keep_fp32: Sequence[str]) -> nn.Module:
    """Put the fp32 ``nn.Linear`` layers named by ``keep_fp32`` back into ``qmodel``."""
    for name, module in fp_model.named_modules():
        if isinstance(module, nn.Linear) and _kept(name, keep_fp32):
            _replace(qmodel, name, copy.deepcopy(module))
    return qmodel


def restore_quantized(
    arch: nn.Module, scheme: str, state: dict[str, Any], keep_fp32: Sequence[str] = ()
) -> nn.Module:
    """Rebuild a quantized model from a fresh fp32 architecture and the saved state
    (``keep_fp32`` as given to :func:`quantize`)."""
    spec = parse(scheme)
    if spec.kind == "int8_dynamic":
        model = _keep(arch, _int8(arch, None, restoring=True), keep_fp32)
    else:
        model = copy.deepcopy(arch).eval()
        for name, linear in _linears(model).items():
            if _kept(name, keep_fp32):
                continue
            _replace(
                model,
                name,
                QuantLinear(linear.in_features, linear.out_features, spec, linear.bias is not None),
            )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.load_state_dict(state)
    return model.eval()


# A state saved against a shared base holds this key: the base's file name (in the same
# folder) and the base's entries it does not have.
_BASE_KEY = "__reprolab_base__"


@dataclass(frozen=True)
class SharedBase:
    """The first state :func:`save_state` wrote for a scheme: the file later states
    refer to, and a digest of each of its entries."""

    file: str
    digests: dict[str, str]


def _digest(value: Any) -> str:
    buffer = io.BytesIO()
    torch.save(value, buffer)  # deterministic bytes for equal tensors, quantized or not
    return hashlib.sha256(buffer.getvalue()).hexdigest()


def save_state(state: dict[str, Any], path: Path, base: SharedBase | None = None) -> SharedBase:
    """Save a (possibly quantized) state dict at ``path``.

    Without ``base`` the whole state is written and returned as the base of the states
    saved after it. With ``base``, only the entries that differ from the base's are
    written, plus a reference to the base file (same folder): units fine-tuned from one
    pretrained model (a LoRA on a few layers of a language model) share every other
    quantized layer, which is then stored once instead of once per unit. Returns the base
    to pass with the next state. :func:`load_state` reads both forms."""
    path = Path(path)
    digests = {k: _digest(v) for k, v in state.items()}
    if base is None:
        torch.save(state, path)
        return SharedBase(path.name, digests)
    delta = collections.OrderedDict(
        (k, v) for k, v in state.items() if base.digests.get(k) != digests[k]
    )
    # the modules' state versions: quantized layers read their packed format by them
    delta._metadata = getattr(state, "_metadata", None)  # type: ignore[attr-defined]
    delta[_BASE_KEY] = {"file": base.file, "drop": sorted(set(base.digests) - set(state))}
    torch.save(delta, path)
    return base


def state_files(path: Path) -> list[Path]:
    """The files a state saved at ``path`` is read from: itself, then its base if any."""
    path = Path(path)
    ref = _load(path, mmap=True).get(_BASE_KEY)  # mmap: the tensors are not read
    return [path] if ref is None else [path, path.parent / ref["file"]]


def _load(path: Path, mmap: bool = False) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.load(path, weights_only=True, mmap=mmap)


@functools.lru_cache(maxsize=1)
def _load_base(path: str, mtime_ns: int, size: int) -> dict[str, Any]:
    return _load(Path(path))  # the evaluate stage reads one base for every unit


def load_state(path) -> dict[str, Any]:
    """The state dict saved at ``path`` by :func:`save_state` (or ``torch.save``): its
    base's entries overlaid with its own, quantized tensors loaded without the
    deprecation noise they raise on every load."""
    path = Path(path)
    state = _load(path)
    ref = state.pop(_BASE_KEY, None)
    if ref is None:
        return state
    base_path = path.parent / ref["file"]
    if not base_path.is_file():
        raise FileNotFoundError(
            f"{path} stores only what differs from {base_path}, which is missing; "
            "rerun the quantize stage (dvc repro -f -s quantize@<slug>)"
        )
    stat = base_path.stat()
    base = _load_base(str(base_path.resolve()), stat.st_mtime_ns, stat.st_size)
    full = collections.OrderedDict((k, state.get(k, v)) for k, v in base.items())
    for key in ref["drop"]:
        full.pop(key, None)
    full.update(state)
    full._metadata = getattr(state, "_metadata", None)  # type: ignore[attr-defined]
    return full


# ---------------------------------------------------------------------------- measures


def coverage(fp_model: nn.Module, q_model: nn.Module) -> dict[str, Any]:
    """How much of ``fp_model`` its quantized copy ``q_model`` really quantized.

    Counts the parameters of ``fp_model`` (shared ones once) and those owned by a module
    whose place ``q_model`` took with a quantized layer (:class:`QuantLinear`,
    :class:`Int8Conv`, a dynamic int8 linear). Returns ``quantized_parameters``,
    ``parameters``, their ratio ``share``, and ``full_precision``: the parameters left at
    full precision per type of the module owning them (e.g. ``{"BatchNorm2d": 96}``),
    largest first."""
    done = _quantized_names(q_model)
    quantized, total = 0, 0
    kept: dict[str, int] = {}
    for name, param in fp_model.named_parameters():
        owner = name.rpartition(".")[0]
        n = param.numel()
        total += n
        if any(owner == d or owner.startswith(d + ".") for d in done):
            quantized += n
        else:
            kind = type(fp_model.get_submodule(owner)).__name__ if owner else "parameter"
            kept[kind] = kept.get(kind, 0) + n
    return {
        "quantized_parameters": quantized,
        "parameters": total,
        "share": quantized / total if total else 0.0,
        "full_precision": dict(sorted(kept.items(), key=lambda kv: (-kv[1], kv[0]))),
    }


#: the kinds of stored bytes :func:`byte_parts` counts: low-bit or int8 weight codes;
#: their scales (fp16 per channel; fp32 scale + zero point for int8; Bit-DGDM's fp32
#: activation threshold); fp16 low-rank factors; sparse outliers (fp16 value + int32
#: index); biases of quantized layers (fp32); everything left unquantized, at its dtype
BYTE_PARTS = ("codes", "scales", "low_rank", "sparse", "bias", "unquantized")


def byte_parts(model: nn.Module) -> dict[str, int]:
    """Bytes a deployment of ``model`` stores, by kind (:data:`BYTE_PARTS`): what a
    size ratio is made of (see the module docstring)."""
    dynamic = torch.ao.nn.quantized.dynamic.Linear
    parts, skip = dict.fromkeys(BYTE_PARTS, 0), []
    for name, module in model.named_modules():
        if isinstance(module, QuantLinear | Int8Conv):
            for kind, n in module.byte_parts().items():
                parts[kind] += n
            skip.append(name + ".")
        elif isinstance(module, dynamic):
            weight, bias = module.weight(), module.bias()
            parts["codes"] += weight.numel()
            parts["scales"] += 8
            parts["bias"] += 4 * bias.numel() if bias is not None else 0
            skip.append(name + ".")
    for key, value in model.state_dict().items():
        if isinstance(value, torch.Tensor) and not any(key.startswith(p) for p in skip):
            parts["unquantized"] += value.numel() * value.element_size()
    return parts


def effective_bytes(model: nn.Module) -> int:
    """Bytes a deployment of ``model`` stores (see the module docstring): quantized layers
    by their codes, scales, factors and outliers; everything else at its dtype's size."""
    return sum(byte_parts(model).values())


def layer_outputs(
    model: nn.Module, inputs: Iterable[Any], names: Iterable[str] | None = None
) -> dict[str, torch.Tensor]:
    """The outputs of ``model``'s layers ``names`` (default: every layer a scheme can
    quantize, linear and convolution) over ``inputs``, each flattened and concatenated
    in input order: the full-precision side of :func:`layer_errors`, which a caller
    comparing several schemes computes once."""
    if names is None:
        names = [n for n, m in model.named_modules() if isinstance(m, (nn.Linear, *CONV_TYPES))]
    recorded: dict[str, list[torch.Tensor]] = {}

    def hook(name):
        def record(_module, _args, out):
            recorded.setdefault(name, []).append(out.detach().float().flatten())

        return record

    handles = [model.get_submodule(n).register_forward_hook(hook(n)) for n in names]
    try:
        with torch.inference_mode():
            for inp in inputs:
                call_model(model, inp)
    finally:
        for h in handles:
            h.remove()
    return {name: torch.cat(parts) for name, parts in recorded.items()}


def layer_errors(
    fp_model: nn.Module,
    q_model: nn.Module,
    inputs: Iterable[Any],
    reference: dict[str, torch.Tensor] | None = None,
) -> dict[str, float]:
    """Relative output error ``||Y_q - Y|| / ||Y||`` of every layer ``q_model`` quantized
    (linear and, for int8, convolution) against the same layer of ``fp_model`` on the
    same inputs (each model is fed its own upstream activations, so errors accumulate as
    they would in use). Layers a scheme left at full precision are not listed.
    ``reference``: ``fp_model``'s :func:`layer_outputs` on ``inputs`` when already known."""
    names = _quantized_names(q_model)
    inputs = list(inputs)
    if reference is None or any(n not in reference for n in names):
        reference = layer_outputs(fp_model, inputs, names)
    got = layer_outputs(q_model, inputs, names)
    errors = {}
    for name in names:
        ref = reference[name]
        errors[name] = float((got[name] - ref).norm() / ref.norm().clamp_min(1e-12))
    return errors


def state_bytes(model: nn.Module) -> int:
    """Serialized size of the state dict: what a checkpoint of the model costs on disk."""
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.save(model.state_dict(), buf)
    return buf.getbuffer().nbytes


def latency_ms(model: nn.Module, example: Any, repeats: int = 30, warmup: int = 5) -> dict:
    """Median and interquartile range of one forward pass on ``example`` (a tensor or a
    tuple of positional arguments), in ms."""
    model.eval()
    times = []
    with torch.inference_mode():
        for _ in range(warmup):
            call_model(model, example)
        for _ in range(repeats):
            start = time.perf_counter()
            call_model(model, example)
            times.append((time.perf_counter() - start) * 1e3)
    q = statistics.quantiles(times, n=4)
    return {"median": statistics.median(times), "iqr": q[2] - q[0]}
