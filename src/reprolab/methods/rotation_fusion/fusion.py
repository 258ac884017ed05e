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

The head matchings leave LayerNorms, embeddings, the residual stream and the head as
they are (the official ``pi_utils.py`` keeps the anchor's LayerNorms and the
output-projection bias too); the residual stream is matched apart, below.

Matching aligns ``other`` to ``ref`` (the official code's anchor) per head by maximising
``tr(O A_other A_ref^T)`` over ``O``: orthogonal (Procrustes, ``O = U V^T`` from
``svd(A_ref A_other^T)``) or a permutation (``linear_sum_assignment`` on the same
matrix). ``A`` stacks the head's rows of Wq, bq, Wk, bk (Q/K) or of Wv, bv, Wo^T (V/O).

Optionally (``resid_match``), the residual stream of ``other`` is permuted first
(:func:`match_residual`): one permutation of the model width, an exact symmetry of a
pre-norm transformer (LayerNorm normalises over the width, so permuting its input, gain
and bias permutes its output). :func:`match_stats` measures what the matchings did: the
weight distance before and after each, the permutation's fixed points and the rotation's
angle from the identity. :func:`self_fusion_err` is the sanity gate of the matched
fusions: a model fused with a randomly permuted copy of itself must be the model.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
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


@dataclass
class BlockMatch:
    """The matching of one block: per head, the orthogonal (rotation or permutation)
    matrices of Q/K and of V/O (empty lists: attention left alone), and the MLP's hidden
    unit ``order`` (None: not permuted)."""

    qk: list[torch.Tensor] = field(default_factory=list)
    vo: list[torch.Tensor] = field(default_factory=list)
    order: np.ndarray | None = None


@torch.no_grad()
def matchings(ref: nn.Module, other: nn.Module, attn: AttnMatch, ffn: bool) -> list[BlockMatch]:
    """Per block, the transforms that move ``other`` as close as possible to ``ref``
    (:func:`apply_matchings` applies them). Each head's matrices and the MLP order read
    only their own rows and columns, which no other transform of the block touches."""
    out = []
    for br, bo in zip(ref.blocks, other.blocks, strict=True):
        a_r, a_o = br.attn, bo.attn
        m = BlockMatch()
        if attn != "none":
            for h in range(a_r.heads):
                s = slice(h * a_r.head_dim, (h + 1) * a_r.head_dim)
                m.qk.append(_match(attn, _qk(a_r, s), _qk(a_o, s)))
                m.vo.append(_match(attn, _vo(a_r, s), _vo(a_o, s)))
        if ffn:
            m.order = mlp_order(br.mlp, bo.mlp)
        out.append(m)
    return out


@torch.no_grad()
def apply_matchings(other: nn.Module, matched: Sequence[BlockMatch]) -> nn.Module:
    """A copy of ``other`` moved by ``matched`` (the same function as ``other``)."""
    out = copy.deepcopy(other)
    for bo, m in zip(out.blocks, matched, strict=True):
        for h, (qk, vo) in enumerate(zip(m.qk, m.vo, strict=True)):
            transform_head(bo.attn, h, qk, vo)
        if m.order is not None:
            permute_mlp(bo.mlp, m.order)
    return out


def align(ref: nn.Module, other: nn.Module, attn: AttnMatch, ffn: bool) -> nn.Module:
    """A copy of ``other`` moved by its symmetries as close as possible to ``ref``; it
    computes the same function as ``other`` (up to float rounding)."""
    return apply_matchings(other, matchings(ref, other, attn, ffn))


# ---------------------------------------------------------------- the residual stream


def _resid_features(model: nn.Module) -> torch.Tensor:
    """(width, F): every parameter indexed by the residual width whose other axis is the
    same in any two models (pixels, token positions, classes, or none), side by side:
    the patch projection's rows and bias, the class token, the positions, every
    LayerNorm's gain and bias, the attention and MLP output biases, the head's columns.
    (The Q/K/V/MLP input columns and the output rows are left out: their other axis is a
    head or hidden unit, itself unmatched at this point.)"""
    e = model.embed
    width = e.proj.out_features
    cols = [e.proj.weight, e.proj.bias[:, None], e.cls.reshape(-1, width).T]
    cols.append(e.pos.reshape(-1, width).T)
    for blk in model.blocks:
        for vec in (blk.ln1.weight, blk.ln1.bias, blk.ln2.weight, blk.ln2.bias):
            cols.append(vec[:, None])
        cols += [blk.attn.o.bias[:, None], blk.mlp[2].bias[:, None]]
    cols += [model.norm.weight[:, None], model.norm.bias[:, None], model.head.weight.T]
    return torch.cat(cols, dim=1)


@torch.no_grad()
def resid_order(ref: nn.Module, other: nn.Module) -> np.ndarray:
    """``order`` with ``other``'s residual coordinate ``order[i]`` matched to ``ref``'s
    coordinate i: ``linear_sum_assignment`` (maximize) on ``F_ref F_other^T`` of
    :func:`_resid_features` (weight matching of one permutation, no iteration)."""
    f_r, f_o = _resid_features(ref).double(), _resid_features(other).double()
    rows, cols = linear_sum_assignment((f_r @ f_o.T).numpy(), maximize=True)
    return cols[np.argsort(rows)]


@torch.no_grad()
def permute_residual(model: nn.Module, order: torch.Tensor | np.ndarray) -> None:
    """Reorder the residual stream in place: coordinate i <- coordinate ``order[i]`` in
    every parameter indexed by the width (embedding, LayerNorms, the input columns of
    Q, K, V and the first MLP layer, the output rows and biases of O and the second MLP
    layer, the head's columns). The logits are unchanged."""
    idx = torch.as_tensor(np.asarray(order), dtype=torch.long)
    e = model.embed
    for p in (e.proj.weight, e.proj.bias):
        p.copy_(p[idx])
    for p in (e.cls, e.pos):
        p.copy_(p[..., idx])
    norms = [n for blk in model.blocks for n in (blk.ln1, blk.ln2)] + [model.norm]
    for ln in norms:
        ln.weight.copy_(ln.weight[idx])
        ln.bias.copy_(ln.bias[idx])
    for blk in model.blocks:
        a = blk.attn
        for lin in (a.q, a.k, a.v, blk.mlp[0]):
            lin.weight.copy_(lin.weight[:, idx])
        for lin in (a.o, blk.mlp[2]):
            lin.weight.copy_(lin.weight[idx])
            lin.bias.copy_(lin.bias[idx])
    model.head.weight.copy_(model.head.weight[:, idx])


def match_residual(ref: nn.Module, other: nn.Module) -> nn.Module:
    """A copy of ``other`` with its residual stream permuted onto ``ref``'s
    (:func:`resid_order`); the same function as ``other``."""
    out = copy.deepcopy(other)
    permute_residual(out, resid_order(ref, other))
    return out


def aligned(a: nn.Module, b: nn.Module, how: str, resid: bool = False) -> nn.Module:
    """``b`` as fusion ``how`` (a key of :data:`FUSIONS`) averages it with ``a``: with
    ``resid`` its residual stream permuted onto ``a``'s first (:func:`match_residual`;
    never for ``average``, which stays plain averaging), then its heads and MLPs matched
    (:func:`align`). The same function as ``b``."""
    other = match_residual(a, b) if resid and how != "average" else b
    return align(a, other, *FUSIONS[how])


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


def fuse(a: nn.Module, b: nn.Module, alpha: float, how: str, resid: bool = False) -> nn.Module:
    """Fusion ``how`` (a key of :data:`FUSIONS`) of ``a`` and ``b`` with weight ``alpha``
    on ``b`` (``alpha=0``: ``a``; ``alpha=1``: ``b`` aligned to ``a``, its residual
    stream first with ``resid``)."""
    return interpolate(a, aligned(a, b, how, resid), alpha).eval()


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
def random_permuted_copy(model: nn.Module, generator: torch.Generator, resid: bool) -> nn.Module:
    """A copy of ``model`` moved by random permutations only: of the residual stream
    (with ``resid``; :func:`permute_residual`), of each head's coordinates (one for
    Q/K, one for V/O; a permutation matrix is also a rotation) and of every MLP's hidden
    units. The same function as ``model``."""
    out = copy.deepcopy(model)
    if resid:
        permute_residual(out, torch.randperm(out.embed.proj.out_features, generator=generator))
    for block in out.blocks:
        a = block.attn
        eye = torch.eye(a.head_dim)
        for h in range(a.heads):
            qk = eye[torch.randperm(a.head_dim, generator=generator)]
            vo = eye[torch.randperm(a.head_dim, generator=generator)]
            transform_head(a, h, qk, vo)
        permute_mlp(block.mlp, torch.randperm(block.mlp[0].out_features, generator=generator))
    return out


#: fusions that match (the self-fusion gate's subjects; ``average`` does not match)
MATCHED = ("perm", "rotation")


@torch.no_grad()
def self_fusion_err(
    model: nn.Module,
    x: torch.Tensor,
    generator: torch.Generator,
    permute_resid: bool,
    resid: bool,
    alpha: float = 0.5,
) -> float:
    """The sanity gate of the matched fusions: the max absolute logit change on ``x``
    between ``model`` and its fusion (weight ``alpha``) with a randomly permuted copy of
    itself (:func:`random_permuted_copy`, the residual stream permuted with
    ``permute_resid``), over every fusion of :data:`MATCHED` (residual matching with
    ``resid``). A matching that undoes the permutations gives back ``model`` (~1e-6,
    float rounding); one that misses the residual permutation does not."""
    twin = random_permuted_copy(model, generator, permute_resid)
    ref = model(x)
    return max(
        float((fuse(model, twin, alpha, how, resid)(x) - ref).abs().max()) for how in MATCHED
    )


@torch.no_grad()
def distance(a: nn.Module, b: nn.Module) -> float:
    """L2 distance between the matched weights (attention and MLP linears) of a and b."""
    total = 0.0
    for ba, bb in zip(a.blocks, b.blocks, strict=True):
        for name in ("attn.q", "attn.k", "attn.v", "attn.o", "mlp.0", "mlp.2"):
            la, lb = ba.get_submodule(name), bb.get_submodule(name)
            total += float((la.weight - lb.weight).pow(2).sum() + (la.bias - lb.bias).pow(2).sum())
    return total**0.5


# ---------------------------------------------------------------- what the matching did


@torch.no_grad()
def weight_norm(model: nn.Module) -> float:
    """L2 norm of every floating-point entry of ``model``'s state dict together."""
    sa = model.state_dict()
    return float(sum(v.double().pow(2).sum() for v in sa.values() if v.is_floating_point())) ** 0.5


@torch.no_grad()
def weight_distance(a: nn.Module, b: nn.Module) -> float:
    """L2 norm of the difference of every floating-point entry of the state dicts of
    ``a`` and ``b`` (the square root of the official code's "distance", the sum of
    squared differences over all tensors, ``vit-fusion/main.py:300-307``)."""
    sb = b.state_dict()
    total = sum(
        (v.double() - sb[k].double()).pow(2).sum()
        for k, v in a.state_dict().items()
        if v.is_floating_point()
    )
    return float(total) ** 0.5


def fixed_fraction(matched: Sequence[BlockMatch]) -> float:
    """Share of the permuted indices that stay in place: fixed points (``trace(P)``) of
    every per-head Q/K and V/O permutation matrix and of every MLP order
    (``order[i] == i``), summed, over the number of indices all of them permute. 1.0: the
    matching is the identity; about 1/16 for a random permutation of 16 indices."""
    fixed = total = 0.0
    for m in matched:
        for p in (*m.qk, *m.vo):
            fixed += float(torch.diagonal(p).sum())
            total += len(p)
        if m.order is not None:
            fixed += float(np.sum(m.order == np.arange(len(m.order))))
            total += len(m.order)
    return fixed / total if total else 1.0


def mean_angle_deg(mats: Sequence[torch.Tensor]) -> float:
    """Mean principal angle of orthogonal matrices from the identity, in degrees.

    The eigenvalues of an orthogonal d x d matrix ``R`` lie on the unit circle: pairs
    ``exp(+-i theta_k)`` (a rotation by ``theta_k`` in the k-th invariant plane) and the
    real ones ``+1`` (angle 0) and ``-1`` (angle 180, a reflection). The angle returned
    is the mean of ``|arg lambda|`` over all d eigenvalues of every matrix, in [0, 180].
    It is 0 for the identity and ``theta`` when every plane is rotated by ``theta``
    (d even); a Haar-random orthogonal matrix gives about 90 on average."""
    if not mats:
        return 0.0
    angles = torch.cat([torch.linalg.eigvals(m.double()).angle().abs() for m in mats])
    return float(torch.rad2deg(angles).mean())


def match_stats(a: nn.Module, b: nn.Module, resid: bool = False) -> dict[str, float]:
    """What matching ``b`` to ``a`` does, measured on the weights (fp32):

    - ``dist_ab``: :func:`weight_distance` of ``a`` and ``b`` before any matching;
    - ``dist_ab_rel``: ``dist_ab`` over the mean :func:`weight_norm` of ``a`` and ``b``;
    - ``dist_ab_perm``, ``dist_ab_rot``: the distance of ``a`` to ``b`` after the
      ``perm`` / ``rotation`` fusion's matching (per-head permutation / rotation of Q/K
      and V/O, and the MLP permutation; after the residual permutation when ``resid``);
    - ``perm_fixed_frac``: :func:`fixed_fraction` of the ``perm`` matching;
    - ``rot_angle_deg``: :func:`mean_angle_deg` of the ``rotation`` matching's per-head
      Q/K and V/O matrices;
    - with ``resid``: ``resid_fixed_frac``, the share of residual coordinates that the
      residual permutation (:func:`resid_order`) leaves in place.
    """
    other = b
    out = {"dist_ab": weight_distance(a, b)}
    out["dist_ab_rel"] = out["dist_ab"] / (0.5 * (weight_norm(a) + weight_norm(b)))
    if resid:
        order = resid_order(a, b)
        other = copy.deepcopy(b)
        permute_residual(other, order)
    perm = matchings(a, other, *FUSIONS["perm"])
    rot = matchings(a, other, *FUSIONS["rotation"])
    out["dist_ab_perm"] = weight_distance(a, apply_matchings(other, perm))
    out["dist_ab_rot"] = weight_distance(a, apply_matchings(other, rot))
    out["perm_fixed_frac"] = fixed_fraction(perm)
    out["rot_angle_deg"] = mean_angle_deg([r for m in rot for r in (*m.qk, *m.vo)])
    if resid:
        out["resid_fixed_frac"] = float(np.mean(order == np.arange(len(order))))
    return out
