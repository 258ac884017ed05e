"""Lightning module: two augmented views per image, the variant's loss, Adam with a
cosine schedule. Label-free: the labels never reach the training step."""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader

from reprolab.core.training import EpochBatchSampler, HistoryModule, TensorBatches
from reprolab.methods.cplearn.losses import barlow_twins_loss, cplearn_loss, temperature
from reprolab.methods.cplearn.net import SSLNet, augment


class FullBatches(EpochBatchSampler):
    """Index batches of exactly ``batch_size`` rows (the ragged tail of each epoch's
    permutation is dropped): tau depends on the batch size n, and batch norm needs n > 1."""

    def __iter__(self):
        for idx in super().__iter__():
            if len(idx) == self.batch_size:
                yield idx

    def __len__(self) -> int:
        return self.n // self.batch_size


def full_batches(x: torch.Tensor, batch_size: int, seed: int) -> DataLoader:
    if len(x) < batch_size:
        raise ValueError(
            f"batch_size={batch_size} is larger than the training split ({len(x)} rows); "
            "lower batch_size or raise max_rows"
        )
    sampler = FullBatches(len(x), batch_size, seed, shuffle=True)
    return DataLoader(TensorBatches(x), sampler=sampler, batch_size=None)


class SSLModule(HistoryModule):
    def __init__(self, net: SSLNet, variant: str, cfg, seed: int, n_codes: int) -> None:
        super().__init__()
        self.net, self.variant, self.cfg, self.seed = net, variant, cfg, seed
        self.n_codes = n_codes
        self._sums: dict[str, float] = {}
        self._batches = 0

    def _views(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # the augmentation draws are a function of (seed, step): a resumed run sees the
        # same views as an uninterrupted one
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + self.global_step)
        c = self.cfg
        args = (gen, c.aug_shift, c.aug_rotate, c.aug_scale, c.aug_erase, c.aug_noise)
        return augment(x, *args), augment(x, *args)

    def training_step(self, batch, batch_idx):
        (x,) = batch
        v, w = self._views(x)
        n = len(x)
        _, e_v, z_v = self.net(v)
        _, e_w, z_w = self.net(w)
        if self.variant == "barlow_twins":
            loss = barlow_twins_loss(e_v, e_w, self.cfg.bt_lambda)
            parts = {}
        else:
            tau = temperature(e_v.shape[1], n, self.n_codes, self.cfg.eps)
            l_v, l_w = z_v / tau, z_w / tau
            loss, parts = cplearn_loss(
                l_v, l_w, self.cfg.beta, prior=self.variant != "cplearn_noprior"
            )
            # distinct codes among the batch's assignments (cluster collapse -> 1 / n)
            parts["codes_used_frac"] = float(l_v.argmax(1).unique().numel()) / n
        self._accumulate({"train_loss": float(loss.detach()), **parts})
        return loss

    def _accumulate(self, values: dict[str, float]) -> None:
        for k, v in values.items():
            self._sums[k] = self._sums.get(k, 0.0) + v
        self._batches += 1

    def on_train_epoch_end(self) -> None:
        entry = {k: v / max(self._batches, 1) for k, v in self._sums.items()}
        self.history.append({"epoch": self.current_epoch, **entry})
        self._sums, self._batches = {}, 0

    def configure_optimizers(self):
        opt = torch.optim.Adam(
            self.parameters(), lr=self.cfg.lr, weight_decay=self.cfg.weight_decay
        )
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=self.cfg.epochs)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "epoch"}}
