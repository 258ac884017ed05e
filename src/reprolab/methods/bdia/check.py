"""The reconstruction check: every block input rebuilt from the last two states.

For each input batch, the BDIA forward in fixed point gives the states
``X_0 .. X_K`` (``X_k`` is block k's input for k < K) and the parity bits; the inverse
walks back from ``(X_{K-1}, X_K)`` alone. Every reconstructed state is compared with the
forward's bit for bit (``torch.equal`` and the popcount of the XOR of the int64 codes).
Input kinds cover the cases where a fixed-point inverse goes wrong: real embedded
images, Gaussian activations of unit and large scale, inputs exactly on rounding ties of
the fixed-point grid (odd multiples of ``2**-(bits+1)``) and one grid step beside them,
and batches with every sign +1 or every sign -1 (floor division of negative odd codes).
"""

from __future__ import annotations

import numpy as np
import torch

from reprolab.methods.bdia.reversible import forward_states, reconstruct

KINDS = ("images", "gauss", "gauss_x30", "ties", "near_ties", "images_one_sign")


def differing_bits(a: torch.Tensor, b: torch.Tensor) -> int:
    """Number of bits in which two int64 tensors differ (popcount of the XOR)."""
    x = np.ascontiguousarray((a ^ b).numpy()).view(np.uint8)
    return int(np.unpackbits(x).sum())


def _inputs(kind: str, images: torch.Tensor, shape, bits: int, gen: torch.Generator):
    n = shape[0]
    if kind in ("images", "images_one_sign"):
        return images[torch.randint(len(images), (n,), generator=gen)]
    z = torch.randn(shape, generator=gen)
    if kind == "gauss":
        return z
    if kind == "gauss_x30":
        return 30 * z
    ties = (torch.floor(z * 2**bits) + 0.5) / 2**bits
    if kind == "ties":
        return ties
    step = torch.randint(-1, 2, shape, generator=gen).float() / 2 ** (bits + 12)
    return ties + step  # just below, on, or just above a tie


@torch.no_grad()
def reconstruction_check(
    blocks, embedded: torch.Tensor, bits: int, n_batches: int, batch: int, seed: int
) -> dict[str, float]:
    """Run ``n_batches`` batches (cycling through :data:`KINDS`) through the BDIA forward
    and its inverse. ``embedded``: (N, L, d) block-0 inputs of real images."""
    gen = torch.Generator().manual_seed(seed)
    depth = len(blocks)
    shape = (batch, *embedded.shape[1:])
    bad_bits = compared_bits = inputs = unequal_states = 0
    for i in range(n_batches):
        kind = KINDS[i % len(KINDS)]
        x0 = _inputs(kind, embedded, shape, bits, gen)
        if kind == "images_one_sign":
            one = 1 if (i // len(KINDS)) % 2 == 0 else -1
            signs = [torch.full((batch,), one, dtype=torch.int64) for _ in range(depth)]
        else:
            signs = list(torch.randint(0, 2, (depth, batch), generator=gen) * 2 - 1)
        states, parities = forward_states(blocks, x0, signs, bits)
        rebuilt = reconstruct(blocks, states[-2], states[-1], signs, parities, bits)
        if len(rebuilt) != len(states):
            raise RuntimeError(f"{len(rebuilt)} states rebuilt, {len(states)} in the forward")
        # X_{K-1} and X_K are the given ones: compare the K - 1 rebuilt states
        for a, b in zip(rebuilt[:-2], states[:-2], strict=True):
            unequal_states += not torch.equal(a, b)
            bad_bits += differing_bits(a, b)
            compared_bits += 64 * a.numel()
        inputs += batch
    return {
        "recon_blocks": float(depth),
        "recon_inputs": float(inputs),
        "recon_bits_compared": float(compared_bits),
        "recon_bad_bits": float(bad_bits),
        "recon_unequal_states": float(unequal_states),
    }
