"""The classifier trained under each loss: an MLP scoring f(x), trained with SGD
(momentum 0.9) and a cosine learning-rate schedule, as in the official train.py."""

from __future__ import annotations

import torch

from reprolab.core.training import HistoryModule
from reprolab.methods.ensloss.losses import LOSSES
from reprolab.methods.ensloss.net import mlp


class BinaryClassifier(HistoryModule):
    def __init__(
        self,
        in_dim: int,
        hidden: int,
        depth: int,
        loss: str,
        lr: float,
        momentum: float,
        weight_decay: float,
        epochs: int,
        seed: int,
    ) -> None:
        super().__init__()
        self.net = mlp(in_dim, hidden, depth)
        self.loss_fn = LOSSES[loss]
        self.lr, self.momentum, self.weight_decay = lr, momentum, weight_decay
        self.epochs, self.seed = epochs, seed
        self._loss_sum = torch.zeros(())
        self._batches = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).flatten()

    def training_step(self, batch, batch_idx):
        x, y = batch
        margins = self(x) * (2.0 * y - 1.0)
        # EnsLoss's random derivatives are a function of (seed, step): resuming from a
        # checkpoint replays exactly the draws an uninterrupted run would make.
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + self.global_step)
        loss = self.loss_fn(margins, gen)
        self._loss_sum = self._loss_sum + loss.detach()
        self._batches += 1
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        pred = (self(x) > 0).long()
        self._val_correct = getattr(self, "_val_correct", 0) + int((pred == y).sum())
        self._val_n = getattr(self, "_val_n", 0) + len(y)

    def on_validation_epoch_end(self) -> None:
        if self.trainer.sanity_checking:
            return
        self.history.append(
            {
                "epoch": self.current_epoch,
                "train_loss": float(self._loss_sum) / max(self._batches, 1),
                "val_acc": self._val_correct / max(self._val_n, 1),
            }
        )
        self._loss_sum, self._batches, self._val_correct, self._val_n = torch.zeros(()), 0, 0, 0

    def configure_optimizers(self):
        opt = torch.optim.SGD(
            self.parameters(), lr=self.lr, momentum=self.momentum, weight_decay=self.weight_decay
        )
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=self.epochs)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "epoch"}}
