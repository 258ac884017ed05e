"""Rotation / permutation matching of two tiny ViTs (``core.transformer.vit``) and their
weighted average.

The symmetries used (Zhang et al. 2025, Sec. 3; ``pi_utils.py`` of the official code):

- per attention head h, an orthogonal ``R`` acting on the head's query and key rows
  (``Wq_h <- R Wq_h``, ``bq_h <- R bq_h``, same ``R`` for K) leaves ``Q_h K_h^T`` and so
  the logits unchanged;
- per head, an orthogonal ``R`` on the value rows and the matching columns of the output
  projection (``Wv_h <- R Wv_h``, ``bv_h <- R bv_h``, ``Wo[:, h] <- Wo[:, h] R^T``);
- a permutation of the hidden units of each MLP (rows of the first linear layer and its
  bias, columns of the second): GELU acts elementwise.

LayerNorms, embeddings, the residual stream and the head stay as they are (the official
code keeps the anchor's LayerNorms and the output-projection bias too).

Matching aligns ``other`` to ``ref`` (the official code's anchor) per head by maximising
``tr(O A_other A_ref^T)`` over ``O``: orthogonal (Procrustes, ``O = U V^T`` from
``svd(A_ref A_other^T)``) or a permutation (``linear_sum_assignment`` on the same
matrix). ``A`` stacks the head's rows of Wq, bq, Wk, bk (Q/K) or of Wv, bv, Wo^T (V/O).
"""

from __future__ import annotations

import copy
from typing import Literal

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment
from torch import nn

AttnMatch = Literal["rotation", "permutation", "none"]
#: the fusions compared: attention matching, whether the MLP hidden units are permuted
FUSIONS: dict[str, tuple[AttnMatch, bool]] = {
    "average": ("none", False),
    "perm": ("permutation", True),
    "rotation": ("rotation", True),
}


def procrustes(ref: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    """The orthogonal ``O`` minimising ``||ref - O other||_F`` (rows are coordinates)."""
    u, _, vh = torch.linalg.svd(ref.double() @ other.double().T)
    return (u @ vh).to(ref.dtype)


def permutation(ref: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    """The permutation matrix ``P`` minimising ``||ref - P other||_F``: row i of ``P other``
    is the row of ``other`` that ``linear_sum_assignment`` assigns to row i of ``ref``."""
    sim = (ref.double() @ other.double().T).numpy()
    rows, cols = linear_sum_assignment(sim, maximize=True)
    p = torch.zeros(len(rows), len(rows), dtype=ref.dtype)
    p[rows, cols] = 1.0
    return p


def _match(kind: AttnMatch, ref: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    if kind == "rotation":
        return procrustes(ref, other)
    if kind == "permutation":
        return permutation(ref, other)
    return torch.eye(len(ref), dtype=ref.dtype)


def _qk(attn: nn.Module, s: slice) -> torch.Tensor:
    return torch.cat(
        [attn.q.weight[s], attn.q.bias[s, None], attn.k.weight[s], attn.k.bias[s, None]], dim=1
    )


def _vo(attn: nn.Module, s: slice) -> torch.Tensor:
    return torch.cat([attn.v.weight[s], attn.v.bias[s, None], attn.o.weight[:, s].T], dim=1)


@torch.no_grad()
def transform_head(attn: nn.Module, h: int, qk: torch.Tensor, vo: torch.Tensor) -> None:
    """Apply orthogonal ``qk`` to head h's Q/K rows and ``vo`` to its V rows / O columns."""
    s = slice(h * attn.head_dim, (h + 1) * attn.head_dim)
    for lin in (attn.q, attn.k):
        lin.weight[s] = qk @ lin.weight[s]
        lin.bias[s] = qk @ lin.bias[s]
    attn.v.weight[s] = vo @ attn.v.weight[s]
    attn.v.bias[s] = vo @ attn.v.bias[s]
    attn.o.weight[:, s] = attn.o.weight[:, s] @ vo.T


@torch.no_grad()
def permute_mlp(mlp: nn.Sequential, order: torch.Tensor | np.ndarray) -> None:
    """Reorder the hidden units of ``Linear, GELU, Linear, ...``: unit i <- unit order[i]."""
    order = torch.as_tensor(np.asarray(order), dtype=torch.long)
    first, second = mlp[0], mlp[2]
    first.weight.copy_(first.weight[order])
    first.bias.copy_(first.bias[order])
    second.weight.copy_(second.weight[:, order])


def mlp_order(ref: nn.Sequential, other: nn.Sequential) -> np.ndarray:
    """``order`` with ``other``'s hidden unit ``order[i]`` matched to ``ref``'s unit i
    (``linear_sum_assignment`` on ``W1 W1'^T + b1 b1'^T + W2^T W2'``, as ``Permute_IO``)."""
    w1, b1, w2 = ref[0].weight, ref[0].bias, ref[2].weight
    v1, c1, v2 = other[0].weight, other[0].bias, other[2].weight
    sim = (w1 @ v1.T + b1[:, None] @ c1[None] + w2.T @ v2).detach().double().numpy()
    rows, cols = linear_sum_assignment(sim, maximize=True)
    return cols[np.argsort(rows)]


@torch.no_grad()
def align(ref: nn.Module, other: nn.Module, attn: AttnMatch, ffn: bool) -> nn.Module:
    """A copy of ``other`` moved by its symmetries as close as possible to ``ref``; it
    computes the same function as ``other`` (up to float rounding)."""
    out = copy.deepcopy(other)
    for br, bo in zip(ref.blocks, out.blocks, strict=True):
        a_r, a_o = br.attn, bo.attn
        if attn != "none":
            for h in range(a_r.heads):
                s = slice(h * a_r.head_dim, (h + 1) * a_r.head_dim)
                qk = _match(attn, _qk(a_r, s), _qk(a_o, s))
                vo = _match(attn, _vo(a_r, s), _vo(a_o, s))
                transform_head(a_o, h, qk, vo)
        if ffn:
            permute_mlp(bo.mlp, mlp_order(br.mlp, bo.mlp))
    return out


@torch.no_grad()
def interpolate(a: nn.Module, b: nn.Module, alpha: float) -> nn.Module:
    """``(1 - alpha) a + alpha b``, parameter by parameter."""
    out = copy.deepcopy(a)
    sb = b.state_dict()
    out.load_state_dict(
        {
            k: (1 - alpha) * v + alpha * sb[k] if v.is_floating_point() else v
            for k, v in a.state_dict().items()
        }
    )
    return out


def fuse(a: nn.Module, b: nn.Module, alpha: float, how: str) -> nn.Module:
    """Fusion ``how`` (a key of :data:`FUSIONS`) of ``a`` and ``b`` with weight ``alpha``
    on ``b`` (``alpha=0``: ``a``; ``alpha=1``: ``b`` aligned to ``a``)."""
    attn, ffn = FUSIONS[how]
    return interpolate(a, align(a, b, attn, ffn), alpha).eval()


def random_orthogonal(n: int, generator: torch.Generator) -> torch.Tensor:
    """A Haar-distributed orthogonal matrix (QR of a Gaussian, signs fixed)."""
    q, r = torch.linalg.qr(torch.randn(n, n, generator=generator, dtype=torch.float64))
    return (q * torch.sign(torch.diagonal(r))).float()


@torch.no_grad()
def random_symmetry(
    model: nn.Module, generator: torch.Generator, rotate: bool = True, permute: bool = True
) -> nn.Module:
    """A copy of ``model`` moved by a random per-head rotation of Q/K and of V/O and a
    random permutation of every MLP's hidden units: the same function."""
    out = copy.deepcopy(model)
    for block in out.blocks:
        a = block.attn
        if rotate:
            for h in range(a.heads):
                qk = random_orthogonal(a.head_dim, generator)
                vo = random_orthogonal(a.head_dim, generator)
                transform_head(a, h, qk, vo)
        if permute:
            hidden = block.mlp[0].out_features
            permute_mlp(block.mlp, torch.randperm(hidden, generator=generator))
    return out


@torch.no_grad()
def distance(a: nn.Module, b: nn.Module) -> float:
    """L2 distance between the matched weights (attention and MLP linears) of a and b."""
    total = 0.0
    for ba, bb in zip(a.blocks, b.blocks, strict=True):
        for name in ("attn.q", "attn.k", "attn.v", "attn.o", "mlp.0", "mlp.2"):
            la, lb = ba.get_submodule(name), bb.get_submodule(name)
            total += float((la.weight - lb.weight).pow(2).sum() + (la.bias - lb.bias).pow(2).sum())
    return total**0.5
