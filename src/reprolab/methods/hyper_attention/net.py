"""The networks compared: the paper's linear attention modules (rank-limited, one layer)
and standard softmax transformers of 1 and 2 layers, each mapping entity codes
(B, L, d) to one prediction per entity (B, L). Every weight sits in an ``nn.Linear``.

Sizes: ``size`` is the rank of the linear modules and the width of the softmax
transformers; :func:`matched_size` picks the size whose parameter count is nearest a
target (the parameter count of the method on that task), so baselines are compared at
matched parameters.
"""

from __future__ import annotations

import torch
from torch import nn

from reprolab.core.transformer import Encoder
from reprolab.methods.hyper_attention.layers import LinearHA3, LinearHFA, LinearSA

LINEAR = ("lsa", "hfa", "ha3")
SOFTMAX_DEPTH = {"sa1": 1, "sa2": 2}


class InteractionNet(nn.Module):
    """A linear attention module alone, as the paper writes it: no residual path and no
    bias. (A per-entity term next to the sum over j would be unidentifiable from data at
    one population size: sum_j g(s_i)/L equals g(s_i) at L only, which breaks the
    out-of-distribution sizes.)"""

    def __init__(self, attn: nn.Module) -> None:
        super().__init__()
        self.attn = attn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.attn(x).squeeze(-1)


class SoftmaxNet(nn.Module):
    """A standard pre-norm softmax transformer (core Encoder) with a linear embedding of
    the entity codes and a per-entity linear readout."""

    def __init__(self, d: int, width: int, depth: int, heads: int, mlp_ratio: float) -> None:
        super().__init__()
        self.net = Encoder(nn.Linear(d, width), width, depth, 1, heads, mlp_ratio, pool="none")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).squeeze(-1)


def build(variant: str, d: int, size: int, heads: int = 1, mlp_ratio: float = 2.0) -> nn.Module:
    """The network of ``variant`` for d-dimensional entity codes at ``size``."""
    if variant == "lsa":
        return InteractionNet(LinearSA(d, size, d_out=1))
    if variant == "hfa":
        return InteractionNet(LinearHFA(d, n_factors=2, rank=size, d_out=1))
    if variant == "ha3":
        return InteractionNet(LinearHA3(d, size, d_out=1))
    if variant in SOFTMAX_DEPTH:
        return SoftmaxNet(d, size * heads, SOFTMAX_DEPTH[variant], heads, mlp_ratio)
    raise ValueError(f"unknown variant {variant!r}")


def count(variant: str, d: int, size: int, heads: int = 1, mlp_ratio: float = 2.0) -> int:
    """The trainable parameters of :func:`build`'s network, in closed form (the unit
    tests compare it with ``n_params`` of the built network)."""
    if variant == "lsa":  # W_Q, W_K: d x r; W_V: d x 1
        return 2 * d * size + d
    if variant == "hfa":  # two factors of (W_Q, W_K, W_V)
        return 2 * (2 * d * size + d)
    if variant == "ha3":  # Q, K1, K2, V1, V2: d x R; O: R x 1
        return 5 * d * size + size
    if variant in SOFTMAX_DEPTH:
        w = size * heads
        hidden = max(1, int(w * mlp_ratio))
        block = 4 * (w * w + w) + 4 * w + (w * hidden + hidden) + (hidden * w + w)
        return (d * w + w) + SOFTMAX_DEPTH[variant] * block + 2 * w + (w + 1)
    raise ValueError(f"unknown variant {variant!r}")


def matched_size(
    variant: str, d: int, target: float, heads: int = 1, mlp_ratio: float = 2.0
) -> int:
    """The size (rank, or width / heads) whose parameter count is nearest ``target``
    (counts grow with size, so the search stops once past it)."""
    best, best_gap = 1, float("inf")
    size = 1
    while True:
        gap = count(variant, d, size, heads, mlp_ratio) - target
        if abs(gap) < best_gap:
            best, best_gap = size, abs(gap)
        if gap >= 0:
            return best
        size += 1
