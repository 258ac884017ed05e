"""The classifier trained under each loss: a scorer f(x) trained with SGD (momentum 0.9)
and a cosine learning-rate schedule, as in the official train.py."""

from __future__ import annotations

import torch
from torch import nn

from reprolab.core.training import HistoryModule
from reprolab.methods.ensloss.losses import LOSSES
from reprolab.methods.ensloss.net import mlp


class ScoreClassifier(HistoryModule):
    """Any scorer ``net`` (one output) under one of :data:`LOSSES`. ``clip_norm`` > 0
    clips the gradient norm at every step (the official code does so for the
    exponential loss). History per epoch: mean training loss, accuracy on the training
    labels it is fitted to (noisy ones, measured on the batches as they are trained),
    and validation accuracy (clean labels)."""

    def __init__(
        self,
        net: nn.Module,
        loss: str,
        lr: float,
        momentum: float,
        weight_decay: float,
        epochs: int,
        seed: int,
        clip_norm: float = 0.0,
    ) -> None:
        super().__init__()
        self.net = net
        self.loss_fn = LOSSES[loss]
        self.lr, self.momentum, self.weight_decay = lr, momentum, weight_decay
        self.epochs, self.seed, self.clip_norm = epochs, seed, clip_norm
        self._loss_sum = torch.zeros(())
        self._batches = self._train_correct = self._train_n = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).flatten()

    def training_step(self, batch, batch_idx):
        x, y = batch
        scores = self(x)
        margins = scores * (2.0 * y - 1.0)
        # EnsLoss's random derivatives are a function of (seed, step): resuming from a
        # checkpoint replays exactly the draws an uninterrupted run would make.
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + self.global_step)
        loss = self.loss_fn(margins, gen)
        self._loss_sum = self._loss_sum + loss.detach()
        self._batches += 1
        self._train_correct += int(((scores.detach() > 0).long() == y).sum())
        self._train_n += len(y)
        return loss

    def configure_gradient_clipping(
        self, optimizer, gradient_clip_val=None, gradient_clip_algorithm=None
    ) -> None:
        if self.clip_norm > 0:
            self.clip_gradients(optimizer, self.clip_norm, "norm")

    def validation_step(self, batch, batch_idx):
        x, y = batch
        pred = (self(x) > 0).long()
        self._val_correct = getattr(self, "_val_correct", 0) + int((pred == y).sum())
        self._val_n = getattr(self, "_val_n", 0) + len(y)

    def on_validation_epoch_end(self) -> None:
        self.history.append(
            {
                "epoch": self.current_epoch,
                "train_loss": float(self._loss_sum) / max(self._batches, 1),
                "train_acc_noisy": self._train_correct / max(self._train_n, 1),
                "val_acc": self._val_correct / max(self._val_n, 1),
            }
        )
        self._loss_sum, self._batches, self._val_correct, self._val_n = torch.zeros(()), 0, 0, 0
        self._train_correct = self._train_n = 0

    def configure_optimizers(self):
        opt = torch.optim.SGD(
            self.parameters(), lr=self.lr, momentum=self.momentum, weight_decay=self.weight_decay
        )
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=self.epochs)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "epoch"}}


class BinaryClassifier(ScoreClassifier):
    """The MLP setting's classifier: :func:`net.mlp` under one loss."""

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
        super().__init__(mlp(in_dim, hidden, depth), loss, lr, momentum, weight_decay, epochs, seed)
