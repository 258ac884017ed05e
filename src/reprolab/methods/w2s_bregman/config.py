"""w2s_bregman settings. Defaults are the smoke profile; PROFILE_DEFAULTS['paper'] scales up.

A task is one random synthetic problem: a ground-truth softmax head W* on a fixed
representation x in R^d (f*(x) = softmax(W* x)), a weak representation
z = P x + noise with P of rank ``weak_rank`` < d, and a weak softmax head fitted on z
to labels drawn from f*. Variants are strong classes on the ground-truth
representation: ``k<k>`` mixes k linear softmax heads with learned softmax weights;
``convex`` mixes ``convex_atoms`` fixed heads (one of them W*), a convex class.
"""

from __future__ import annotations

import re

from pydantic import Field, field_validator, model_validator

from reprolab.contract import MethodConfig

_VARIANT = re.compile(r"^(k[1-9][0-9]*|convex)$")


def task_name(i: int) -> str:
    return f"task{i:03d}"


def heads_of(variant: str, cfg: W2SConfig) -> int:
    """Number of heads a variant mixes (``convex``: its fixed atoms)."""
    return cfg.convex_atoms if variant == "convex" else int(variant[1:])


class W2SConfig(MethodConfig):
    #: random synthetic tasks (one weak model each)
    n_tasks: int = Field(default=3, ge=1, le=999)
    variants: list[str] = Field(default=["k1", "k2", "k4", "k8", "convex"], min_length=2)
    #: ground-truth (= strong) representation dimension, classes, weak rank
    dim: int = Field(default=8, ge=2)
    classes: int = Field(default=4, ge=2)
    weak_rank: int = Field(default=3, ge=1)
    #: noise std added to the weak representation P x
    weak_noise: float = Field(default=2.0, ge=0)
    #: scale of W*'s entries (W*_ij ~ N(0, scale^2 / d)): how peaked f* is
    target_scale: float = Field(default=3.0, gt=0)
    #: samples: weak training set, pool the strong sample is drawn from, test set
    n_weak: int = Field(default=500, ge=10)
    n_pool: int = Field(default=2000, ge=10)
    n_strong: int = Field(default=1000, ge=10)
    n_test: int = Field(default=4000, ge=10)
    #: fixed heads of the convex class (W* is one of them)
    convex_atoms: int = Field(default=8, ge=2)
    #: full-batch AdamW on KL(f_strong || f_weak), a fixed budget
    steps: int = Field(default=200, ge=1)
    lr: float = Field(default=0.05, gt=0)
    weight_decay: float = Field(default=0.0, ge=0)
    weak_steps: int = Field(default=300, ge=1)
    history_every: int = Field(default=50, ge=1)
    data_seed: int = Field(default=0, ge=0)

    @field_validator("variants")
    @classmethod
    def _variants(cls, v: list[str]) -> list[str]:
        bad = [x for x in v if not _VARIANT.match(x)]
        if bad or len(set(v)) != len(v):
            raise ValueError(f"variants must be distinct 'k<k>' (k >= 1) or 'convex'; got {bad}")
        if "k1" not in v:
            raise ValueError("variants must include 'k1' (the single-head strong model)")
        return v

    @model_validator(mode="after")
    def _sizes(self) -> W2SConfig:
        if self.n_strong > self.n_pool:
            raise ValueError("n_strong must be <= n_pool (the strong sample is drawn from it)")
        if self.weak_rank >= self.dim:
            raise ValueError("weak_rank must be < dim (the weak representation is worse)")
        return self


PROFILE_DEFAULTS = {
    "smoke": {},
    "paper": {"n_tasks": 20, "n_pool": 3000, "n_strong": 1000, "n_test": 10000, "steps": 300},
}
