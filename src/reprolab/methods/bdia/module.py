"""The Lightning module that trains the ViT under each variant."""

from __future__ import annotations

import torch

from reprolab.core.training import ClassifierModule
from reprolab.core.transformer import Encoder
from reprolab.methods.bdia.memory import SavedBytes
from reprolab.methods.bdia.net import bdia_logits, draw_signs, fixed_point_logits
from reprolab.methods.bdia.revvit import RevViT, revvit_features
from reprolab.methods.bdia.set_adam import SETAdam


class ViTClassifier(ClassifierModule):
    """Cross-entropy, Adam or SET-Adam with a cosine schedule (``ClassifierModule``); the
    training forward is the variant's. Every training step counts the activation bytes it
    holds for backward (``SavedBytes``); the epoch's largest count goes into the history."""

    def __init__(
        self,
        net: Encoder,
        variant: str,
        bits: int,
        seed: int,
        lr: float,
        epochs: int,
        optimizer: str = "adam",
    ):
        super().__init__(net, lr=lr, epochs=epochs)
        self.variant, self.bits, self.seed, self.optimizer = variant, bits, seed, optimizer
        self._saved_max = 0

    def configure_optimizers(self):
        if self.optimizer == "adam":
            return super().configure_optimizers()
        if self.optimizer != "set_adam":
            raise ValueError(f"optimizer: {self.optimizer!r} is not adam or set_adam")
        opt = SETAdam(self.parameters(), lr=self.lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=self.epochs)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "epoch"}}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training and self.variant == "bdia":
            # gamma signs are a function of (seed, step): a resumed run draws the same
            gen = torch.Generator().manual_seed(self.seed * 1_000_003 + self.global_step)
            signs = draw_signs(len(x), len(self.net.blocks), gen)
            return bdia_logits(self.net, x, signs, self.bits)
        if self.variant == "bdia":
            return fixed_point_logits(self.net, x, self.bits)
        if self.variant == "revvit":
            if self.training:
                return self.net.readout(revvit_features(self.net.blocks, self.net.embed(x)))
            return RevViT(self.net)(x)
        return self.net(x)

    def training_step(self, batch, batch_idx):
        counter = SavedBytes(self.parameters())
        with counter.counting():
            loss = super().training_step(batch, batch_idx)
        self._saved_max = max(self._saved_max, counter.bytes)
        return loss

    def on_validation_epoch_end(self) -> None:
        super().on_validation_epoch_end()
        self.history[-1]["saved_mb"] = self._saved_max / 2**20
        self._saved_max = 0
