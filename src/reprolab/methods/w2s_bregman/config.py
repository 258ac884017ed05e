"""w2s_bregman settings. Defaults are the smoke profile; PROFILE_DEFAULTS['paper'] scales up.

A task is one random synthetic problem: a ground-truth softmax head W* on a fixed
representation x in R^d (f*(x) = softmax(W* x)), a weak representation
z = P x + noise with P of rank ``weak_rank`` < d, and a weak softmax head fitted on z
to labels drawn from f*. Variants are strong classes on the ground-truth
representation: ``k1`` ... ``k8`` mix k linear softmax heads with learned softmax weights
(k is data: :data:`HEADS`, never read off the variant's name); ``convex`` mixes
``convex_atoms`` fixed heads (one of them W*), a convex class.

k stays a variant, not a unit parameter: each k is its own architecture (its own
parameter count, quantized and timed per trained variant), and the claims compare the
classes pairwise on the same (task, seed), which core PairedDifference does on variants.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from reprolab.contract import DataSeed, MethodConfig, prepare_field

#: heads mixed by each k-variant (the strong class's k)
HEADS = {"k1": 1, "k2": 2, "k4": 4, "k8": 8}


def task_name(i: int) -> str:
    return f"task{i:03d}"


def heads_of(variant: str, cfg: W2SConfig) -> int:
    """Number of heads a variant mixes (``convex``: its fixed atoms)."""
    return cfg.convex_atoms if variant == "convex" else HEADS[variant]


class W2SConfig(MethodConfig, DataSeed):
    # prepare reads the prepare_field keys (the random tasks and their weak models); n_strong,
    # and with n_pool, weak_rank and dim, also through the size checks of a validated config
    #: random synthetic tasks (one weak model each)
    n_tasks: int = prepare_field(3, ge=1, le=999)
    #: ground-truth (= strong) representation dimension, classes, weak rank
    dim: int = prepare_field(8, ge=2)
    classes: int = prepare_field(4, ge=2)
    weak_rank: int = prepare_field(3, ge=1)
    #: noise std added to the weak representation P x
    weak_noise: float = prepare_field(2.0, ge=0)
    #: scale of W*'s entries (W*_ij ~ N(0, scale^2 / d)): how peaked f* is
    target_scale: float = prepare_field(3.0, gt=0)
    #: samples: weak training set, pool the strong sample is drawn from, test set
    n_weak: int = prepare_field(500, ge=10)
    n_pool: int = prepare_field(2000, ge=10)
    n_strong: int = prepare_field(1000, ge=10)
    n_test: int = prepare_field(4000, ge=10)
    #: fixed heads of the convex class (W* is one of them)
    convex_atoms: int = prepare_field(8, ge=2)
    #: full-batch AdamW on KL(f_strong || f_weak), a fixed budget
    steps: int = Field(default=200, ge=1)
    lr: float = Field(default=0.05, gt=0)
    weight_decay: float = Field(default=0.0, ge=0)
    weak_steps: int = prepare_field(300, ge=1)
    history_every: int = Field(default=50, ge=1)

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
