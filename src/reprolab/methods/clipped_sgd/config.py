"""Clipped SGD settings. Defaults are the smoke profile; PROFILE_DEFAULTS['paper'] scales up.

Tasks are the settings of the sweep: every (beta, c, sigma) of the quadratic grid
(``quad_*``) and of the strategic-classification grid (``strat_*``); ``c`` is PCSGD's
clip and DiceSGD's C1 (C2 = dice_c2_ratio * C1), sigma the privacy-noise level.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from reprolab.contract import MethodConfig

Variant = Literal["pcsgd", "dicesgd", "nonbinding"]

_TASK = re.compile(r"^(quad|strat)-beta([0-9.e+-]+)-c([0-9.e+-]+)-sigma([0-9.e+-]+)$")


def task_name(family: str, beta: float, c: float, sigma: float) -> str:
    return f"{family}-beta{beta:g}-c{c:g}-sigma{sigma:g}"


def parse_task(name: str) -> tuple[str, float, float, float]:
    """(family, beta, c, sigma) of a task name written by :func:`task_name`."""
    m = _TASK.match(name)
    if m is None:
        raise ValueError(f"not a clipped_sgd task name: {name!r}")
    return m.group(1), float(m.group(2)), float(m.group(3)), float(m.group(4))


class ClippedSGDConfig(MethodConfig):
    variants: list[Variant] = Field(default=["pcsgd", "dicesgd", "nonbinding"], min_length=2)
    #: independent chains per unit, run side by side; errors are means over chains
    chains: int = Field(default=32, ge=2)
    #: DiceSGD's C2 / C1 (>= 1, so ||E clip_C1(g)|| <= C1 <= C2 and the residual fits)
    dice_c2_ratio: float = Field(default=1.0, ge=1.0)
    #: plateau = mean squared error over this last fraction of the iterations
    plateau_frac: float = Field(default=0.2, gt=0, le=0.5)
    #: tail slope of log mse vs log t fitted over t >= tail_start * T
    tail_start: float = Field(default=0.1, gt=0, lt=0.5)
    #: log-spaced points of each error curve kept as the unit's history
    history_points: int = Field(default=40, ge=5)
    data_seed: int = Field(default=0, ge=0)

    # the paper's quadratic model: l = (theta + a z)^2 / 2, z = b Z_i - beta theta
    quad_a: float = 1.0
    quad_b: float = 1.0
    quad_p: float = Field(default=0.1, gt=0, lt=1)
    quad_m: int = Field(default=1000, ge=2)
    quad_betas: list[float] = Field(default=[0.0, 0.5], min_length=1)
    quad_clips: list[float] = Field(default=[0.5])
    quad_sigmas: list[float] = Field(default=[0.0], min_length=1)
    quad_radius: float = Field(default=2.0, gt=0)
    quad_theta0: float = 1.0
    quad_steps: int = Field(default=4000, ge=20)
    quad_lr: float = Field(default=0.5, gt=0)
    quad_lr_t0: float = Field(default=100.0, gt=0)

    # strategic classification (Lightning module); an empty beta list drops the task
    strat_n: int = Field(default=1000, ge=10)
    strat_d: int = Field(default=4, ge=1)
    strat_strategic: int = Field(default=2, ge=1)
    strat_lam: float = Field(default=0.1, gt=0)
    strat_betas: list[float] = Field(default=[1.0])
    strat_clips: list[float] = Field(default=[0.5])
    strat_sigmas: list[float] = Field(default=[0.0], min_length=1)
    strat_radius: float = Field(default=10.0, gt=0)
    strat_batch: int = Field(default=8, ge=1)
    strat_epochs: int = Field(default=4, ge=1)
    #: optimizer steps per Lightning epoch (one checkpoint per epoch)
    strat_steps_per_epoch: int = Field(default=150, ge=1)
    strat_lr: float = Field(default=0.5, gt=0)
    strat_lr_t0: float = Field(default=100.0, gt=0)

    @field_validator("quad_clips", "strat_clips", "quad_sigmas", "strat_sigmas")
    @classmethod
    def _non_negative(cls, v: list[float]) -> list[float]:
        if any(x < 0 for x in v) or len(set(v)) != len(v):
            raise ValueError("values must be distinct and >= 0")
        return v

    @field_validator("quad_clips", "strat_clips")
    @classmethod
    def _positive_clips(cls, v: list[float]) -> list[float]:
        if any(x <= 0 for x in v):
            raise ValueError("clipping thresholds must be > 0")
        return v

    @field_validator("quad_betas", "strat_betas")
    @classmethod
    def _betas(cls, v: list[float]) -> list[float]:
        if any(x < 0 for x in v) or len(set(v)) != len(v):
            raise ValueError("sensitivities beta must be distinct and >= 0")
        return v

    @field_validator("variants")
    @classmethod
    def _distinct(cls, v: list[str]) -> list[str]:
        if "pcsgd" not in v or len(set(v)) != len(v):
            raise ValueError("variants must be distinct and include 'pcsgd'")
        return v

    @model_validator(mode="after")
    def _checks(self) -> ClippedSGDConfig:
        if any(self.quad_a * beta >= 1 for beta in self.quad_betas):
            raise ValueError(
                "quad_betas: need a * beta < 1 (else no stable point: 1 - a beta <= 0)"
            )
        if self.strat_strategic > self.strat_d:
            raise ValueError("strat_strategic must be <= strat_d")
        if self.strat_betas and not self.strat_clips:
            raise ValueError("strat_clips: give at least one clip when strat_betas is set")
        if not self.quad_clips:
            raise ValueError("quad_clips: give at least one clip")
        return self

    @property
    def strat_steps(self) -> int:
        return self.strat_epochs * self.strat_steps_per_epoch

    def tasks(self) -> list[str]:
        quad = [
            task_name("quad", b, c, s)
            for b in self.quad_betas
            for c in self.quad_clips
            for s in self.quad_sigmas
        ]
        strat = [
            task_name("strat", b, c, s)
            for b in self.strat_betas
            for c in self.strat_clips
            for s in self.strat_sigmas
        ]
        return quad + strat


PROFILE_DEFAULTS = {
    "smoke": {},
    "paper": {
        "chains": 64,
        "quad_betas": [0.0, 0.25, 0.5, 0.75],
        "quad_clips": [0.3, 0.6],
        "quad_sigmas": [0.0, 1.0],
        "quad_steps": 20000,
        "strat_betas": [0.0, 0.5, 1.0, 2.0],
        "strat_sigmas": [0.0, 0.5],
        "strat_epochs": 8,
        "strat_steps_per_epoch": 200,
    },
}
