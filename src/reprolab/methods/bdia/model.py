"""The ViT trained under each variant, and its training forward.

Every variant trains the same network (``core.transformer.vit``: patch embedding, pre-norm
blocks, final norm, linear head). At inference gamma = 0 for BDIA, which is the standard
transformer's forward, so the trained object of every variant is a plain ``Encoder``
whose ``nn.Linear`` layers the quantize stage reaches.

- ``standard``: ``x_{k+1} = x_k + h_k(x_k)``; autograd stores every block's activations.
- ``bdia``: ``x_1 = x_0 + h_0(x_0)``, ``x_{k+1} = g x_{k-1} + (1 - g) x_k + (1 + g) h_k(x_k)``
  with g = +-1/2 drawn per sample and block at every step, activations in fixed point
  (``bits`` fraction bits) with one parity bit of side information per activation and
  block; the custom autograd function keeps only the last two states and the parity
  bits, and reconstructs the rest by exact inversion in backward.
"""

from __future__ import annotations

import torch

from reprolab.core.training import ClassifierModule
from reprolab.core.transformer import Encoder, vit
from reprolab.methods.bdia.memory import SavedBytes
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


def bdia_logits(net: Encoder, x: torch.Tensor, signs, bits: int) -> torch.Tensor:
    """The BDIA training forward (the custom autograd stack between embed and head)."""
    return net.readout(bdia_features(net.blocks, net.embed(x), signs, bits))


class ViTClassifier(ClassifierModule):
    """Cross-entropy, Adam with a cosine schedule (``ClassifierModule``); the training
    forward is the variant's. Every training step counts the activation bytes it holds
    for backward (``SavedBytes``); the epoch's largest count goes into the history."""

    def __init__(self, net: Encoder, variant: str, bits: int, seed: int, lr: float, epochs: int):
        super().__init__(net, lr=lr, epochs=epochs)
        self.variant, self.bits, self.seed = variant, bits, seed
        self._saved_max = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training and self.variant == "bdia":
            # gamma signs are a function of (seed, step): a resumed run draws the same
            gen = torch.Generator().manual_seed(self.seed * 1_000_003 + self.global_step)
            signs = draw_signs(len(x), len(self.net.blocks), gen)
            return bdia_logits(self.net, x, signs, self.bits)
        return self.net(x)

    def training_step(self, batch, batch_idx):
        counter = SavedBytes(self.parameters())
        with counter.counting():
            loss = super().training_step(batch, batch_idx)
        self._saved_max = max(self._saved_max, counter.bytes)
        return loss

    def on_validation_epoch_end(self) -> None:
        if self.trainer.sanity_checking:
            return
        super().on_validation_epoch_end()
        self.history[-1]["saved_mb"] = self._saved_max / 2**20
        self._saved_max = 0
