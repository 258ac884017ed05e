"""core.training.fit, the loop every Lightning module trains under, against two
independent references: the Lightning Trainer on the same module code (same hooks, same
numbers, bit for bit) and a hand-written PyTorch loop; plus its refusals and its
checkpoints."""

from __future__ import annotations

import warnings

import lightning.pytorch as pl
import pytest
import torch

from reprolab.contract import TrainerConfig
from reprolab.core import training
from reprolab.core.training import HistoryModule, batches, fit, fit_resumable

X = torch.randn(96, 5, generator=torch.Generator().manual_seed(0))
Y = (X[:, 0] - X[:, 1] > 0).long()
EPOCHS = 4


class Compute:
    """A small classifier whose loss has per-step noise seeded by global_step, clipped
    gradients, a cosine schedule and a per-epoch history written at validation."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(1)
        self.net = torch.nn.Sequential(
            torch.nn.Linear(5, 16), torch.nn.Tanh(), torch.nn.Dropout(0.0), torch.nn.Linear(16, 2)
        )
        self.history, self._loss, self._correct, self._n = [], 0.0, 0, 0

    def training_step(self, batch, batch_idx):
        x, y = batch
        noise = torch.randn(x.shape, generator=torch.Generator().manual_seed(self.global_step))
        loss = torch.nn.functional.cross_entropy(self.net(x + 0.1 * noise), y)
        self._loss += float(loss.detach())
        return loss

    def configure_gradient_clipping(self, optimizer, *args, **kwargs) -> None:
        self.clip_gradients(optimizer, 0.5, "norm")

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self._correct += int((self.net(x).argmax(-1) == y).sum())
        self._n += len(y)

    def on_validation_epoch_end(self) -> None:
        self.history.append(
            {
                "epoch": self.current_epoch,
                "step": self.global_step,
                "loss": self._loss,
                "acc": self._correct / self._n,
                "training": self.net.training,
            }
        )
        self._loss, self._correct, self._n = 0.0, 0, 0

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=0.3, momentum=0.9)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=EPOCHS)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "epoch"}}


class Ours(Compute, HistoryModule):
    pass


class UnderTrainer(Compute, pl.LightningModule):
    pass


def loaders():
    return batches(X, Y, 16, 3, shuffle=True), batches(X, Y, 40, 3, shuffle=False)


def test_fit_matches_the_lightning_trainer_bit_for_bit():
    ours = Ours()
    state = fit(ours, *loaders(), EPOCHS)
    ref = UnderTrainer()
    trainer = pl.Trainer(
        max_epochs=EPOCHS,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Lightning's own deprecation notices
        trainer.fit(ref, *loaders())
    for a, b in zip(ours.parameters(), ref.parameters(), strict=True):
        assert torch.equal(a, b)
    assert ours.history == ref.history
    assert [h["training"] for h in ours.history] == [False] * EPOCHS  # eval during validation
    assert ours.net.training  # and back to train mode after it
    assert state.global_step == trainer.global_step == EPOCHS * 6
    assert state.current_epoch == trainer.current_epoch == EPOCHS


def test_fit_matches_a_hand_written_loop():
    ours = Ours()
    train, _ = loaders()
    fit(ours, train, None, EPOCHS)
    ref = Ours()  # the same initial weights (seeded), trained by hand
    opt = torch.optim.SGD(ref.parameters(), lr=0.3, momentum=0.9)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=EPOCHS)
    step = 0
    for epoch in range(EPOCHS):
        train.sampler.set_epoch(epoch)
        for x, y in train:
            noise = torch.randn(x.shape, generator=torch.Generator().manual_seed(step))
            loss = torch.nn.functional.cross_entropy(ref.net(x + 0.1 * noise), y)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(ref.parameters(), 0.5)
            opt.step()
            step += 1
        sched.step()
    for a, b in zip(ours.parameters(), ref.parameters(), strict=True):
        assert torch.equal(a, b)


def test_a_run_resumed_from_its_checkpoint_ends_as_a_straight_run(tmp_path):
    straight = Ours()
    fit(straight, *loaders(), EPOCHS)
    first = Ours()
    fit_resumable(first, *loaders(), 2, tmp_path, trainer=TrainerConfig())  # stops after 2
    ckpt = training.read_checkpoint(tmp_path / training.LAST)
    assert (ckpt["epoch"], ckpt["global_step"]) == (1, 12)
    resumed = Ours()  # a new process: fresh module, picks the checkpoint up
    fit_resumable(resumed, *loaders(), EPOCHS, tmp_path, trainer=TrainerConfig())
    for a, b in zip(straight.parameters(), resumed.parameters(), strict=True):
        assert torch.equal(a, b)
    assert resumed.history == straight.history
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_foreign_checkpoint_is_refused_naming_the_folder(tmp_path):
    torch.save({"epoch": 3, "state_dict": {}}, tmp_path / training.LAST)  # not ours
    with pytest.raises(ValueError, match=f"not a {training.CHECKPOINT_FORMAT} checkpoint"):
        fit_resumable(Ours(), *loaders(), EPOCHS, tmp_path, trainer=TrainerConfig())


def test_manual_optimization_counts_optimizer_steps():
    class Manual(HistoryModule):
        def __init__(self) -> None:
            super().__init__()
            self.automatic_optimization = False
            self.w = torch.nn.Parameter(torch.zeros(5))
            self.seen: list[int] = []

        def training_step(self, batch, batch_idx):
            self.seen.append(self.global_step)
            if batch_idx % 2 == 0:  # an optimizer step every other batch
                opt = self.optimizers()
                opt.zero_grad()
                self.manual_backward((batch[0] @ self.w).square().mean())
                opt.step()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    m = Manual()
    state = fit(m, batches(X, Y, 16, 0, shuffle=False), None, 2)
    assert m.seen == [0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6]
    assert state.global_step == 6


def test_unsupported_hooks_and_modules_are_refused_before_any_compute():
    class PerBatchStart(Ours):
        def on_train_batch_start(self, batch, batch_idx):
            raise AssertionError("must not run")

    with pytest.raises(TypeError, match="overrides on_train_batch_start"):
        fit(PerBatchStart(), *loaders(), 1)

    with pytest.raises(TypeError, match="must derive from reprolab.core.training.HistoryModule"):
        fit(UnderTrainer(), *loaders(), 1)

    class StepScheduler(Ours):
        def configure_optimizers(self):
            out = super().configure_optimizers()
            out["lr_scheduler"]["interval"] = "step"
            return out

    with pytest.raises(TypeError, match="only a per-epoch scheduler"):
        fit(StepScheduler(), *loaders(), 1)


def test_trainer_is_only_there_while_fitting():
    m = Ours()
    with pytest.raises(RuntimeError, match="is not being fitted"):
        _ = m.trainer
    assert (m.current_epoch, m.global_step) == (0, 0)


def test_bf16_mixed_runs_the_forward_in_bf16_and_keeps_fp32_weights():
    from reprolab.contract import TrainerConfig

    class Probe(Ours):
        dtypes: list = []

        def training_step(self, batch, batch_idx):
            self.dtypes.append(self.net(batch[0]).dtype)
            return super().training_step(batch, batch_idx)

    full, mixed = Ours(), Probe()
    fit(full, *loaders(), EPOCHS)
    fit(mixed, *loaders(), EPOCHS, trainer=TrainerConfig(accelerator="cpu", precision="bf16-mixed"))
    assert set(Probe.dtypes) == {torch.bfloat16}  # autocast around training_step
    assert all(p.dtype == torch.float32 for p in mixed.parameters())
    # bf16 keeps 8 mantissa bits: the two runs drift apart, but not far in 24 steps
    diff = max(
        float((a - b).detach().abs().max())
        for a, b in zip(full.parameters(), mixed.parameters(), strict=True)
    )
    assert 0 < diff < 0.1
