"""BDIA settings. Defaults are the smoke profile; PROFILE_DEFAULTS['paper'] scales up."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from reprolab.contract import (
    ImageDataConfig,
    ImageDataset,
    MethodConfig,
    OptimConfig,
    mixin_field,
)


class BDIAConfig(MethodConfig, ImageDataConfig, OptimConfig):
    datasets: list[ImageDataset] = mixin_field(ImageDataConfig, "datasets", ["digits"])
    #: the ViT: patches per image side (8x8 digits -> 2x2 patches, 28x28 -> 7x7), width,
    #: number of blocks, heads, MLP width ratio
    patches_per_side: int = Field(default=4, ge=1, le=14)
    dim: int = Field(default=32, ge=4)
    depth: int = Field(default=4, ge=2, le=24)
    heads: int = Field(default=2, ge=1)
    mlp_ratio: float = Field(default=2.0, gt=0)
    epochs: int = mixin_field(OptimConfig, "epochs", 10)
    batch_size: int = Field(default=64, ge=2)
    #: the optimiser of every variant (cosine schedule over ``epochs`` either way): ``adam``
    #: (torch's) or ``set_adam`` (the paper's SET-Adam, ``set_adam.SETAdam``)
    optimizer: Literal["adam", "set_adam"] = "adam"
    #: fixed-point fraction bits of the BDIA activations (the paper's l = 9)
    bits: int = Field(default=9, ge=1, le=20)
    #: reconstruction check per unit: random input batches (of ``recon_batch`` samples)
    #: of several kinds (test images, Gaussian, rounding ties, large, signs all equal)
    recon_batches: int = Field(default=6, ge=1)
    recon_batch: int = Field(default=16, ge=1)

    @model_validator(mode="after")
    def _heads_divide_dim(self) -> BDIAConfig:
        if self.dim % self.heads:
            raise ValueError(f"heads: {self.heads} does not divide dim {self.dim}")
        return self


PROFILE_DEFAULTS = {
    "smoke": {},
    "paper": {
        "datasets": ["mnist", "fashion_mnist"],
        "max_rows": 2500,
        "depth": 6,
        "recon_batches": 12,
        "recon_batch": 32,
    },
}
