"""Rotation-fusion settings. Defaults are the smoke profile; PROFILE_DEFAULTS['paper']
scales up."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from reprolab.contract import (
    DataSeed,
    ImageDataset,
    MethodConfig,
    OptimConfig,
    Split,
    prepare_field,
)

Regime = Literal["seeds", "finetune"]


class RotationFusionConfig(MethodConfig, DataSeed, OptimConfig):
    #: image dataset of the ``images`` asset (one classification task per regime)
    dataset: ImageDataset = prepare_field("mnist")
    #: rows after a stratified subsample (0 = all)
    max_rows: int = prepare_field(2400, ge=0)
    #: train / validation / test fractions, fixed at prepare
    split: Split = prepare_field([0.7, 0.15, 0.15])
    #: "seeds": two models from different seeds; "finetune": two fine-tunes of one base
    regimes: list[Regime] = prepare_field(["seeds", "finetune"], min_length=1)
    #: model pairs per seed of the profile (a unit parameter ``pair``)
    pairs_per_seed: int = prepare_field(1, ge=1, le=10)
    #: patch side (must divide the image side: 28 for MNIST / Fashion-MNIST, 8 for digits)
    patch: int = Field(default=7, ge=1)
    dim: int = Field(default=32, ge=4)
    depth: int = Field(default=2, ge=1, le=8)
    heads: int = Field(default=4, ge=1)
    mlp_ratio: float = Field(default=2.0, gt=0)
    epochs: int = Field(default=4, ge=1)
    batch_size: int = Field(default=128, ge=1)
    #: fine-tuning (regime "finetune"): epochs and learning rate from the base model
    finetune_epochs: int = Field(default=2, ge=1)
    finetune_lr: float = Field(default=1e-3, gt=0)
    #: share of fine-tune A's rows from classes 0-4 (B: the complement), disjoint subsets
    finetune_skew: float = Field(default=0.8, ge=0.5, le=1.0)
    #: fusion weight of the headline fusions (weight on model B)
    alpha: float = Field(default=0.5, ge=0.0, le=1.0)
    #: weights of the interpolation sweep (every fusion, every precision)
    alphas: list[float] = Field(default=[0.0, 0.5, 1.0], min_length=1)
    #: test rows of the logit-invariance check under a random per-head rotation
    invariance_rows: int = Field(default=256, ge=1)

    @field_validator("alphas")
    @classmethod
    def _unit_interval(cls, v: list[float]) -> list[float]:
        if any(not 0.0 <= a <= 1.0 for a in v):
            raise ValueError("every alpha must lie in [0, 1]")
        return v

    @model_validator(mode="after")
    def _heads_divide_dim(self) -> RotationFusionConfig:
        if self.dim % self.heads:
            raise ValueError(f"dim ({self.dim}) must be a multiple of heads ({self.heads})")
        return self


PROFILE_DEFAULTS = {
    "smoke": {},
    "paper": {
        "dataset": "fashion_mnist",
        "max_rows": 10000,
        "pairs_per_seed": 1,
        "dim": 64,
        "epochs": 8,
        "finetune_epochs": 3,
        "alphas": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
    },
}
