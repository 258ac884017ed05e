"""The Semi-Clipped adapter as a Lightning module, and its epochs of weak pairs.

Each epoch's weak pairs (and, for PEA, its bank of batch corrections) are drawn from one
numpy generator carried across epochs, in the order the method has always drawn them:
PEA bank, then the epoch's minibatches. The generator's state travels in every
checkpoint, so a unit resumed after a kill draws exactly the epochs an uninterrupted
one would.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import IterableDataset

from reprolab.core.training import HistoryModule
from reprolab.methods.semiclipped import sim
from reprolab.methods.semiclipped.pairs import batches, clip_loss


class WeakPairs(IterableDataset):
    """One pass = one epoch of (transcriptomics input, image embedding) minibatches."""

    def __init__(self, data: dict, cfg, rng: np.random.Generator, pea: bool) -> None:
        self.data, self.cfg, self.rng, self.pea = data, cfg, rng, pea
        self.train_ctrl = (data["pert"] < 0) & ~data["test_batch"]

    def __iter__(self):
        pea = None
        if self.pea:
            d, c = self.data, self.cfg
            pea = sim.pea_bank(
                d["tx"], d["batch"], self.train_ctrl, c.pea_bank, c.pea_min_frac, c.shrink, self.rng
            )
        for x, y in batches(self.data, self.cfg, self.rng, pea):
            yield torch.from_numpy(x), torch.from_numpy(y)


class AdapterModule(HistoryModule):
    """The transcriptomics adapter ``tx`` (and, for joint CLIP, an image adapter ``img``)
    under the variant's loss: symmetric InfoNCE against the image embeddings, or MSE for
    the distillation baseline; Adam; history per epoch: the mean training loss."""

    def __init__(self, tx, img, variant: str, lr: float, temperature: float, pairs: WeakPairs):
        super().__init__()
        self.tx, self.img = tx, img
        self.variant, self.lr, self.temperature = variant, lr, temperature
        self.pairs = pairs
        self._losses: list[float] = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        out = self.tx(x)
        if self.variant == "mse_distill":
            loss = F.mse_loss(out, y)
        else:
            target = self.img(y) if self.img is not None else y
            loss = clip_loss(out, target, self.temperature)
        self._losses.append(float(loss.detach()))
        return loss

    def on_train_epoch_end(self) -> None:
        loss = float(np.mean(self._losses))
        self.history.append({"epoch": self.current_epoch, "train_loss": loss})
        self._losses = []

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        super().on_save_checkpoint(checkpoint)
        checkpoint["weak_pairs_rng"] = self.pairs.rng.bit_generator.state

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        super().on_load_checkpoint(checkpoint)
        self.pairs.rng.bit_generator.state = checkpoint["weak_pairs_rng"]

    def configure_optimizers(self):
        params = list(self.tx.parameters())
        if self.img is not None:
            params += list(self.img.parameters())
        return torch.optim.Adam(params, lr=self.lr)
