"""ff_graphs settings. Defaults are the smoke profile; PROFILE_DEFAULTS['paper'] scales up."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from reprolab.contract import DataSeed, MethodConfig, OptimConfig, mixin_field, prepare_field

Family = Literal["line", "full", "window", "dilated", "random", "searched"]
TaskName = Literal["first_token", "sum_mod", "max_token", "majority", "minority", "prefix_majority"]


class FFGraphsConfig(MethodConfig, DataSeed, OptimConfig):
    #: graph sizes of the exact metrics (seed-free units for deterministic families)
    sizes: list[int] = prepare_field([16, 32, 64, 128], min_length=2)
    #: L1 threshold of the mixing time (2 * total variation; 0.5 = TV 1/4)
    eps: float = Field(default=0.5, gt=0, lt=2)
    #: sliding-window width
    window: int = Field(default=4, ge=1)
    #: searched family: number of fractional offsets, search trials, and the graph sizes
    #: whose mean score it maximises
    search_offsets: int = Field(default=3, ge=1, le=8)
    search_trials: int = Field(default=30, ge=1)
    search_sizes: list[int] = Field(default=[64], min_length=1)
    #: families that get a trained masked-attention model (the rest: metrics only)
    train_families: list[Family] = Field(
        default=["line", "full", "window", "dilated"], min_length=1
    )
    #: graph variants trained beside each family's default graph: family -> the values of
    #: its parameter ``g`` (window width, dilated base, random in-degree, number of
    #: searched offsets; ``graphs.PARAMETER``), read by the joint fidelity-mixing test
    graph_params: dict[Family, list[int]] = Field(default={})
    #: the models are trained on the run's first ``train_seeds`` seeds (None: all); the
    #: metric units use every seed
    train_seeds: int | None = Field(default=None, ge=1)
    tasks: list[TaskName] = prepare_field(["first_token"], min_length=1)
    train_len: int = prepare_field(32, ge=4)
    test_lens: list[int] = prepare_field([64, 128], min_length=1)
    vocab: int = prepare_field(8, ge=2)
    n_train: int = prepare_field(800, ge=16)
    n_test: int = prepare_field(300, ge=16)
    dim: int = Field(default=16, ge=4)
    depth: int = Field(default=5, ge=1, le=12)
    heads: int = Field(default=2, ge=1)
    epochs: int = mixin_field(OptimConfig, "epochs", 6)

    @field_validator("graph_params")
    @classmethod
    def _parameterised(cls, value: dict[str, list[int]]) -> dict[str, list[int]]:
        """Only families with a parameter get variants, each value a valid one."""
        lowest = {"window": 1, "dilated": 2, "random": 1, "searched": 1}
        for family, values in value.items():
            if family not in lowest:
                raise ValueError(f"the {family} family has no parameter to vary")
            if any(v < lowest[family] for v in values):
                raise ValueError(f"{family}: parameter values >= {lowest[family]}, got {values}")
            if len(set(values)) != len(values):
                raise ValueError(f"{family}: repeated parameter values {values}")
        return value

    batch_size: int = mixin_field(OptimConfig, "batch_size", 32)


PROFILE_DEFAULTS = {
    "smoke": {},
    "paper": {
        "sizes": [16, 32, 64, 128, 256, 512],
        "train_families": ["line", "full", "window", "dilated", "random", "searched"],
        "tasks": ["first_token", "max_token"],
        "n_train": 3000,
        "n_test": 500,
        "dim": 32,
        "epochs": 8,
    },
}
