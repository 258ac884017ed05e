"""Lightning module: the 1-Lipschitz classifier (cross-entropy on logits / T, Adam) or,
for RSCP, a ReLU MLP trained on Gaussian-noise-augmented inputs (noise std sigma)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from reprolab.core.training import HistoryModule
from reprolab.methods.lip_rcp.net import lip_mlp, relu_mlp


class Classifier(HistoryModule):
    def __init__(
        self,
        in_dim: int,
        n_classes: int,
        hidden: int,
        depth: int,
        lipschitz: bool,
        bjorck_iters: int,
        temp: float,
        noise: float,
        lr: float,
        epochs: int,
        seed: int,
    ) -> None:
        super().__init__()
        if lipschitz:
            self.net = lip_mlp(in_dim, hidden, depth, n_classes, bjorck_iters)
        else:
            self.net = relu_mlp(in_dim, hidden, depth, n_classes)
        self.temp, self.noise, self.lr, self.epochs, self.seed = temp, noise, lr, epochs, seed
        self._loss_sum, self._batches, self._correct, self._n = 0.0, 0, 0, 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        if self.noise > 0:  # noise draws are a function of (seed, step): resumable
            gen = torch.Generator().manual_seed(self.seed * 1_000_003 + self.global_step)
            x = x + self.noise * torch.randn(x.shape, generator=gen)
        loss = F.cross_entropy(self(x) / self.temp, y)
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
