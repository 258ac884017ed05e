"""PCSGD and DiceSGD under a decision-dependent distribution, and the paper's scalar model.

Notation of Li, Yemini & Wai (ICML 2025). Greedy deployment: at iteration t one sample
(or minibatch) Z ~ D(theta_t) is drawn from the distribution induced by the current
model, then

  clip_c(g)  = min(1, c / ||g||) g                                         (clip operator)
  PCSGD:       theta_{t+1} = P_X(theta_t - gamma_t (clip_c(g_t) + zeta_t))
  DiceSGD:     v_t = clip_C1(g_t) + clip_C2(e_t)
               theta_{t+1} = theta_t - gamma_t (v_t + zeta_t)
               e_{t+1}     = e_t + g_t - v_t                          (error feedback)

with g_t = grad l(theta_t; Z_t), zeta_t ~ N(0, sigma^2 I) the privacy noise and the step
size gamma_t = lr * t0 / (t0 + t). The non-binding control is PCSGD with
c >= sup_{theta in X, z} ||grad l(theta; z)||, i.e. projected SGD.

Paper experiment (quadratic): l(theta; z) = (theta + a z)^2 / 2 with D(theta) uniform over
{b Z_i - beta theta}, Z_i ~ Bernoulli(p). Then grad l = (1 - a beta) theta + a b Z_i and the
performative-stable point (theta minimises the risk of the distribution it induces) is
theta_PS = -a b p_hat / (1 - a beta), p_hat = mean Z_i.

Everything here is numpy and pure; the quadratic model is vectorised over chains.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

VARIANTS = ("pcsgd", "dicesgd", "nonbinding")


def clip(g: np.ndarray, c: float) -> np.ndarray:
    """clip_c(g) = min(1, c/||g||) g over the last axis (rows are vectors); clip_c(0) = 0."""
    norm = np.linalg.norm(g, axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        scale = np.minimum(1.0, c / norm)
    return g * np.where(norm > 0, scale, 1.0)


def project_ball(theta: np.ndarray, radius: float) -> np.ndarray:
    """P_X for X = {||theta|| <= radius} (rows are vectors)."""
    norm = np.linalg.norm(theta, axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        scale = np.minimum(1.0, radius / norm)
    return theta * np.where(norm > 0, scale, 1.0)


def step_size(t: np.ndarray | int, lr: float, t0: float) -> np.ndarray | float:
    """gamma_t = lr * t0 / (t0 + t): diminishing, sum gamma_t = inf, sum gamma_t^2 < inf."""
    return lr * t0 / (t0 + t)


# ---------------------------------------------------------------- the quadratic model


@dataclass(frozen=True)
class Quadratic:
    """l(theta; z) = (theta + a z)^2 / 2, z = b Z_i - beta theta, Z_i the dataset."""

    a: float
    b: float
    beta: float
    zs: np.ndarray  # the Bernoulli(p) draws Z_1..Z_m, fixed at prepare time

    @property
    def p_hat(self) -> float:
        return float(np.mean(self.zs))

    @property
    def slope(self) -> float:
        """d grad / d theta under the induced distribution: 1 - a beta (> 0 required)."""
        return 1.0 - self.a * self.beta

    def grad(self, theta: np.ndarray, z_sample: np.ndarray) -> np.ndarray:
        """grad_theta l(theta; b Z - beta theta) with the sample drawn at theta."""
        z = self.b * z_sample - self.beta * theta
        return theta + self.a * z

    def theta_ps(self) -> float:
        """Closed form: theta = -a E_{D(theta)}[z] = -a (b p_hat - beta theta)."""
        return -self.a * self.b * self.p_hat / self.slope

    def max_grad(self, radius: float) -> float:
        """sup_{|theta| <= radius, Z in {0,1}} |grad|: a clip at or above it never binds."""
        return abs(self.slope) * radius + abs(self.a * self.b)

    def pcsgd_limit(self, c: float, radius: float) -> float:
        """Mean-field limit of PCSGD (small steps): the theta in X where the expected
        clipped gradient p_hat clip_c(s theta + a b) + (1 - p_hat) clip_c(s theta)
        vanishes (s = 1 - a beta); it is monotone in theta, so bisection finds it."""
        p = self.p_hat

        def drift(theta: float) -> float:
            u = self.slope * theta
            return p * float(np.clip(u + self.a * self.b, -c, c)) + (1 - p) * float(
                np.clip(u, -c, c)
            )

        lo, hi = -radius, radius
        if drift(lo) >= 0:
            return lo
        if drift(hi) <= 0:
            return hi
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if drift(mid) > 0:
                hi = mid
            else:
                lo = mid
        return 0.5 * (lo + hi)


@dataclass(frozen=True)
class Run:
    """One optimizer run: the squared error and bias at every iteration t = 0..T."""

    mse: np.ndarray  # mean over chains of ||theta_t - theta_PS||^2, shape (T + 1,)
    bias: np.ndarray  # ||mean over chains of theta_t - theta_PS||, shape (T + 1,)
    theta: np.ndarray  # final iterates, (chains, d)
    clip_fraction: float  # share of gradient draws the first clip shortened


def simulate_quadratic(
    model: Quadratic,
    variant: str,
    *,
    c: float,
    c2: float,
    sigma: float,
    radius: float,
    theta0: float,
    lr: float,
    lr_t0: float,
    samples: np.ndarray,
    noise: np.ndarray | None,
) -> Run:
    """Run ``variant`` on the scalar model, vectorised over chains.

    ``samples`` (T, chains) are the Z drawn at each iteration (uniform over the dataset;
    the -beta theta_t part of the sample is applied inside the gradient, which is what
    drawing from D(theta_t) means); ``noise`` (T, chains) is standard normal, scaled by
    ``sigma`` here, or None when sigma = 0. The clip of a scalar is np.clip(g, -c, c),
    which equals min(1, c/|g|) g (tested). ``c`` is the PCSGD threshold or DiceSGD's C1.
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; variants: {', '.join(VARIANTS)}")
    steps, chains = samples.shape
    ps = model.theta_ps()
    theta = np.full(chains, float(theta0))
    e = np.zeros(chains)
    trace = np.empty((steps + 1, chains))
    trace[0] = theta
    s, ab = model.slope, model.a * model.b
    gammas = step_size(np.arange(steps), lr, lr_t0)
    for t in range(steps):
        g = s * theta + ab * samples[t]
        gamma = gammas[t]
        zeta = sigma * noise[t] if noise is not None else 0.0
        cg = np.clip(g, -c, c)
        if variant == "dicesgd":
            v = cg + np.clip(e, -c2, c2)
            theta = theta - gamma * (v + zeta)
            e = e + g - v
        else:  # pcsgd, and the non-binding control (c >= max |g| on X)
            theta = np.clip(theta - gamma * (cg + zeta), -radius, radius)
        trace[t + 1] = theta
    # The gradient drawn at step t is a function of (theta_t, Z_t): count the clipped
    # draws afterwards, vectorised, rather than inside the loop.
    drawn = s * trace[:-1] + ab * samples
    err = trace - ps
    return Run(
        mse=np.mean(err**2, axis=1),
        bias=np.abs(err.mean(axis=1)),
        theta=theta[:, None],
        clip_fraction=float(np.mean(np.abs(drawn) > c)),
    )


# ---------------------------------------------------------------- curve summaries


def log_steps(steps: int, n: int) -> np.ndarray:
    """About ``n`` log-spaced iteration indices in [1, steps] (always includes steps)."""
    grid = np.unique(np.round(np.geomspace(1, steps, n)).astype(int))
    return grid if grid[-1] == steps else np.append(grid, steps)


def summarize(
    mse: np.ndarray, bias: np.ndarray, plateau_frac: float, tail_start: float
) -> dict[str, float]:
    """Metrics of one error curve (index t = iteration, 0..T).

    plateau_mse: mean squared error over the last ``plateau_frac`` of the iterations.
    tail_slope:  least-squares slope of log mse against log t over t >= tail_start * T,
                 on log-spaced iterations (an unbiased method with gamma_t ~ 1/t has
                 slope about -1; a method stuck at a bias floor has slope about 0).
    """
    steps = len(mse) - 1
    start = min(steps, max(1, math.floor((1 - plateau_frac) * steps)))
    ts = log_steps(steps, 200)
    ts = ts[ts >= max(1, tail_start * steps)]
    if len(ts) < 2:
        raise ValueError(f"too few iterations ({steps}) for a tail slope")
    slope = float(np.polyfit(np.log(ts), np.log(np.maximum(mse[ts], 1e-300)), 1)[0])
    return {
        "final_mse": float(mse[-1]),
        "plateau_mse": float(np.mean(mse[start:])),
        "tail_slope": slope,
        "final_bias": float(bias[-1]),
    }
