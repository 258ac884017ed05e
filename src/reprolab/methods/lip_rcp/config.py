"""lip_rcp settings. Defaults are the smoke profile; PROFILE_DEFAULTS['paper'] scales up."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from reprolab.contract import (
    ImageDataConfig,
    MethodConfig,
    OptimConfig,
    Split,
    mixin_field,
)


class LipRCPConfig(MethodConfig, ImageDataConfig, OptimConfig):
    max_rows: int = mixin_field(ImageDataConfig, "max_rows", 1000)
    #: train / calibration / test fractions, fixed at prepare
    split: Split = mixin_field(ImageDataConfig, "split", [0.5, 0.25, 0.25])
    #: width (even: MaxMin pairs units) and number of hidden layers
    hidden: int = Field(default=64, ge=2, multiple_of=2)
    depth: int = Field(default=2, ge=1, le=6)
    batch_size: int = mixin_field(OptimConfig, "batch_size", 128)
    #: Bjorck orthonormalisation steps per forward pass in training
    bjorck_iters: int = Field(default=12, ge=1)
    #: softmax temperature of the 1-Lipschitz net's scores (cross-entropy loss and CP score)
    temp: float = Field(default=0.1, gt=0)
    #: the 1-Lipschitz net's training loss: "hkr", deel-torchlip's soft hinge-KR
    #: multiclass loss on the raw logits (the official train.py's default, shkr, with its
    #: defaults alpha 0.975, min_margin 0.6, temperature 10), or "ce", cross-entropy on
    #: logits / temp. RSCP's ReLU net always trains with cross-entropy
    loss: Literal["hkr", "ce"] = "hkr"
    hkr_alpha: float = Field(default=0.975, ge=0, le=1)
    hkr_margin: float = Field(default=0.6, gt=0)
    hkr_temperature: float = Field(default=10.0, gt=0)
    #: the LAC score of the conformal sets of lip_rcp and vanilla CP: "sigmoid", one
    #: sigmoid per class (the official robust_ps.py's default, and the score of the
    #: paper's reported set sizes), or "softmax" (RSCP always smooths the softmax)
    score: Literal["sigmoid", "softmax"] = "sigmoid"
    #: miscoverage level of every conformal set
    alpha: float = Field(default=0.1, gt=0, lt=1)
    #: L2 attack budget at which the claims are tested
    eps: float = Field(default=0.25, gt=0)
    #: further budgets for the coverage-vs-eps curve
    eps_grid: list[float] = Field(default=[0.5], min_length=0)
    pgd_steps: int = Field(default=5, ge=1)
    #: RSCP: Gaussian smoothing std, Monte-Carlo samples per point, samples per PGD step
    sigma: float = Field(default=0.5, gt=0)
    n_mc: int = Field(default=16, ge=2)
    eot: int = Field(default=2, ge=1)
    #: RSCP+ (Yan et al. 2024): Monte-Carlo samples per point (their default n_s is
    #: 256), the probability beta that each of its two Monte-Carlo bounds fails (their
    #: default 0.001; the sets are calibrated at alpha - 2 beta), and the bound on the
    #: test point's estimate: "bernstein", the empirical Bernstein bound of their code's
    #: RSCP+ rows, or "hoeffding", their Theorem's b_Hoef (the calibration side is
    #: always Hoeffding: the clean test point's estimate is never observed)
    n_mc_plus: int = Field(default=64, ge=2)
    beta: float = Field(default=0.001, gt=0, lt=0.5)
    mc_bound: Literal["bernstein", "hoeffding"] = "bernstein"
    #: random input pairs for the empirical Lipschitz constant
    lip_pairs: int = Field(default=256, ge=2)

    @property
    def all_eps(self) -> list[float]:
        return sorted({float(self.eps), *map(float, self.eps_grid)})

    @model_validator(mode="after")
    def _beta_below_alpha(self) -> LipRCPConfig:
        if not 2 * self.beta < self.alpha:
            raise ValueError(
                f"beta: RSCP+ calibrates at alpha - 2 beta, which must be positive "
                f"(alpha {self.alpha:g}, beta {self.beta:g})"
            )
        return self


PROFILE_DEFAULTS = {
    "smoke": {},
    "paper": {
        "datasets": ["fashion_mnist", "mnist"],
        "max_rows": 4000,
        "hidden": 128,
        "epochs": 8,
        "eps_grid": [0.05, 0.1, 0.5],
        "pgd_steps": 10,
        "n_mc": 64,
        "n_mc_plus": 256,
        "eot": 4,
    },
}
