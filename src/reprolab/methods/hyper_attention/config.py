"""hyper_attention settings. Defaults are the smoke profile; PROFILE_DEFAULTS['paper']
scales up.

A task is one task family (``tasks.FAMILIES``); each seed draws its own interaction
functions and samples, so intervals over seeds cover new random tasks, not only new
initialisations. Models train at population size ``l_train`` and are tested there and
at every ``l_test`` (the paper: trained at L = 20, tested at L in {2, 5, 10, 30, 40}).
The unit parameters are ``family``, ``l_train`` and ``scale`` (a baseline's parameter
budget as a multiple of the method's count on that task).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from reprolab.contract import DataSeed, MethodConfig, distinct_values, prepare_field

Family = Literal["pairwise", "threeway", "coupled", "agents"]

#: the variant whose parameter count sets each family's budget, then the baselines
FAMILY_VARIANTS: dict[str, tuple[str, ...]] = {
    "pairwise": ("lsa", "sa1", "sa2"),
    "threeway": ("ha3", "lsa", "sa1", "sa2"),
    "coupled": ("hfa", "lsa", "sa1", "sa2"),
    "agents": ("lsa", "sa1", "sa2"),
}


class HyperAttentionConfig(MethodConfig, DataSeed):
    # prepare reads the prepare_field keys: the drawn interaction functions, their target
    # scale, and one task per budget scale; the samples are drawn where they are used
    families: list[Family] = prepare_field(
        ["pairwise", "threeway", "coupled", "agents"], min_length=1
    )
    #: entity types of the pairwise and three-way tasks (d = n_types, as Thm 3.1 needs)
    n_types: int = prepare_field(8, ge=2, le=64)
    #: CP rank of the three-way target's tensors T and U
    threeway_rank: int = prepare_field(3, ge=1)
    #: rank of order-3 HyperAttention's factors (>= threeway_rank represents it exactly)
    ha3_rank: int = Field(default=4, ge=1)
    #: the coupled task's two features
    coupled_a: int = prepare_field(6, ge=2, le=64)
    coupled_b: int = prepare_field(6, ge=2, le=64)
    #: colliding agents: grid side N (paper 360) and radius R (collide when |dy| <= 2R)
    grid: int = prepare_field(24, ge=4, le=400)
    radius: int = prepare_field(2, ge=1)
    #: population sizes: training, and the other sizes tested
    l_train: int = prepare_field(20, ge=2, le=200)
    l_test: list[int] = Field(default=[2, 5, 10, 30, 40], min_length=1)
    #: label noise std in units of the clean target's std at l_train
    noise: float = prepare_field(0.1, gt=0)
    #: the same for colliding agents (the paper's targets are noise-free; a small noise
    #: keeps the noise-floor metric defined)
    agents_noise: float = prepare_field(0.01, gt=0)
    n_train: int = prepare_field(1000, ge=16)
    n_val: int = Field(default=200, ge=8)
    n_test: int = Field(default=300, ge=8)
    #: parameter budgets of the baselines, as multiples of the method's count on a task
    scales: list[float] = prepare_field([1.0], min_length=1)
    #: softmax baselines: heads and MLP ratio (their width is matched to the budget)
    sa_heads: int = Field(default=1, ge=1)
    sa_mlp_ratio: float = Field(default=2.0, gt=0)
    #: Adam with a cosine learning-rate decay to zero, minibatches of sequences; one
    #: learning rate for the linear attention modules, one for the softmax transformers
    #: (each the best of {0.003, 0.01, 0.03, 0.1} by validation error on seed 0 of one
    #: task, chosen before any claim was evaluated)
    steps: int = Field(default=150, ge=1)
    batch: int = Field(default=64, ge=1)
    lr_linear: float = Field(default=0.1, gt=0)
    lr_softmax: float = Field(default=0.01, gt=0)
    history_every: int = Field(default=25, ge=1)

    _sizes = distinct_values(
        "l_test",
        message="population sizes must be distinct and >= 2",
        ok=lambda x: x >= 2,
        sort=True,
    )

    @field_validator("scales")
    @classmethod
    def _scales(cls, v: list[float]) -> list[float]:
        if any(x <= 0 for x in v) or len(set(v)) != len(v) or 1.0 not in v:
            raise ValueError("scales must be distinct, > 0 and include 1.0 (matched count)")
        return sorted(v)

    @model_validator(mode="after")
    def _checks(self) -> HyperAttentionConfig:
        if self.l_train in self.l_test:
            raise ValueError("l_test lists the other population sizes; drop l_train from it")
        if 2 * self.radius >= self.grid // 2:
            raise ValueError("radius: 2R must be < grid / 2 (otherwise every pair collides)")
        return self

    def noise_of(self, family: str) -> float:
        return self.agents_noise if family == "agents" else self.noise


PROFILE_DEFAULTS = {
    "smoke": {},
    "paper": {
        "n_train": 4000,
        "n_val": 500,
        "n_test": 500,
        "steps": 500,
        "scales": [1.0, 4.0],
        "history_every": 50,
    },
}
