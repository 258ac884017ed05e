"""Second task: strategic classification (Perdomo et al., 2020): model and references.

Ridge-regularised logistic regression; agents respond to the deployed model theta by
moving their strategic features against it, x' = x - beta (theta * s) with s the 0/1 mask of
strategic features (beta plays the role of the paper's sensitivity). Per-sample loss and
gradient at theta, with the sample drawn from D(theta) (greedy deployment):

  l(theta; x', y) = log(1 + exp(x'.theta)) - y x'.theta + lam/2 ||theta||^2
  g               = (sigmoid(x'.theta) - y) x' + lam theta

The performative-stable point solves theta = argmin_u E_{D(theta)} l(u; .); it is found by
repeated risk minimisation (RRM, each risk minimised by Newton's method) to convergence.
This file holds the numpy references (data, theta_PS, PCSGD's mean-field limit); the
optimizer and the Lightning module are in ``module.py``.
"""

from __future__ import annotations

import numpy as np


def make_population(
    n: int, d: int, n_strategic: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n agents: d standard-normal features plus a constant 1 (the intercept), labels from
    a logistic model; the first ``n_strategic`` features are strategic."""
    rng = np.random.default_rng(seed)
    feats = rng.standard_normal((n, d))
    w_true = rng.standard_normal(d)
    w_true *= 2.0 / np.linalg.norm(w_true)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-(feats @ w_true) + 0.5))).astype(np.float64)
    x = np.hstack([feats, np.ones((n, 1))])
    mask = np.zeros(d + 1)
    mask[:n_strategic] = 1.0
    return x, y, mask


def shifted(x: np.ndarray, mask: np.ndarray, beta: float, theta: np.ndarray) -> np.ndarray:
    """Features of D(theta): each agent moves its strategic features by -beta theta."""
    return x - beta * (theta * mask)


def per_sample_grads(theta: np.ndarray, xs: np.ndarray, y: np.ndarray, lam: float) -> np.ndarray:
    """(n, d) gradients of l(theta; xs_i, y_i)."""
    p = 1.0 / (1.0 + np.exp(-(xs @ theta)))
    return (p - y)[:, None] * xs + lam * theta


def minimise_risk(xs: np.ndarray, y: np.ndarray, lam: float, theta0: np.ndarray) -> np.ndarray:
    """argmin_theta mean_i l(theta; xs_i, y_i) on a fixed distribution (Newton's method)."""
    theta = theta0.copy()
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(xs @ theta)))
        grad = xs.T @ (p - y) / len(y) + lam * theta
        hess = (xs * (p * (1 - p))[:, None]).T @ xs / len(y) + lam * np.eye(len(theta))
        step = np.linalg.solve(hess, grad)
        theta -= step
        if np.linalg.norm(step) < 1e-14:
            break
    return theta


def performative_stable_point(
    x: np.ndarray, y: np.ndarray, mask: np.ndarray, beta: float, lam: float, iters: int = 1000
) -> tuple[np.ndarray, int]:
    """Repeated risk minimisation theta_{k+1} = argmin E_{D(theta_k)} l to a fixed point;
    returns (theta_PS, RRM iterations). Raises when RRM does not converge (beta too large
    for this lam: the map is then not a contraction)."""
    theta = np.zeros(x.shape[1])
    for k in range(1, iters + 1):
        new = minimise_risk(shifted(x, mask, beta, theta), y, lam, theta)
        if np.linalg.norm(new - theta) < 1e-13:
            return new, k
        theta = new
    raise RuntimeError(
        f"repeated risk minimisation did not converge in {iters} steps (beta={beta}, "
        f"lam={lam}); lower beta or raise lam"
    )


def max_grad_norm(x: np.ndarray, mask: np.ndarray, beta: float, lam: float, radius: float) -> float:
    """sup over ||theta|| <= radius and agents of ||g||: |sigmoid - y| < 1, so
    ||g|| <= ||x_i|| + beta ||theta * s|| + lam ||theta|| <= max_i ||x_i|| + (beta + lam) radius.
    A clip at or above it never binds (the non-binding control)."""
    return float(np.linalg.norm(x, axis=1).max() + (beta + lam) * radius)


def pcsgd_limit(
    x: np.ndarray,
    y: np.ndarray,
    mask: np.ndarray,
    beta: float,
    lam: float,
    c: float,
    theta_ps: np.ndarray,
) -> np.ndarray:
    """Mean-field limit of PCSGD (small steps): theta where the expected clipped
    per-sample gradient under D(theta), mean_i clip_c(g_i), vanishes."""
    from scipy import optimize

    from reprolab.methods.clipped_sgd.algorithms import clip

    def drift(theta: np.ndarray) -> np.ndarray:
        return clip(per_sample_grads(theta, shifted(x, mask, beta, theta), y, lam), c).mean(0)

    sol = optimize.root(drift, theta_ps, method="hybr", tol=1e-13)
    if not sol.success or np.linalg.norm(drift(sol.x)) > 1e-9:
        raise RuntimeError(f"no PCSGD limit point found (c={c}, beta={beta}): {sol.message}")
    return sol.x
