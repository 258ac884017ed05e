"""bit_dgdm settings. Defaults are the smoke profile; PROFILE_DEFAULTS['paper'] scales up."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from reprolab.contract import (
    DataSeed,
    MethodConfig,
    OptimConfig,
    distinct_values,
    mixin_field,
    prepare_field,
)

Dataset = Literal["qm9", "community"]


class BitDGDMConfig(MethodConfig, DataSeed, OptimConfig):
    # prepare reads the prepare_field keys: the datasets and their splits
    datasets: list[Dataset] = prepare_field(["qm9", "community"], min_length=1)
    #: QM9 graphs per split: a seeded permutation of the 130,831 molecules (fixed at prepare)
    qm9_train: int = prepare_field(1500, ge=1)
    qm9_val: int = prepare_field(64, ge=1)
    qm9_test: int = prepare_field(256, ge=1)
    #: two-community SBM graphs per split, node-count range, edge probabilities
    community_train: int = prepare_field(200, ge=1)
    community_val: int = prepare_field(32, ge=1)
    community_test: int = prepare_field(64, ge=2)
    community_nodes: list[int] = prepare_field([12, 20], min_length=2, max_length=2)
    p_in: float = prepare_field(0.7, gt=0, le=1)
    p_out: float = prepare_field(0.05, ge=0, le=1)
    #: diffusion steps T (cosine schedule)
    steps: int = Field(default=30, ge=2)
    #: widths of node, edge and global (time) features; transformer layers and heads
    hidden_x: int = Field(default=32, ge=2)
    hidden_e: int = Field(default=16, ge=2)
    hidden_y: int = Field(default=16, ge=2)
    layers: int = Field(default=2, ge=1)
    heads: int = Field(default=4, ge=1)
    epochs: int = mixin_field(OptimConfig, "epochs", 4)
    lr: float = mixin_field(OptimConfig, "lr", 2e-3)
    #: weight of the edge cross-entropy (DiGress: 5)
    lambda_e: float = Field(default=5.0, ge=0)
    #: graphs sampled per evaluation (the same seed at every precision), per task; batch
    qm9_samples: int = Field(default=64, ge=2)
    community_samples: int = Field(default=32, ge=2)
    sample_batch: int = Field(default=256, ge=1)
    #: graphs of the full-precision model's own reverse chain whose inputs at every step
    #: calibrate Bit-DGDM's activation thresholds (data-free)
    calib_graphs: int = Field(default=4, ge=1)

    @field_validator("community_nodes")
    @classmethod
    def _node_range(cls, v: list[int]) -> list[int]:
        if not 2 <= v[0] <= v[1]:
            raise ValueError("community_nodes must be [min, max] with 2 <= min <= max")
        return v

    _distinct = distinct_values("datasets", message="datasets must be distinct")

    @model_validator(mode="after")
    def _heads_divide_width(self) -> BitDGDMConfig:
        if self.hidden_x % self.heads:
            raise ValueError(
                f"hidden_x ({self.hidden_x}) must be a multiple of heads ({self.heads})"
            )
        return self


PROFILE_DEFAULTS = {
    "smoke": {},
    "paper": {
        # 16,000 molecules, not 4,000: QM9 validity of the fp32 model 0.94 instead of 0.72
        # (bench/bench_bit_dgdm_fp32.py, seed 0), so quantization damage is measured on a
        # model near DiGress's quality rather than on a weak one
        "qm9_train": 16000,
        "qm9_val": 256,
        "qm9_test": 256,
        "community_train": 2000,
        "community_val": 64,
        "community_test": 128,
        "steps": 50,
        "hidden_x": 48,
        "layers": 3,
        "epochs": 15,
        "qm9_samples": 256,
        "community_samples": 128,
        "calib_graphs": 8,
    },
}
