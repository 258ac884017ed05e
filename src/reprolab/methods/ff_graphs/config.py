"""ff_graphs settings. Defaults are the smoke profile; PROFILE_DEFAULTS['paper'] scales up."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from reprolab.contract import MethodConfig

Family = Literal["line", "full", "window", "dilated", "random", "searched"]
TaskName = Literal["first_token", "sum_mod", "max_token"]


class FFGraphsConfig(MethodConfig):
    #: graph sizes of the exact metrics (seed-free units for deterministic families)
    sizes: list[int] = Field(default=[16, 32, 64, 128], min_length=2)
    #: L1 threshold of the mixing time (2 * total variation; 0.5 = TV 1/4)
    eps: float = Field(default=0.5, gt=0, lt=2)
    #: sliding-window width
    window: int = Field(default=4, ge=1)
    #: searched family: number of fractional offsets, search trials, size searched at
    search_offsets: int = Field(default=3, ge=1, le=8)
    search_trials: int = Field(default=30, ge=1)
    search_n: int = Field(default=64, ge=8)
    #: families that get a trained masked-attention model (the rest: metrics only)
    train_families: list[Family] = Field(
        default=["line", "full", "window", "dilated"], min_length=1
    )
    tasks: list[TaskName] = Field(default=["first_token"], min_length=1)
    train_len: int = Field(default=32, ge=4)
    test_lens: list[int] = Field(default=[64, 128], min_length=1)
    vocab: int = Field(default=8, ge=2)
    n_train: int = Field(default=800, ge=16)
    n_test: int = Field(default=300, ge=16)
    data_seed: int = Field(default=0, ge=0)
    dim: int = Field(default=16, ge=4)
    depth: int = Field(default=5, ge=1, le=12)
    heads: int = Field(default=2, ge=1)
    epochs: int = Field(default=6, ge=1)
    batch_size: int = Field(default=32, ge=1)
    lr: float = Field(default=3e-3, gt=0)


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
