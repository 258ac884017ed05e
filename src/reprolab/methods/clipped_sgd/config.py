"""Clipped SGD settings. Defaults are the smoke profile; PROFILE_DEFAULTS['paper'] scales up.

Tasks are the settings of the sweep: every (beta, c, sigma) of the quadratic grid
(``quad_*``) and of the strategic-classification grid (``strat_*``); ``c`` is PCSGD's
clip and DiceSGD's C1 (C2 = dice_c2_ratio * C1), sigma the privacy-noise level. A task's
name is for people only: its settings travel as unit parameters (``family``, ``beta``,
``c``, ``sigma``), columns of the metrics table.
"""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from reprolab.contract import DataSeed, MethodConfig, distinct_values, prepare_field


def task_name(family: str, beta: float, c: float, sigma: float) -> str:
    """A readable task name (never parsed: the settings are the unit's parameters)."""
    return f"{family}-beta{beta:g}-c{c:g}-sigma{sigma:g}"


class ClippedSGDConfig(MethodConfig, DataSeed):
    # prepare reads the prepare_field keys: the task grids, the data and the reference points
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

    # the paper's quadratic model: l = (theta + a z)^2 / 2, z = b Z_i - beta theta
    quad_a: float = prepare_field(1.0)
    quad_b: float = prepare_field(1.0)
    quad_p: float = prepare_field(0.1, gt=0, lt=1)
    quad_m: int = prepare_field(1000, ge=2)
    quad_betas: list[float] = prepare_field([0.0, 0.5], min_length=1)
    quad_clips: list[float] = prepare_field([0.5])
    quad_sigmas: list[float] = prepare_field([0.0], min_length=1)
    quad_radius: float = prepare_field(2.0, gt=0)
    quad_theta0: float = 1.0
    quad_steps: int = Field(default=4000, ge=20)
    quad_lr: float = Field(default=0.5, gt=0)
    quad_lr_t0: float = Field(default=100.0, gt=0)

    # strategic classification (Lightning module); an empty beta list drops the task
    strat_n: int = prepare_field(1000, ge=10)
    strat_d: int = prepare_field(4, ge=1)
    strat_strategic: int = prepare_field(2, ge=1)
    strat_lam: float = prepare_field(0.1, gt=0)
    strat_betas: list[float] = prepare_field([1.0])
    strat_clips: list[float] = prepare_field([0.5])
    strat_sigmas: list[float] = prepare_field([0.0], min_length=1)
    strat_radius: float = prepare_field(10.0, gt=0)
    strat_batch: int = Field(default=8, ge=1)
    strat_epochs: int = Field(default=4, ge=1)
    #: optimizer steps per Lightning epoch (one checkpoint per epoch)
    strat_steps_per_epoch: int = Field(default=150, ge=1)
    strat_lr: float = Field(default=0.5, gt=0)
    strat_lr_t0: float = Field(default=100.0, gt=0)

    _non_negative = distinct_values(
        "quad_clips",
        "strat_clips",
        "quad_sigmas",
        "strat_sigmas",
        message="values must be distinct and >= 0",
        ok=lambda x: x >= 0,
    )

    @field_validator("quad_clips", "strat_clips")
    @classmethod
    def _positive_clips(cls, v: list[float]) -> list[float]:
        if any(x <= 0 for x in v):
            raise ValueError("clipping thresholds must be > 0")
        return v

    _betas = distinct_values(
        "quad_betas",
        "strat_betas",
        message="sensitivities beta must be distinct and >= 0",
        ok=lambda x: x >= 0,
    )

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

    def tasks(self) -> dict[str, dict[str, str | float]]:
        """Task name -> its settings (the unit parameters: family, beta, c, sigma)."""
        grids = (
            ("quad", self.quad_betas, self.quad_clips, self.quad_sigmas),
            ("strat", self.strat_betas, self.strat_clips, self.strat_sigmas),
        )
        return {
            task_name(family, b, c, s): {"family": family, "beta": b, "c": c, "sigma": s}
            for family, betas, clips, sigmas in grids
            for b in betas
            for c in clips
            for s in sigmas
        }


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
