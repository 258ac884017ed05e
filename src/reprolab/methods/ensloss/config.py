"""EnsLoss settings. Defaults are the smoke profile; PROFILE_DEFAULTS['paper'] scales up."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from reprolab.contract import MethodConfig

Dataset = Literal["digits", "mnist", "fashion_mnist", "breast_cancer"]
Loss = Literal["ensloss", "bce", "hinge", "exp"]


class EnsLossConfig(MethodConfig):
    datasets: list[Dataset] = Field(default=["digits", "mnist"], min_length=1)
    #: class pairs per image dataset, drawn in a fixed order (pair_seed); at most 45
    n_pairs: int = Field(default=2, ge=1, le=45)
    pair_seed: int = Field(default=0, ge=0)
    #: rows per class pair after subsampling (0 = all)
    max_rows: int = Field(default=1200, ge=0)
    split: list[float] = Field(default=[0.5, 0.2, 0.3], min_length=3, max_length=3)
    #: fraction of training labels flipped at prepare time (fixed across seeds)
    label_noise: float = Field(default=0.1, ge=0.0, lt=0.5)
    data_seed: int = Field(default=0, ge=0)
    variants: list[Loss] = Field(default=["ensloss", "bce", "hinge", "exp"], min_length=2)
    hidden: int = Field(default=128, ge=1)
    depth: int = Field(default=2, ge=1, le=8)
    epochs: int = Field(default=12, ge=1)
    batch_size: int = Field(default=64, ge=1)
    lr: float = Field(default=0.05, gt=0)
    momentum: float = Field(default=0.9, ge=0, lt=1)
    weight_decay: float = Field(default=0.0, ge=0)

    @field_validator("split")
    @classmethod
    def _split_sums_to_one(cls, v: list[float]) -> list[float]:
        if any(x <= 0 for x in v) or abs(sum(v) - 1.0) > 1e-6:
            raise ValueError(
                "split must be three positive fractions (train, val, test) summing to 1"
            )
        return v

    @field_validator("variants")
    @classmethod
    def _method_present(cls, v: list[str]) -> list[str]:
        if "ensloss" not in v or len(set(v)) != len(v):
            raise ValueError("variants must be distinct and include 'ensloss'")
        return v


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
