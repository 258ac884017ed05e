"""Rotation-fusion settings. Defaults are the smoke profile; PROFILE_DEFAULTS['paper']
scales up."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from reprolab.contract import (
    IMAGE_SIDE,
    DataSeed,
    ImageDataConfig,
    ImageDataset,
    ImageDatasets,
    MethodConfig,
    OptimConfig,
    Split,
    mixin_field,
    prepare_field,
)

Regime = Literal["seeds", "finetune"]


class RotationFusionConfig(MethodConfig, DataSeed, OptimConfig):
    #: image dataset of the ``images`` asset (one classification task per regime)
    dataset: ImageDataset = prepare_field("mnist")
    #: the image-data settings of that one dataset: rows after a stratified subsample
    #: (0 = all) and train / validation / test fractions, fixed at prepare
    max_rows: int = mixin_field(ImageDatasets, "max_rows", 2400)
    split: Split = mixin_field(ImageDataConfig, "split", [0.7, 0.15, 0.15])
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
    epochs: int = mixin_field(OptimConfig, "epochs", 4)
    batch_size: int = mixin_field(OptimConfig, "batch_size", 128)
    #: fine-tuning (regime "finetune"): epochs and learning rate from the base model
    #: (reference: 30 epochs at lr 1e-5 on ~1,000 rows per fine-tune, rb-1k-whead.yaml)
    finetune_epochs: int = Field(default=2, ge=1)
    finetune_lr: float = Field(default=1e-3, gt=0)
    #: share of fine-tune A's rows from classes 0-4 (B: the complement), disjoint subsets
    #: (reference: main_portion 0.8, glue_partition_1k_niid.yaml)
    finetune_skew: float = Field(default=0.8, ge=0.5, le=1.0)
    #: regime "finetune": the image dataset the base model is trained on ("pretrained"),
    #: before the two fine-tunes on ``dataset``; its train / validation parts (same
    #: ``max_rows``, ``split`` and ``data_seed``) are added to the fine-tune tasks at
    #: prepare. Its image side must be ``dataset``'s. None: the base trains on the
    #: fine-tune task's own training rows (the setting before this key). Reference: a
    #: RoBERTa pretrained on other text, fine-tuned per GLUE task (here e.g. ``mnist``)
    finetune_base_dataset: ImageDataset | None = prepare_field(None)
    #: regime "finetune": training rows drawn at random (seeded per pair) before the
    #: skewed split into the two fine-tunes' disjoint subsets (0 = every training row, the
    #: setting before this key). Reference: 2,000 rows, two partitions of ~1,000
    #: (``glue_partition_1k_niid``)
    finetune_rows: int = Field(default=0, ge=0)
    #: regime "finetune": the fine-tunes' batch size (None = ``batch_size``, the setting
    #: before this key). Reference: 16
    finetune_batch_size: int | None = Field(default=None, ge=1)
    #: a permutation of ``b``'s residual stream (model width) onto ``a``'s before both
    #: head matchings, shared by the ``perm`` and ``rotation`` fusions (``average``
    #: stays plain averaging): "permutation" matches the embedding, LayerNorm and head
    #: weights by ``linear_sum_assignment`` (``fusion.resid_order``); "none" leaves the
    #: residual stream alone (the setting before this key). Reference: OTFusion's
    #: transport of the residual stream for ViTs (fuse_pi_vit_cifar10.yaml:56-66); none
    #: for the fine-tuned language models
    resid_match: Literal["none", "permutation"] = "none"
    #: the regimes whose ``perm`` / ``rotation`` fusions get ``resid_match`` (the setting
    #: before this key: both). Reference: the residual stream is transported for ViTs
    #: trained apart (``seeds``), not for fine-tunes of one pretrained model, which share
    #: its basis (``finetune``)
    resid_regimes: list[Regime] = ["seeds", "finetune"]
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

    @model_validator(mode="after")
    def _base_images_fit(self) -> RotationFusionConfig:
        base = self.finetune_base_dataset
        if base is not None and IMAGE_SIDE[base] != IMAGE_SIDE[self.dataset]:
            raise ValueError(
                f"finetune_base_dataset {base!r} has {IMAGE_SIDE[base]}-pixel images, "
                f"dataset {self.dataset!r} {IMAGE_SIDE[self.dataset]}: one ViT reads both"
            )
        return self

    @property
    def saves_base(self) -> bool:
        """Whether a fine-tune unit saves its base model (``base.*``) and reports the
        fine-tunes' distances to it: when any fine-tune key added with the base dataset
        is set. With all of them at their defaults, checkpoints are those of before."""
        return (
            self.finetune_base_dataset is not None
            or self.finetune_rows > 0
            or self.finetune_batch_size is not None
        )


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
