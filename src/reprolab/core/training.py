"""Lightning plumbing shared by every method that trains a network.

Lean Trainer settings (no logger, no progress bar, no model summary, no sanity check):
the pipeline tracks runs itself, and Lightning's per-step overhead must stay small next
to the compute of small models. Training is resumable: a ``last.ckpt`` is written every
epoch into the unit's resume folder and picked up by the next attempt. Data order and
any per-step randomness are pure functions of (seed, epoch, step), so a resumed run
ends with exactly the metrics of an uninterrupted one.
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from reprolab.contract import stage_trainer
from reprolab.core.devices import check_device  # noqa: F401  (re-exported)

LAST = "last.ckpt"

# One Trainer per unit: Lightning's per-fit banners ("GPU available", tips) would
# drown the pipeline's own progress lines.
for _name in ("lightning.pytorch", "lightning.fabric", "lightning"):
    logging.getLogger(_name).setLevel(logging.WARNING)


class TensorBatches(Dataset):
    """Whole batches straight from tensors: index with a tensor of row indices."""

    def __init__(self, *tensors: torch.Tensor) -> None:
        self.tensors = tensors

    def __len__(self) -> int:
        return len(self.tensors[0])

    def __getitem__(self, idx: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(t[idx] for t in self.tensors)


class EpochBatchSampler(Sampler):
    """Yields index batches; the permutation is a function of (seed, epoch) only."""

    def __init__(self, n: int, batch_size: int, seed: int, shuffle: bool = True) -> None:
        self.n, self.batch_size, self.seed, self.shuffle = n, batch_size, seed, shuffle
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:  # Lightning calls this every epoch
        self.epoch = epoch

    def __iter__(self):
        if self.shuffle:
            gen = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
            order = torch.randperm(self.n, generator=gen)
        else:
            order = torch.arange(self.n)
        yield from order.split(self.batch_size)

    def __len__(self) -> int:
        return -(-self.n // self.batch_size)


def batches(
    x: torch.Tensor, y: torch.Tensor, batch_size: int, seed: int, shuffle: bool
) -> DataLoader:
    sampler = EpochBatchSampler(len(x), batch_size, seed, shuffle)
    return DataLoader(TensorBatches(x, y), sampler=sampler, batch_size=None)


class HistoryModule(pl.LightningModule):
    """Base of the methods' Lightning modules: a per-epoch ``history`` (one dict per
    epoch) that travels inside every checkpoint, so a unit resumed after a kill reports
    the epochs before and after it."""

    def __init__(self) -> None:
        super().__init__()
        self.history: list[dict[str, float]] = []

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        checkpoint["reprolab_history"] = self.history

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        self.history = list(checkpoint.get("reprolab_history", []))


class LastCheckpoint(pl.Callback):
    """Write ``<resume_dir>/last.ckpt`` at the end of every training epoch, atomically.

    Lightning's own ``ModelCheckpoint(save_last=True, save_top_k=0)`` writes last.ckpt
    only when training ends, so a killed unit had nothing to resume from. Here the file
    is written to a temporary sibling and moved into place, so a kill mid-write leaves
    the previous epoch's checkpoint intact.
    """

    def __init__(self, resume_dir: Path) -> None:
        self.path = resume_dir / LAST

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.sanity_checking:
            return
        tmp = self.path.with_name(f".{LAST}.tmp")
        trainer.save_checkpoint(tmp)
        os.replace(tmp, self.path)


def make_trainer(max_epochs: int, resume_dir: Path | None, **overrides: Any) -> pl.Trainer:
    """A Lightning Trainer with the running stage's device settings (params.yaml's
    ``trainer``, see :class:`reprolab.contract.TrainerConfig`) and the project's
    checkpointing; ``overrides`` win."""
    callbacks: list[pl.Callback] = []
    if resume_dir is not None:
        callbacks.append(LastCheckpoint(resume_dir))
    settings = stage_trainer()
    kwargs: dict[str, Any] = {
        "max_epochs": max_epochs,
        "accelerator": settings.accelerator,
        "devices": settings.devices,
        "strategy": settings.strategy,
        "precision": settings.precision,
        "logger": False,
        # No Lightning ModelCheckpoint: LastCheckpoint above is the only checkpointing.
        "enable_checkpointing": False,
        "enable_progress_bar": False,
        "enable_model_summary": False,
        "num_sanity_val_steps": 0,
        "callbacks": callbacks,
        "deterministic": False,
    }
    kwargs.update(overrides)
    return pl.Trainer(**kwargs)


def fit_resumable(
    module: pl.LightningModule,
    train: DataLoader,
    val: DataLoader | None,
    max_epochs: int,
    resume_dir: Path,
) -> None:
    """Fit, continuing from ``resume_dir/last.ckpt`` when an earlier attempt left one."""
    resume_dir.mkdir(parents=True, exist_ok=True)
    last = resume_dir / LAST
    trainer = make_trainer(max_epochs, resume_dir)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*does not have many workers.*")
        warnings.filterwarnings("ignore", message=".*LeafSpec.*")
        trainer.fit(module, train, val, ckpt_path=str(last) if last.is_file() else None)


class ClassifierModule(HistoryModule):
    """A supervised classifier around ``net`` (logits): cross-entropy on
    ``net(augment(x)) / temp``, Adam with a cosine schedule over ``epochs``, and one
    history entry per epoch: mean training loss and accuracy on the validation loader.

    A method adds only what is its own: the network it passes in, and ``augment`` for a
    per-step input transform (which must be a function of (seed, step) to stay
    resumable). ``state_dict`` keys are those of ``net`` under ``net.``.
    """

    def __init__(self, net: torch.nn.Module, lr: float, epochs: int, temp: float = 1.0) -> None:
        super().__init__()
        self.net = net
        self.lr, self.epochs, self.temp = lr, epochs, temp
        self._loss_sum, self._batches, self._correct, self._n = 0.0, 0, 0, 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def augment(self, x: torch.Tensor) -> torch.Tensor:
        """The training inputs of a batch (identity here)."""
        return x

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self(self.augment(x)) / self.temp, y)
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


def fit_supervised(
    module: pl.LightningModule,
    train: tuple[torch.Tensor, torch.Tensor],
    val: tuple[torch.Tensor, torch.Tensor],
    batch_size: int,
    epochs: int,
    seed: int,
    resume_dir: Path,
) -> None:
    """:func:`fit_resumable` on ``(x, y)`` tensors: shuffled training batches of
    ``batch_size`` (order fixed by ``seed`` and epoch) and the validation part, watched
    every epoch, in batches of 4096 in its own order."""
    train_batches = batches(*train, batch_size, seed, shuffle=True)
    val_batches = batches(*val, 4096, seed, shuffle=False)
    fit_resumable(module, train_batches, val_batches, epochs, resume_dir)
