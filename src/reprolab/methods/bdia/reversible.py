"""Exact bit-level reversible BDIA update in integer (fixed-point) arithmetic.

Activations are held as int64 multiples of ``2**-bits``. With ``g = sign * 1/2`` per
sample, block k maps ``(X_{k-1}, X_k)`` to
``X_{k+1} = sign * floor(X_{k-1} / 2) + R_k(X_k)``, where
``R_k(X) = round(2**bits * ((1 - g) x + (1 + g) h_k(x)))`` depends on ``X_k`` only.
The one bit lost by halving, ``s = X_{k-1} mod 2`` (the parity), is kept as side
information, so ``X_{k-1} = 2 * sign * (X_{k+1} - R_k(X_k)) + s`` exactly (no
round-half-to-even on the halved term: integer floor division only).
The first update is ``x1 = x0 + h0(x0)``, inverted by storing x0 (one block).
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
