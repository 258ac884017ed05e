"""Semi-Clipped settings. Defaults are the smoke profile; PROFILE_DEFAULTS['paper'] scales up."""

from __future__ import annotations

from pydantic import Field, model_validator

from reprolab.contract import DataSeed, MethodConfig, OptimConfig, mixin_field, prepare_field


class SemiClippedConfig(MethodConfig, DataSeed, OptimConfig):
    #: simulator draws; each is one task (its own pathways, maps and batch effects)
    n_sims: int = prepare_field(3, ge=0)
    n_pathways: int = prepare_field(8, ge=2)
    perts_per_pathway: int = prepare_field(10, ge=2)
    n_batches: int = prepare_field(6, ge=2)
    #: batches held out (evaluation only); the rest train
    test_batches: int = prepare_field(2, ge=1)
    #: fraction of perturbations held out (never seen in training)
    test_perts: float = prepare_field(0.3, gt=0, lt=1)
    n_controls: int = prepare_field(48, ge=4)
    reps: int = prepare_field(2, ge=1)
    latent: int = prepare_field(8, ge=1)
    tx_dim: int = prepare_field(32, ge=2)
    img_dim: int = prepare_field(24, ge=2)
    noise: float = prepare_field(1.0, gt=0)
    #: latent dimensions the transcriptomics side measures badly (scaled by
    #: ``tx_weak_gain``) while the image side sees them: the paper's premise that images
    #: carry biology the expression profile lacks. 0: both sides alike (as before)
    tx_weak_dims: int = prepare_field(0, ge=0)
    tx_weak_gain: float = prepare_field(1.0, ge=0, le=1)
    hidden: int = Field(default=64, ge=1)
    epochs: int = mixin_field(OptimConfig, "epochs", 20)
    batch_size: int = Field(default=32, ge=2)
    temperature: float = Field(default=0.1, gt=0)
    #: PEA: random corrections per batch and epoch, smallest control fraction, TVN shrinkage
    pea_bank: int = Field(default=8, ge=1)
    pea_min_frac: float = Field(default=0.3, gt=0, le=1)
    shrink: float = Field(default=0.1, ge=0, lt=1)
    k: int = Field(default=5, ge=1)
    #: pbmc68k setting (pbmc.py): random splits of the real cells, each one task (0: off)
    pbmc_splits: int = prepare_field(2, ge=0)
    #: training batches the G1 cells are split into (the cycling cells are the held-out one)
    pbmc_train_batches: int = prepare_field(3, ge=1)
    #: cells per pseudo-perturbation (random cells of one type in one batch)
    pbmc_group_size: int = prepare_field(4, ge=1)
    #: sd of the per-batch, per-gene log capture efficiency (constructed technical effect)
    pbmc_batch_effect: float = prepare_field(0.5, ge=0)
    #: widths of the frozen PCA encoders of the two gene halves
    pbmc_tx_dim: int = prepare_field(16, ge=2)
    pbmc_img_dim: int = prepare_field(16, ge=2)

    @model_validator(mode="after")
    def _some_task(self) -> SemiClippedConfig:
        if self.n_sims + self.pbmc_splits == 0:
            raise ValueError("n_sims and pbmc_splits are both 0: no task to run")
        if self.tx_weak_dims > self.latent:
            raise ValueError(f"tx_weak_dims {self.tx_weak_dims} exceeds latent {self.latent}")
        return self


PROFILE_DEFAULTS = {
    "smoke": {},
    "paper": {"n_sims": 5, "perts_per_pathway": 16, "epochs": 80, "pbmc_splits": 5},
}
