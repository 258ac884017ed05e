"""The training loop every method that trains a network goes through.

A method's compute is a Lightning module (``training_step``, ``validation_step``,
``configure_optimizers`` and the usual hooks); :func:`fit` drives it with a lean loop on
Lightning Fabric, which supplies the devices, precision and data parallelism of
params.yaml's ``trainer`` section. The Lightning Trainer is not used: its own Python
costs about 0.3 ms per step (hook dispatch, loop bookkeeping, result collection), a
third of a small model's step here, against about 0.02 ms for this loop, which calls
the hooks the methods use and nothing else (``bench/bench_pipeline.py`` measures both;
``tests/unit/test_fit_loop.py`` checks that both give the same weights bit for bit).

What a module sees is the Trainer's vocabulary: ``self.current_epoch``,
``self.global_step`` (optimizer steps so far), ``self.trainer.num_training_batches``,
``self.optimizers()``, ``self.clip_gradients(...)`` and manual optimization. The hooks
called: ``configure_optimizers`` and ``on_fit_start`` once; per epoch
``on_train_epoch_start``; per batch ``training_step`` (then, under automatic
optimization: zero_grad, backward, ``configure_gradient_clipping``, optimizer step)
and ``on_train_batch_end``; with a validation loader, ``validation_step`` per batch and
``on_validation_epoch_end`` (eval mode and inference mode, each submodule's train/eval
mode restored after); ``on_train_epoch_end``; then the epoch's learning-rate schedule
step and the checkpoint, whose dict passes through ``on_save_checkpoint`` /
``on_load_checkpoint``; ``on_fit_end`` last. ``training_step`` and ``validation_step``
run under the precision's autocast, as under the Trainer. A module that overrides any
other Lightning hook is refused before training starts, naming the hook.

Training is resumable: ``last.ckpt`` is written into the unit's resume folder after
every epoch (after all of the epoch's hooks, atomically) and picked up by the next
attempt. Data order and any per-step randomness are pure functions of (seed, epoch,
step), so a resumed run ends with exactly the metrics of an uninterrupted one.
"""

from __future__ import annotations

import io
import logging
import os
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import lightning.pytorch as pl
import torch
from lightning.pytorch.utilities.model_helpers import is_overridden
from torch.utils.data import DataLoader, Dataset, Sampler

from reprolab.contract import Run, TrainedUnit, TrainerConfig, Unit
from reprolab.core.datasets import part_tensors
from reprolab.core.devices import check_device  # noqa: F401  (re-exported)

LAST = "last.ckpt"
#: the format tag of :data:`LAST`; a checkpoint without it (another loop's) is refused
CHECKPOINT_FORMAT = "reprolab-fit/1"

# Fabric's per-launch banners would drown the pipeline's own progress lines.
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


class FitState:
    """What a module being fitted sees as ``self.trainer``: the loop's counters, named
    as the Lightning Trainer names them. It is also Fabric's callback that counts
    optimizer steps, so ``global_step`` is the number of optimizer steps taken, under
    automatic and manual optimization alike."""

    def __init__(self, max_epochs: int, world_size: int = 1, global_rank: int = 0) -> None:
        self.max_epochs = max_epochs
        self.current_epoch = 0
        self.global_step = 0
        self.num_training_batches = 0
        self.world_size, self.global_rank = world_size, global_rank

    @property
    def is_global_zero(self) -> bool:
        return self.global_rank == 0

    def on_after_optimizer_step(self, strategy: Any, optimizer: Any) -> None:
        self.global_step += 1


class HistoryModule(pl.LightningModule):
    """Base of the methods' Lightning modules (every module :func:`fit` trains): a
    per-epoch ``history`` (one dict per epoch) that travels inside every checkpoint, so
    a unit resumed after a kill reports the epochs before and after it; and the loop's
    state as ``self.trainer`` / ``self.current_epoch`` / ``self.global_step``."""

    _fit_state: FitState | None = None

    def __init__(self) -> None:
        super().__init__()
        self.history: list[dict[str, float]] = []

    @property
    def trainer(self) -> FitState:  # type: ignore[override]
        if self._fit_state is None:
            raise RuntimeError(
                f"{type(self).__name__} is not being fitted (reprolab.core.training.fit)"
            )
        return self._fit_state

    @property
    def current_epoch(self) -> int:
        return self._fit_state.current_epoch if self._fit_state is not None else 0

    @property
    def global_step(self) -> int:
        return self._fit_state.global_step if self._fit_state is not None else 0

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        checkpoint["reprolab_history"] = self.history

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        self.history = list(checkpoint.get("reprolab_history", []))


#: Lightning hooks a module may override that :func:`fit` does not call; overriding one
#: is refused before any compute rather than silently ignored
UNSUPPORTED_HOOKS = (
    "on_train_start",
    "on_train_end",
    "on_train_batch_start",
    "on_before_backward",
    "on_after_backward",
    "on_before_zero_grad",
    "on_before_optimizer_step",
    "optimizer_step",
    "optimizer_zero_grad",
    "lr_scheduler_step",
    "backward",
    "on_validation_start",
    "on_validation_end",
    "on_validation_epoch_start",
    "on_validation_batch_start",
    "on_validation_batch_end",
    "on_validation_model_eval",
    "on_validation_model_train",
    "on_before_batch_transfer",
    "on_after_batch_transfer",
    "transfer_batch_to_device",
    "configure_model",
    "configure_callbacks",
    "setup",
    "teardown",
    "train_dataloader",
    "val_dataloader",
)


def make_fabric(trainer: TrainerConfig, **overrides: Any):
    """A Lightning Fabric with ``trainer``'s device settings (params.yaml's ``trainer``
    section as the method's run has it, ``Run.trainer``; see
    :class:`reprolab.contract.TrainerConfig`); ``overrides`` win."""
    from lightning.fabric import Fabric

    s = trainer
    kwargs: dict[str, Any] = {
        "accelerator": s.accelerator,
        "devices": s.devices,
        "strategy": s.strategy,
        "precision": s.precision,
    }
    kwargs.update(overrides)
    return Fabric(**kwargs)


def _check_module(module: pl.LightningModule) -> None:
    name = type(module).__name__
    if not isinstance(module, HistoryModule):
        raise TypeError(f"{name} must derive from reprolab.core.training.HistoryModule")
    hooks = [h for h in UNSUPPORTED_HOOKS if is_overridden(h, module)]
    if hooks:
        raise TypeError(
            f"{name} overrides {', '.join(hooks)}, which reprolab's fit loop does not call "
            "(the hooks it calls are listed in reprolab.core.training's docstring)"
        )


def _optimizer_and_schedule(module: pl.LightningModule):
    """``configure_optimizers``' result: one optimizer, alone or with a per-epoch
    learning-rate scheduler (``{"optimizer": opt, "lr_scheduler": {"scheduler": s,
    "interval": "epoch"}}``, or the scheduler itself)."""
    out = module.configure_optimizers()
    if isinstance(out, torch.optim.Optimizer):
        return out, None
    what = f"{type(module).__name__}.configure_optimizers"
    if not isinstance(out, Mapping) or set(out) - {"optimizer", "lr_scheduler"}:
        raise TypeError(
            f"{what} must return an optimizer or a dict with keys optimizer and "
            f"lr_scheduler (got {type(out).__name__})"
        )
    sched = out.get("lr_scheduler")
    if isinstance(sched, Mapping):
        if sched.get("interval", "epoch") != "epoch" or set(sched) - {"scheduler", "interval"}:
            raise TypeError(f"{what}: only a per-epoch scheduler is supported (got {sched})")
        sched = sched["scheduler"]
    return out["optimizer"], sched


def _set_epoch(loader: DataLoader, epoch: int) -> None:
    """Tell the loader's sampler(s) the epoch (seeded orders depend on it)."""
    for name in ("sampler", "batch_sampler"):
        sampler = getattr(loader, name, None)
        if callable(getattr(sampler, "set_epoch", None)):
            sampler.set_epoch(epoch)


def _checkpoint(module, optimizer, scheduler, state: FitState, epoch: int) -> dict:
    ckpt = {
        "format": CHECKPOINT_FORMAT,
        "epoch": epoch,  # the last epoch done (0-based)
        "global_step": state.global_step,
        "state_dict": module.state_dict(),
        "optimizer": optimizer.state_dict(),
        "lr_scheduler": scheduler.state_dict() if scheduler is not None else None,
    }
    module.on_save_checkpoint(ckpt)
    return ckpt


def read_checkpoint(path: Path) -> dict:
    """A :data:`LAST` file written by :func:`fit`; a file of another format is refused."""
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(ckpt, dict) or ckpt.get("format") != CHECKPOINT_FORMAT:
        found = ckpt.get("format") if isinstance(ckpt, dict) else type(ckpt).__name__
        raise ValueError(
            f"{path} is not a {CHECKPOINT_FORMAT} checkpoint (found {found!r}); "
            f"delete {path.parent} to train from scratch"
        )
    return ckpt


def _restore(module, optimizer, scheduler, state: FitState, ckpt: dict) -> None:
    module.on_load_checkpoint(ckpt)
    module.load_state_dict(ckpt["state_dict"], strict=module.strict_loading)
    optimizer.load_state_dict(ckpt["optimizer"])
    if scheduler is not None:
        scheduler.load_state_dict(ckpt["lr_scheduler"])
    state.current_epoch = int(ckpt["epoch"]) + 1
    state.global_step = int(ckpt["global_step"])


def _run(fabric, module, train, val, max_epochs: int, resume_dir: Path | None, parent: int):
    """The loop, in each process (one, or one per device under data parallelism).
    In a process spawned by ``parent`` it returns the final checkpoint, serialized (a
    tensor sent as such would point into the exited process's memory), for the parent
    to take the trained weights over."""
    optimizer, scheduler = _optimizer_and_schedule(module)
    state = module._fit_state = FitState(max_epochs, fabric.world_size, fabric.global_rank)
    # Fabric takes callbacks only when built, before the process (and its rank) exists:
    # the list is private API (lightning is pinned; test_fit_loop counts the steps)
    fabric._callbacks.append(state)
    model, opt = fabric.setup(module, optimizer)
    if fabric.world_size > 1 or fabric.device.type != "cpu":
        train = fabric.setup_dataloaders(train)
        val = fabric.setup_dataloaders(val) if val is not None else None
    last = resume_dir / LAST if resume_dir is not None else None
    if last is not None and last.is_file():
        _restore(module, optimizer, scheduler, state, read_checkpoint(last))
    try:
        state.num_training_batches = len(train)
    except TypeError:  # an iterable dataset of unknown length (as under the Trainer)
        state.num_training_batches = float("inf")
    auto = module.automatic_optimization
    # Lightning's default hook clips nothing (no Trainer-wide clip value here)
    clip = is_overridden("configure_gradient_clipping", module)
    module.on_fit_start()
    for epoch in range(state.current_epoch, max_epochs):
        state.current_epoch = epoch
        _set_epoch(train, epoch)
        module.on_train_epoch_start()
        for i, batch in enumerate(train):
            with fabric.autocast():  # the precision's autocast (a no-op at 32-true)
                out = model.training_step(batch, i)
            loss = out["loss"] if isinstance(out, Mapping) else out
            if auto and loss is not None:
                opt.zero_grad()
                fabric.backward(loss)
                if clip:
                    module.configure_gradient_clipping(optimizer)
                opt.step()
            module.on_train_batch_end(out, batch, i)
        if val is not None:
            _set_epoch(val, epoch)
            modes = [(m, m.training) for m in module.modules()]
            module.eval()
            with torch.inference_mode():
                for j, batch in enumerate(val):
                    with fabric.autocast():
                        model.validation_step(batch, j)
                module.on_validation_epoch_end()
            for m, training in modes:
                m.training = training
        module.on_train_epoch_end()
        if scheduler is not None:
            scheduler.step()
        if last is not None:
            ckpt = _checkpoint(module, optimizer, scheduler, state, epoch)
            if fabric.is_global_zero:
                tmp = last.with_name(f".{LAST}.tmp")
                torch.save(ckpt, tmp)
                os.replace(tmp, last)  # a kill mid-write leaves the previous epoch's file
            fabric.barrier()
    state.current_epoch = max_epochs
    module.on_fit_end()
    module._fabric, module._fabric_optimizers = None, []
    if os.getpid() == parent:
        return None
    buffer = io.BytesIO()
    torch.save(_checkpoint(module, optimizer, scheduler, state, max_epochs - 1), buffer)
    return buffer.getvalue()


def fit(
    module: pl.LightningModule,
    train: DataLoader,
    val: DataLoader | None = None,
    max_epochs: int = 1,
    resume_dir: Path | None = None,
    trainer: TrainerConfig | None = None,
) -> FitState:
    """Train ``module`` for ``max_epochs`` on ``train``, watching ``val`` after every
    epoch, on ``trainer``'s devices (default: ``TrainerConfig()``, a GPU where there is
    one; a method passes its ``Run.trainer``). With ``resume_dir``,
    ``last.ckpt`` there is written every epoch and an earlier attempt's is resumed.
    Returns the loop state (``world_size``, final ``global_step``)."""
    _check_module(module)
    fabric = make_fabric(trainer or TrainerConfig())
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*does not have many workers.*")
        spawned = fabric.launch(_run, module, train, val, max_epochs, resume_dir, os.getpid())
    if spawned is not None:  # trained in spawned processes: take rank 0's result over
        ckpt = torch.load(io.BytesIO(spawned), map_location="cpu", weights_only=True)
        module._fit_state = state = FitState(max_epochs, fabric.world_size, 0)
        module.on_load_checkpoint(ckpt)
        module.load_state_dict(ckpt["state_dict"], strict=module.strict_loading)
        state.current_epoch, state.global_step = max_epochs, int(ckpt["global_step"])
    return module._fit_state


def fit_resumable(
    module: pl.LightningModule,
    train: DataLoader,
    val: DataLoader | None,
    max_epochs: int,
    resume_dir: Path,
    *,
    trainer: TrainerConfig,
) -> None:
    """:func:`fit` on ``trainer``'s devices (the method's ``Run.trainer``), continuing
    from ``resume_dir/last.ckpt`` when an earlier attempt left one."""
    resume_dir.mkdir(parents=True, exist_ok=True)
    fit(module, train, val, max_epochs, resume_dir, trainer)


class ClassifierModule(HistoryModule):
    """A supervised classifier around ``net`` (logits): cross-entropy on
    ``net(augment(x)) / temp``, Adam with a cosine schedule over ``epochs``, and one
    history entry per epoch: mean training loss and accuracy on the validation loader.

    A method adds only what is its own: the network it passes in, ``augment`` for a
    per-step input transform (which must be a function of (seed, step) to stay
    resumable), and ``loss`` for another training loss. ``state_dict`` keys are those of
    ``net`` under ``net.`` (and any buffer the method's module adds).
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

    def loss(self, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The training loss of a batch's logits (cross-entropy on logits / temp)."""
        return torch.nn.functional.cross_entropy(logits / self.temp, y)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = self.loss(self(self.augment(x)), y)
        self._loss_sum += float(loss.detach())
        self._batches += 1
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self._correct += int((self(x).argmax(-1) == y).sum())
        self._n += len(y)

    def on_validation_epoch_end(self) -> None:
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
    *,
    trainer: TrainerConfig,
) -> None:
    """:func:`fit_resumable` on ``(x, y)`` tensors: shuffled training batches of
    ``batch_size`` (order fixed by ``seed`` and epoch) and the validation part, watched
    every epoch, in batches of 4096 in its own order."""
    train_batches = batches(*train, batch_size, seed, shuffle=True)
    val_batches = batches(*val, 4096, seed, shuffle=False)
    fit_resumable(module, train_batches, val_batches, epochs, resume_dir, trainer=trainer)


def train_classifier(
    run: Run,
    unit: Unit,
    data: Mapping,
    resume_dir: Path,
    build: Callable[[], pl.LightningModule],
    *,
    batch_size: int,
    epochs: int,
    val_part: str = "val",
    export: Callable[[pl.LightningModule], torch.nn.Module] | None = None,
) -> TrainedUnit:
    """The ``train_unit`` of a supervised method: the task's ``train`` part and its
    ``val_part`` (watched every epoch, never used to select) as tensors
    (:func:`reprolab.core.datasets.part_tensors`); ``torch.manual_seed(unit.seed)``, then
    ``build()`` makes the module, so its initial weights are those of the seed (the same
    for every variant of a seed); :func:`fit_supervised` with ``batch_size``, ``epochs``
    and ``unit.seed`` on ``run.trainer``'s devices, resuming from ``resume_dir``.

    Returns the state of the trained network, ``module.net`` unless ``export`` gives it
    from the module (e.g. a parametrised network made plain), and the module's history.
    """
    train = part_tensors(data, "train")
    val = part_tensors(data, val_part)
    torch.manual_seed(unit.seed)
    module = build()
    fit_supervised(
        module, train, val, batch_size, epochs, unit.seed, resume_dir, trainer=run.trainer
    )
    net = module.net if export is None else export(module)
    return TrainedUnit(state=net.state_dict(), history=module.history)


M = TypeVar("M", bound=torch.nn.Module)


def restore_module(net: M, state: Mapping[str, Any], prefix: str = "") -> M:
    """A ``restore`` hook's usual body: a trained unit's saved ``state`` loaded into
    ``net`` (freshly built with the unit's architecture), returned in eval mode. With a
    ``prefix`` (``"a."``), only the entries under it, without it: one network of several
    saved in one state dict. A missing or unexpected key is an error."""
    if prefix:
        state = {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}
    net.load_state_dict(state)
    return net.eval()
