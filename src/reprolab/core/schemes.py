"""Quantization scheme names: parsed and checked without importing torch.

A scheme is one of

- ``int8_dynamic``: PyTorch's dynamically quantized linear layers and statically
  quantized convolutions (real int8 kernels; convolutions calibrate activation ranges);
- ``rtn_w<b>a<b>``: round-to-nearest fake quantization, symmetric per-output-channel
  weights and per-token activations (``a16`` leaves activations in full precision);
- ``bitdgdm_w<b>a<b>``: Bit-DGDM's outlier-aware quantization: sparse-dense
  activations and the low-rank plus sparse weight decomposition, with the ablations
  ``..._noact`` (no sparse activation path) and ``..._nodecomp`` (no weight
  decomposition).

Weights take 2 to 8 bits; activations 2 to 8 bits, or 16 for "not quantized". The
config validates every scheme a ``params.yaml`` names with :func:`parse` before any
compute, so this module stays light.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: the schemes the docs and the benchmark name; any ``rtn_w<b>a<b>`` etc. also parses
SCHEMES = (
    "int8_dynamic",
    "rtn_w8a8",
    "rtn_w4a4",
    "bitdgdm_w4a4",
    "bitdgdm_w4a4_noact",
    "bitdgdm_w4a4_nodecomp",
)
WEIGHT_BITS = range(2, 9)
ACT_BITS = (*range(2, 9), 16)

_PATTERN = re.compile(r"^(rtn|bitdgdm)_w(\d+)a(\d+)(_noact|_nodecomp)?$")


class UnknownSchemeError(ValueError):
    pass


@dataclass(frozen=True)
class Scheme:
    name: str
    kind: str  # "int8_dynamic" | "rtn" | "bitdgdm"
    w_bits: int = 8
    a_bits: int = 8
    sparse_act: bool = False
    decompose: bool = False

    @property
    def real_kernel(self) -> bool:
        """Whether the quantized model runs low-bit kernels (and so latency means
        something). Fake quantization computes in fp32 and is never faster."""
        return self.kind == "int8_dynamic"

    @property
    def needs_calibration(self) -> bool:
        return self.sparse_act


def parse(name: object) -> Scheme:
    """The :class:`Scheme` a name stands for; a clear error for anything else."""
    if not isinstance(name, str):
        raise UnknownSchemeError(f"a quantization scheme is a string, got {name!r}")
    if name == "int8_dynamic":
        return Scheme(name, "int8_dynamic")
    match = _PATTERN.match(name)
    if not match:
        raise UnknownSchemeError(
            f"unknown quantization scheme {name!r}; use int8_dynamic, rtn_w<bits>a<bits> or "
            f"bitdgdm_w<bits>a<bits>[_noact|_nodecomp], e.g. {', '.join(SCHEMES)}"
        )
    kind, w, a, ablation = match.group(1), int(match.group(2)), int(match.group(3)), match[4]
    if w not in WEIGHT_BITS:
        raise UnknownSchemeError(
            f"quantization scheme {name!r}: weight bit width {w} is not supported "
            f"(allowed: {WEIGHT_BITS.start}-{WEIGHT_BITS.stop - 1})"
        )
    if a not in ACT_BITS:
        raise UnknownSchemeError(
            f"quantization scheme {name!r}: activation bit width {a} is not supported "
            "(allowed: 2-8, or 16 for full-precision activations)"
        )
    if kind == "rtn":
        if ablation:
            raise UnknownSchemeError(
                f"quantization scheme {name!r}: {ablation} is an ablation of bitdgdm, not rtn"
            )
        return Scheme(name, "rtn", w, a)
    return Scheme(
        name,
        "bitdgdm",
        w,
        a,
        sparse_act=ablation != "_noact" and a != 16,
        decompose=ablation != "_nodecomp",
    )


def check_scheme(name: object) -> str:
    parse(name)
    return name  # type: ignore[return-value]
