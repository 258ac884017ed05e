"""EnsLoss settings. Defaults are the smoke profile; PROFILE_DEFAULTS['paper'] scales up."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from reprolab.contract import MethodConfig, Split

Dataset = Literal["digits", "mnist", "fashion_mnist", "breast_cancer"]


class EnsLossConfig(MethodConfig):
    datasets: list[Dataset] = Field(default=["digits", "mnist"], min_length=1)
    #: class pairs per image dataset, drawn in a fixed order (pair_seed); at most 45
    n_pairs: int = Field(default=2, ge=1, le=45)
    pair_seed: int = Field(default=0, ge=0)
    #: rows per class pair after subsampling (0 = all)
    max_rows: int = Field(default=1200, ge=0)
    #: train / validation / test fractions, fixed at prepare
    split: Split = [0.5, 0.2, 0.3]
    #: fraction of training labels flipped at prepare time (fixed across seeds)
    label_noise: float = Field(default=0.1, ge=0.0, lt=0.5)
    data_seed: int = Field(default=0, ge=0)
    hidden: int = Field(default=128, ge=1)
    depth: int = Field(default=2, ge=1, le=8)
    epochs: int = Field(default=12, ge=1)
    batch_size: int = Field(default=64, ge=1)
    lr: float = Field(default=0.05, gt=0)
    momentum: float = Field(default=0.9, ge=0, lt=1)
    weight_decay: float = Field(default=0.0, ge=0)


PROFILE_DEFAULTS = {
    "smoke": {},
    "paper": {
        "datasets": ["fashion_mnist", "mnist", "breast_cancer"],
        "n_pairs": 8,
        "max_rows": 3000,
        "label_noise": 0.2,
        "epochs": 30,
    },
}
