"""Desk-rejection settings. Defaults are the smoke profile; PROFILE_DEFAULTS['paper']
scales up (CVPR 2025's real limit of 25 on conference-sized instances)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from reprolab.contract import MethodConfig

#: tasks named tiny_n<n> hold the exhaustive search over tiny instances with n authors
TINY_PREFIX = "tiny_n"

Policy = Literal["cvpr_rule", "lp_rounded", "milp_average", "milp_worst_case"]


class DeskRejectConfig(MethodConfig):
    # "conf" family: conference-like instances, the limit binds for a few prolific authors
    sizes: list[int] = Field(default=[100, 200], min_length=1)  # papers per instance
    limit: int = Field(default=6, ge=1)  # b; CVPR 2025 used 25
    pool_ratio: float = Field(default=2.0, gt=0)  # researchers in the pool per paper
    # "tight" family: a small limit on a dense collaboration graph (fractional LPs)
    tight_sizes: list[int] = Field(default=[40, 80], min_length=0)
    tight_limit: int = Field(default=2, ge=1)
    tight_pool_ratio: float = Field(default=0.5, gt=0)
    # shared by both families
    pareto_shape: float = Field(default=2.0, gt=0)  # tail of author productivity
    max_team: int = Field(default=8, ge=1, le=20)  # authors per paper: 1..max_team
    team_p: float = Field(default=0.5, gt=0, lt=1)
    # the dilemma: exhaustive search over tiny instances
    tiny_authors: list[int] = Field(default=[2, 3, 4], min_length=0)
    tiny_limits: list[int] = Field(default=[1, 2], min_length=1)
    tiny_max_papers: int = Field(default=4, ge=1, le=5)
    # solvers
    variants: list[Policy] = Field(
        default=["cvpr_rule", "lp_rounded", "milp_average", "milp_worst_case"], min_length=2
    )
    milp_max_papers: int = Field(default=1000, ge=1)  # larger instances skip the MILPs
    milp_time_limit: float = Field(default=20.0, gt=0)  # seconds per MILP solve

    @field_validator("sizes", "tight_sizes")
    @classmethod
    def _sizes_positive(cls, v: list[int]) -> list[int]:
        if any(m < 1 for m in v) or len(set(v)) != len(v):
            raise ValueError("sizes must be distinct positive paper counts")
        return v

    @field_validator("tiny_authors")
    @classmethod
    def _tiny_authors(cls, v: list[int]) -> list[int]:
        if any(not 1 <= n <= 4 for n in v) or len(set(v)) != len(v):
            raise ValueError("tiny_authors must be distinct author counts in 1..4")
        return v

    @field_validator("variants")
    @classmethod
    def _method_and_baseline(cls, v: list[str]) -> list[str]:
        if not {"lp_rounded", "cvpr_rule"} <= set(v) or len(set(v)) != len(v):
            raise ValueError("variants must be distinct and include lp_rounded and cvpr_rule")
        return v


PROFILE_DEFAULTS = {
    "smoke": {},
    "paper": {
        "sizes": [500, 1000, 2000, 4000],
        "limit": 25,
        "tight_sizes": [50, 100, 200],
        "tiny_max_papers": 5,
        "milp_max_papers": 4000,
        "milp_time_limit": 20.0,
    },
}
