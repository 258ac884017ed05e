"""cplearn settings. Defaults are the smoke profile; PROFILE_DEFAULTS['paper'] scales up."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from reprolab.contract import ImageDatasets, MethodConfig, OptimConfig, mixin_field, prepare_field


class CPLearnConfig(MethodConfig, ImageDatasets, OptimConfig):
    max_rows: int = mixin_field(ImageDatasets, "max_rows", 1200)
    #: fraction of the kept rows held out as the test split (stratified, fixed at prepare)
    test_frac: float = prepare_field(0.25, gt=0, lt=1)
    #: encoder: conv channels (width, 2 width, 4 width) and the representation dim of h
    width: int = Field(default=8, ge=1)
    feat_dim: int = Field(default=64, ge=2)
    #: f: projector (embedding) dimension, a unit parameter of every unit
    proj_dim: int = Field(default=64, ge=2)
    #: the sweep over c / f: one cplearn unit per ratio, c = ratio * f codes (columns of
    #: the +-1 matrix); the official CIFAR configuration has f = 2048, c = 16384 (8)
    code_ratios: list[Annotated[int, Field(ge=1)]] = prepare_field([2, 8], min_length=1)
    #: the ratio at which barlow_twins and cplearn_noprior run and are compared with
    #: cplearn (the claims read ratio = 8, the paper's); must be one of code_ratios
    baseline_ratio: int = Field(default=8, ge=1)
    #: the +-1 matrix is drawn from seed codebook_seed + unit seed
    codebook_seed: int = Field(default=12_345, ge=0)
    #: weight of the cross-view cross-entropy (official CIFAR config: beta = 1.0)
    beta: float = Field(default=1.0, gt=0)
    #: eps of the temperature's closed form (the card: 1e-8)
    eps: float = Field(default=1e-8, gt=0, lt=1)
    #: Barlow Twins' off-diagonal weight (Zbontar et al. 2021: 5e-3)
    bt_lambda: float = Field(default=5e-3, gt=0)
    #: n of the temperature; the official CIFAR config uses 64
    batch_size: int = Field(default=64, ge=2)
    lr: float = mixin_field(OptimConfig, "lr", 1e-3)
    weight_decay: float = Field(default=1e-4, ge=0)
    #: augmentation: max translation (fraction of the side), max rotation (degrees),
    #: zoom range 1 +- aug_scale, cutout probability, Gaussian pixel-noise std
    aug_shift: float = Field(default=0.12, ge=0, lt=0.5)
    aug_rotate: float = Field(default=12.0, ge=0, le=180)
    aug_scale: float = Field(default=0.12, ge=0, lt=1)
    aug_erase: float = Field(default=0.5, ge=0, le=1)
    aug_noise: float = Field(default=0.1, ge=0)
    #: linear probe: inverse L2 strength of sklearn's LogisticRegression (fixed, not tuned)
    probe_c: float = Field(default=1.0, gt=0)
    probe_max_iter: int = Field(default=1000, ge=10)
    #: k-means restarts (k = number of classes) for Barlow Twins' clusters and intra_var
    kmeans_init: int = Field(default=4, ge=1)

    @model_validator(mode="after")
    def _ratios(self) -> CPLearnConfig:
        if len(set(self.code_ratios)) != len(self.code_ratios):
            raise ValueError(f"code_ratios has duplicates: {self.code_ratios}")
        if self.baseline_ratio not in self.code_ratios:
            raise ValueError(
                f"baseline_ratio={self.baseline_ratio} must be one of code_ratios "
                f"{self.code_ratios} (cplearn is paired with the baselines there)"
            )
        top = max(self.code_ratios) * self.proj_dim
        if not self.eps * (top - 1) < 1:
            raise ValueError(
                f"eps * (c - 1) must be < 1 for the temperature's log to exist: code_ratios "
                f"x proj_dim gives c = {top} codes (eps={self.eps})"
            )
        return self

    def n_codes(self, ratio: int) -> int:
        """c of a unit with c / f = ``ratio``."""
        return ratio * self.proj_dim


PROFILE_DEFAULTS = {
    "smoke": {},
    "paper": {
        # Fashion-MNIST only, the smoke backbone (width 8, h = 64) and 5 epochs: the sweep
        # (5 ratios, 7 units per seed, 5 seeds) has to fit the time of 2 shared CPU
        # cores; f = 256 is the largest embedding that does (c up to 4096)
        "datasets": ["fashion_mnist"],
        "max_rows": 4000,
        "test_frac": 0.2,
        "width": 8,
        "feat_dim": 64,
        "proj_dim": 256,
        "code_ratios": [1, 2, 4, 8, 16],
        "epochs": 5,
    },
}
