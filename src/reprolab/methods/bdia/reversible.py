"""Exact bit-level reversible BDIA update in integer (fixed-point) arithmetic.

Activations are held as integer multiples of ``2**-bits``. With ``g = sign * 1/2`` per
sample and block, block k >= 1 maps ``(X_{k-1}, X_k)`` to
``X_{k+1} = sign * floor(X_{k-1} / 2) + R_k(X_k)``, where
``R_k(X) = round(2**bits * ((1 - g) x + (1 + g) h_k(x)))`` depends on ``X_k`` only.
The one bit lost by halving, ``s = X_{k-1} mod 2`` (the parity), is kept as side
information (1 bit per activation per block, bit-packed), so
``X_{k-1} = 2 * sign * (X_{k+1} - R_k(X_k)) + s`` exactly: integer floor division
only, no round-half-to-even on the halved term, and ``R_k`` is recomputed from the very
same integer ``X_k``, so any deterministic block (also a quantized one) inverts exactly.
The first update ``X_1 = round(2**bits (x_0 + h_0(x_0)))`` is not inverted: ``X_0`` is
recovered by block 1's inversion, so the last two states and the parity bits
reconstruct every state ``X_0 .. X_K``.
"""

from __future__ import annotations

import torch


def to_fixed(x: torch.Tensor, bits: int) -> torch.Tensor:
    return torch.round(x * 2.0**bits).to(torch.int64)


def to_float(q: torch.Tensor, bits: int) -> torch.Tensor:
    return q.to(torch.float32) / 2.0**bits


def residual_term(block, q: torch.Tensor, sign: torch.Tensor, bits: int) -> torch.Tensor:
    """R_k(X): integer, a deterministic function of X (and the per-sample sign)."""
    x = to_float(q, bits)
    g = 0.5 * sign.view(-1, *([1] * (x.dim() - 1))).to(x.dtype)
    return to_fixed((1 - g) * x + (1 + g) * block.delta(x), bits)


def bdia_step(block, q_prev, q_cur, sign, bits):
    """One forward step; returns (X_{k+1}, parity bit of X_{k-1})."""
    s = view_sign(sign, q_prev)
    parity = torch.remainder(q_prev, 2)
    q_next = s * torch.div(q_prev, 2, rounding_mode="floor") + residual_term(
        block, q_cur, sign, bits
    )
    return q_next, parity.to(torch.bool)


def bdia_invert(block, q_cur, q_next, sign, parity, bits):
    """Recover X_{k-1} from (X_k, X_{k+1}) and the parity bit."""
    s = view_sign(sign, q_cur)
    t = q_next - residual_term(block, q_cur, sign, bits)
    return 2 * (s * t) + parity.to(torch.int64)


def view_sign(sign: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return sign.to(torch.int64).view(-1, *([1] * (like.dim() - 1)))


@torch.no_grad()
def forward_states(blocks, x0: torch.Tensor, signs, bits: int):
    """All integer states X_0..X_K and parity bits for a stack of blocks."""
    q0 = to_fixed(x0, bits)
    q1 = to_fixed(to_float(q0, bits) + blocks[0].delta(to_float(q0, bits)), bits)
    states, parities = [q0, q1], []
    for k in range(1, len(blocks)):
        q_next, p = bdia_step(blocks[k], states[-2], states[-1], signs[k], bits)
        states.append(q_next)
        parities.append(p)
    return states, parities


@torch.no_grad()
def reconstruct(blocks, q_last2, q_last, signs, parities, bits: int):
    """Reconstruct X_{K-2}..X_0 from the last two states; returns the full list."""
    rec = [q_last2, q_last]
    for k in range(len(blocks) - 1, 0, -1):
        q_prev = bdia_invert(blocks[k], rec[0], rec[1], signs[k], parities[k - 1], bits)
        rec.insert(0, q_prev)
    return rec


def pack_bits(bits: torch.Tensor) -> torch.Tensor:
    """Bool tensor -> uint8 tensor holding 8 of its entries per byte (little-endian)."""
    flat = bits.reshape(-1).to(torch.uint8)
    flat = torch.cat([flat, flat.new_zeros((-len(flat)) % 8)])
    weights = torch.tensor([1, 2, 4, 8, 16, 32, 64, 128], dtype=torch.uint8)
    return (flat.view(-1, 8) * weights).sum(1, dtype=torch.uint8)


def unpack_bits(packed: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Inverse of :func:`pack_bits`: the bool tensor of ``shape``."""
    shifts = torch.arange(8, dtype=torch.uint8)
    flat = ((packed[:, None] >> shifts) & 1).reshape(-1)
    n = 1
    for d in shape:
        n *= d
    return flat[:n].view(shape).to(torch.bool)


INT32 = torch.iinfo(torch.int32)


def narrow_int32(q: torch.Tensor) -> torch.Tensor:
    """A state as int32 for storage (fails loudly instead of wrapping around)."""
    if q.numel() and (int(q.max()) > INT32.max or int(q.min()) < INT32.min):
        raise OverflowError("a fixed-point activation does not fit in int32; lower `bits`")
    return q.to(torch.int32)


class BDIAStack(torch.autograd.Function):
    """Forward through all blocks keeping only the last two states (int32), the parity
    bits (packed, 1 bit per activation per block) and the per-sample signs (int8);
    backward reconstructs each earlier state by exact inversion and recomputes the
    block locally (straight-through for the rounding). Everything backward reads goes
    through ``save_for_backward``, so ``saved_tensors_hooks`` see all of it."""

    @staticmethod
    def forward(ctx, x0, signs, bits, blocks, *params):
        # the forward of ``forward_states``, keeping two states at a time
        with torch.no_grad():
            q_prev = to_fixed(x0, bits)
            x = to_float(q_prev, bits)
            q_cur = to_fixed(x + blocks[0].delta(x), bits)
            packed = []
            for k in range(1, len(blocks)):
                q_next, parity = bdia_step(blocks[k], q_prev, q_cur, signs[k], bits)
                packed.append(pack_bits(parity))
                q_prev, q_cur = q_cur, q_next
        ctx.blocks, ctx.bits, ctx.shape = blocks, bits, q_cur.shape
        sign_table = torch.stack([s.to(torch.int8) for s in signs])
        ctx.save_for_backward(sign_table, narrow_int32(q_prev), narrow_int32(q_cur), *packed)
        return to_float(q_cur, bits)

    @staticmethod
    def backward(ctx, grad_out):
        blocks, bits, shape = ctx.blocks, ctx.bits, ctx.shape
        sign_table, q_km1, q_k, *packed = ctx.saved_tensors
        signs = [s.to(torch.int64) for s in sign_table]
        params = [p for b in blocks for p in b.parameters()]
        pgrads = {id(p): torch.zeros_like(p) for p in params}
        a_next, a_cur = grad_out, torch.zeros_like(grad_out)
        q_cur, q_next = q_km1.to(torch.int64), q_k.to(torch.int64)
        for k in range(len(blocks) - 1, 0, -1):
            parity = unpack_bits(packed[k - 1], shape)
            q_prev = bdia_invert(blocks[k], q_cur, q_next, signs[k], parity, bits)
            g = 0.5 * signs[k].view(-1, *([1] * (grad_out.dim() - 1))).to(grad_out.dtype)
            bp = list(blocks[k].parameters())
            with torch.enable_grad():
                x = to_float(q_cur, bits).requires_grad_(True)
                out = (1 - g) * x + (1 + g) * blocks[k].delta(x)
                gs = torch.autograd.grad(out, [x, *bp], a_next, allow_unused=True)
            a_prev = g * a_next
            a_cur = a_cur + gs[0]
            for p, gp in zip(bp, gs[1:], strict=True):
                if gp is not None:
                    pgrads[id(p)] += gp
            a_next, a_cur = a_cur, a_prev
            q_cur, q_next = q_prev, q_cur
        bp = list(blocks[0].parameters())
        with torch.enable_grad():
            x = to_float(q_cur, bits).requires_grad_(True)
            out = x + blocks[0].delta(x)
            gs = torch.autograd.grad(out, [x, *bp], a_next, allow_unused=True)
        for p, gp in zip(bp, gs[1:], strict=True):
            if gp is not None:
                pgrads[id(p)] += gp
        return (a_cur + gs[0], None, None, None, *[pgrads[id(p)] for p in params])


def bdia_features(blocks, x0, signs, bits):
    params = [p for b in blocks for p in b.parameters()]
    return BDIAStack.apply(x0, signs, bits, blocks, *params)


def plain_features(blocks, x0, signs):
    """The stored-activation float recursion (reference for the gradient)."""
    prev, cur = x0, x0 + blocks[0].delta(x0)
    for k in range(1, len(blocks)):
        g = 0.5 * signs[k].view(-1, *([1] * (x0.dim() - 1))).to(x0.dtype)
        prev, cur = cur, g * prev + (1 - g) * cur + (1 + g) * blocks[k].delta(cur)
    return cur
