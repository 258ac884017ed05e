"""The ViT trained under each variant, and its training forward.

Every variant trains the same network (``core.transformer.vit``: patch embedding, pre-norm
blocks, final norm, linear head). At inference gamma = 0 for BDIA, which is the standard
transformer's forward "up to activation quantization" (the paper's abstract): the BDIA
model is evaluated as :class:`FixedPointViT`, the same ``Encoder`` with every block
input rounded to the ``2**-bits`` grid, as the training forward holds it. Its
``nn.Linear`` layers are what the quantize stage reaches.

- ``standard``: ``x_{k+1} = x_k + h_k(x_k)``; autograd stores every block's activations.
- ``bdia``: ``x_1 = x_0 + h_0(x_0)``, ``x_{k+1} = g x_{k-1} + (1 - g) x_k + (1 + g) h_k(x_k)``
  with g = +-1/2 drawn per sample and block at every step, activations in fixed point
  (``bits`` fraction bits) with one parity bit of side information per activation and
  block; the custom autograd function keeps only the last two states and the parity
  bits, and reconstructs the rest by exact inversion in backward.
"""

from __future__ import annotations

import torch

from reprolab.core.transformer import Encoder, vit
from reprolab.methods.bdia.reversible import bdia_features


def image_side(n_features: int) -> int:
    side = int(round(n_features**0.5))
    if side * side != n_features:
        raise ValueError(f"{n_features} features are not a square grey image")
    return side


def build_vit(n_features: int, cfg) -> Encoder:
    side = image_side(n_features)
    if side % cfg.patches_per_side:
        raise ValueError(
            f"patches_per_side: {cfg.patches_per_side} does not divide the image side {side}"
        )
    return vit(
        image_size=side,
        patch=side // cfg.patches_per_side,
        dim=cfg.dim,
        depth=cfg.depth,
        heads=cfg.heads,
        classes=10,
        mlp_ratio=cfg.mlp_ratio,
    )


def draw_signs(n: int, depth: int, gen: torch.Generator) -> list[torch.Tensor]:
    """g / (1/2) in {+1, -1}, one per sample and block (block 0's is unused)."""
    return list(torch.randint(0, 2, (depth, n), generator=gen) * 2 - 1)


def fixed_point_logits(net: Encoder, x: torch.Tensor, bits: int) -> torch.Tensor:
    """gamma = 0: ``X_{k+1} = round(2**bits (x_k + h_k(x_k)))``, the standard forward with
    activations on the fixed-point grid."""
    scale = 2.0**bits
    h = torch.round(net.embed(x) * scale) / scale
    for block in net.blocks:
        h = torch.round(block(h) * scale) / scale
    return net.readout(h)


class FixedPointViT(torch.nn.Module):
    """The trained BDIA network at inference (gamma = 0, fixed-point activations)."""

    def __init__(self, net: Encoder, bits: int) -> None:
        super().__init__()
        self.net, self.bits = net, bits

    @property
    def embed(self):
        return self.net.embed

    @property
    def blocks(self):
        return self.net.blocks

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return fixed_point_logits(self.net, x, self.bits)


def bdia_logits(net: Encoder, x: torch.Tensor, signs, bits: int) -> torch.Tensor:
    """The BDIA training forward (the custom autograd stack between embed and head)."""
    return net.readout(bdia_features(net.blocks, net.embed(x), signs, bits))
