"""dp_noise settings. Defaults are the smoke profile; PROFILE_DEFAULTS['paper'] scales up.

Sensitivity is s = 1 throughout: ``sigma_ratios`` are sigma/s, the bin width is
Delta = 1/bins_per_sensitivity, and the grid covers n_bins * Delta = n_bins / m in units
of s before the geometric tails start.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from reprolab.contract import MethodConfig, distinct_values, prepare_field


def task_name(sigma: float, k: int) -> str:
    """A readable task name (never parsed: sigma and k are the unit's parameters)."""
    return f"sigma{sigma:g}_k{k}"


class DPNoiseConfig(MethodConfig):
    # prepare reads the prepare_field keys; n_bins and bins_per_sensitivity only through
    # the grid check every validated copy of the config runs (prepare's arrays do not
    # depend on them)
    #: noise standard deviation over sensitivity, one family of tasks each
    sigma_ratios: list[float] = prepare_field([5.0], min_length=1)
    #: numbers of compositions k; the noise is optimised for each (sigma, k) task
    compositions: list[int] = prepare_field([10, 100], min_length=1)
    #: target delta of the (eps, delta) guarantee
    delta: float = prepare_field(1e-6, gt=0, lt=1)
    #: m = s / Delta, bins per sensitivity (the shifts are 1..m bins); paper: 20
    bins_per_sensitivity: int = prepare_field(5, ge=1, le=64)
    #: N, free bins before the geometric tail; paper: 2000
    n_bins: int = prepare_field(150, ge=4)
    #: r, ratio of the geometric tails; paper: 0.9999 with a 20-sigma grid (so is the
    #: paper profile's). On the smoke grid of ~6 sigma that flat a tail holds a visible
    #: share of the variance: 0.99 there
    tail_ratio: float = Field(default=0.99, gt=0, lt=1)
    #: K, iterations of preconditioned gradient descent (Alg. 3)
    iterations: int = Field(default=800, ge=1)
    #: T, a Newton step on alpha every T iterations (Alg. 3, line 20)
    alpha_every: int = Field(default=5, ge=1)
    #: alpha is kept in (1, alpha_max]: at k = 1 the bound's optimum runs off to infinity
    alpha_max: float = Field(default=256.0, gt=1)
    #: the compositions k at which the variant ``optimized_from_laplace`` runs (Algorithm
    #: 3 started from the equal-variance Laplace instead of the paper's discretised
    #: Gaussian, which the variant ``optimized`` starts from); a k not among
    #: ``compositions`` is ignored; None: every k
    from_laplace_compositions: list[int] | None = Field(default=[10])
    #: the seed's only role: p0 is multiplied by exp(jitter * z), z ~ N(0, 1), before
    #: Algorithm 2 restores its variance (0 = every seed starts from the same point, and
    #: the optimized noise is a seed-free unit like the baselines)
    init_jitter: float = Field(default=0.01, ge=0, le=1)
    #: privacy-loss grid of both accountants (this method's and dp-accounting's)
    loss_grid: float = Field(default=1e-4, gt=0, le=0.1)
    #: iterations between two entries of the optimisation history
    history_every: int = Field(default=10, ge=1)

    _positive_sigmas = distinct_values(
        "sigma_ratios", message="sigma_ratios must be distinct and positive", ok=lambda s: s > 0
    )

    _positive_ks = distinct_values(
        "compositions",
        message="compositions must be distinct integers >= 1",
        ok=lambda k: k >= 1,
        sort=True,
    )

    @model_validator(mode="after")
    def _grid_is_wide_enough(self) -> DPNoiseConfig:
        width = self.n_bins / self.bins_per_sensitivity
        for sigma in self.sigma_ratios:
            if width < 4 * sigma:
                raise ValueError(
                    f"n_bins / bins_per_sensitivity = {width:g} must be at least 4 sigma/s "
                    f"(= {4 * sigma:g}) so the grid holds the noise before its geometric tail"
                )
        return self

    def from_laplace(self, k: int) -> bool:
        """Whether the variant ``optimized_from_laplace`` runs at ``k`` compositions."""
        return self.from_laplace_compositions is None or k in self.from_laplace_compositions

    def tasks(self) -> dict[str, dict[str, float | int]]:
        """Task name -> its setting (the unit parameters sigma and k)."""
        return {
            task_name(s, k): {"sigma": s, "k": k}
            for s in self.sigma_ratios
            for k in self.compositions
        }


PROFILE_DEFAULTS = {
    "smoke": {},
    # The paper's grid (Delta = 0.05, N = 2000, r = 0.9999: 20 sigma wide, an almost
    # flat tail) costs ~10x this machine's per iteration of the old Delta = 0.1, N = 300
    # (24 vs 2.5 ms of CPU): ~25 min for one 5-seed round of the Gaussian start alone.
    # Kept: its width (N Delta = 100 = 20 sigma) and tail (r = 0.9999) at twice its bin
    # width (Delta = 0.1, N = 1000): ~1.9x the old grid's cost, ~9.5 min a round with
    # the Laplace start at k = 3 and 10 (README, "What this small-scale version changes")
    "paper": {
        "compositions": [3, 10, 20, 40, 100, 200],
        "bins_per_sensitivity": 10,
        "n_bins": 1000,
        "tail_ratio": 0.9999,
        "iterations": 2000,
        "history_every": 50,
        "from_laplace_compositions": [3, 10],
    },
}
