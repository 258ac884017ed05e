"""Training the victim CNN (``net.cnn``) with Lightning: cross-entropy, Adam, cosine
schedule. The attacks only ever see its predicted label."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from reprolab.core.training import HistoryModule
from reprolab.methods.ttba.net import cnn


class Victim(HistoryModule):
    def __init__(
        self,
        in_dim: int,
        channels: tuple[int, int],
        hidden: int,
        lr: float,
        epochs: int,
        n_classes: int = 10,
    ) -> None:
        super().__init__()
        self.net = cnn(in_dim, channels, hidden, n_classes)
        self.lr, self.epochs = lr, epochs
        self._loss_sum, self._batches, self._correct, self._n = 0.0, 0, 0, 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self._loss_sum += float(loss.detach())
        self._batches += 1
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self._correct += int((self(x).argmax(-1) == y).sum())
        self._n += len(y)

    def on_validation_epoch_end(self) -> None:
        if self.trainer.sanity_checking:
            return
        self.history.append(
            {
                "epoch": self.current_epoch,
                "train_loss": self._loss_sum / max(self._batches, 1),
                "val_acc": self._correct / max(self._n, 1),
            }
        )
        self._loss_sum, self._batches, self._correct, self._n = 0.0, 0, 0, 0

    def configure_optimizers(self):
        opt = torch.optim.Adam(self.parameters(), lr=self.lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=self.epochs)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "epoch"}}
