"""Split conformal prediction with a LAC score (higher is more conforming), its robust
versions, and a PGD-L2 attack on the true label. Two LAC scores, as in the official
``robust_ps.py``:

- ``sigmoid`` (its default, and the score of the paper's reported set sizes): one
  sigmoid per class, s(x, y) = sigmoid(f_y(x) / T). Sigmoid is monotone, so the sets are
  those of the logit score f_y(x) / T, which is what is computed (no score saturates at
  a small T, where sigmoid's float32 values tie at 1).
- ``softmax``: s(x, y) = softmax(f(x) / T)_y.

- Threshold (split CP): with n calibration scores and k = ceil((n + 1)(1 - alpha)), q is
  the k-th largest calibration score (the k-th smallest non-conformity 1 - s); the set
  {y : s(x, y) >= q} then covers with probability >= 1 - alpha under exchangeability.
- lip_rcp (official ``robust_ps``, propagate=True): when every logit is L-Lipschitz in
  L2, no perturbation of norm <= eps moves a logit by more than r = L eps, so
  s_bar(x, y) upper-bounds s(x', y) on the ball: (f_y(x) + r) / T for the sigmoid score,
  softmax((f(x) + r (2 e_y - 1)) / T)_y for the softmax score. The robust set
  {y : s_bar(x', y) >= q} holds every y whose clean score passes q, hence covers the
  true label at any attacked x' with prob. >= 1 - alpha.
- RSCP (Gendler et al. 2022): smoothed score s~(x, y) = E s(x + d, y), d ~ N(0, sigma^2 I),
  estimated by Monte Carlo; Phi^-1(s~) is (1 / sigma)-Lipschitz, so the robust set is
  {y : s~(x', y) >= Phi(Phi^-1(q~) - eps / sigma)} with q~ calibrated on s~.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F


def threshold(scores: np.ndarray, alpha: float) -> float:
    """k-th largest of n conformity scores, k = ceil((n + 1)(1 - alpha)); -inf if k > n."""
    s = np.sort(np.asarray(scores, dtype=np.float64))[::-1]
    n = len(s)
    k = math.ceil((n + 1) * (1 - alpha))
    return -math.inf if k > n else float(s[k - 1])


SCORES = ("sigmoid", "softmax")


def lac_scores(logits: torch.Tensor, temp: float, score: str = "softmax") -> torch.Tensor:
    """s(x, y) for every y (the sigmoid score in logit space: same sets)."""
    if score == "sigmoid":
        return logits / temp
    if score == "softmax":
        return F.softmax(logits / temp, dim=-1)
    raise ValueError(f"unknown LAC score {score!r}; known: {', '.join(SCORES)}")


def worst_case_scores(
    logits: torch.Tensor, temp: float, radius: float, score: str = "softmax"
) -> torch.Tensor:
    """s_bar(x, y) for every y. Sigmoid: logit y raised by ``radius`` (the others do not
    enter its score). Softmax: logit y raised by ``radius``, all others lowered by it."""
    if score == "sigmoid":
        return (logits + radius) / temp
    if score != "softmax":
        raise ValueError(f"unknown LAC score {score!r}; known: {', '.join(SCORES)}")
    k = logits.shape[-1]
    shifted = logits.unsqueeze(1).expand(-1, k, -1) - radius
    eye = torch.eye(k, dtype=torch.bool, device=logits.device)
    shifted = shifted + 2.0 * radius * eye
    probs = F.softmax(shifted / temp, dim=-1)
    return probs.diagonal(dim1=1, dim2=2)


def true_label(values: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return values[torch.arange(len(y)), y]


def smoothed_scores(
    net, x: torch.Tensor, sigma: float, n_mc: int, gen: torch.Generator, batch: int = 8192
) -> torch.Tensor:
    """Monte-Carlo mean of softmax(f(x + d)) over ``n_mc`` Gaussian draws per row."""
    out = []
    rows = max(1, batch // n_mc)
    with torch.inference_mode():
        for chunk in x.split(rows):
            noise = torch.randn((n_mc, *chunk.shape), generator=gen) * sigma
            p = F.softmax(net((chunk.unsqueeze(0) + noise).reshape(-1, chunk.shape[-1])), -1)
            out.append(p.reshape(n_mc, len(chunk), -1).mean(0))
    return torch.cat(out)


def rscp_cut(q: float, eps: float, sigma: float) -> float:
    """Smoothed-score cut of the RSCP set: Phi(Phi^-1(q) - eps / sigma)."""
    from scipy.stats import norm

    q = min(max(q, 1e-12), 1 - 1e-12)
    return float(norm.cdf(norm.ppf(q) - eps / sigma))


def pgd_l2(
    loss_fn, x: torch.Tensor, y: torch.Tensor, eps: float, steps: int, batch: int = 2048
) -> torch.Tensor:
    """Maximise ``loss_fn(x', y)`` (one value per row) over ||x' - x||_2 <= eps, x' in [0, 1]:
    normalised-gradient steps of 2.5 eps / steps, projection on the ball, then the box."""
    if eps <= 0:
        return x.clone()
    step = 2.5 * eps / steps
    out = []
    for xb, yb in zip(x.split(batch), y.split(batch), strict=True):
        adv = xb.clone()
        for _ in range(steps):
            adv.requires_grad_(True)
            with torch.enable_grad():
                grad = torch.autograd.grad(loss_fn(adv, yb).sum(), adv)[0]
            with torch.no_grad():
                g = grad / grad.norm(dim=1, keepdim=True).clamp_min(1e-12)
                delta = adv + step * g - xb
                norms = delta.norm(dim=1, keepdim=True)
                delta = delta * torch.clamp(eps / norms.clamp_min(1e-12), max=1.0)
                adv = (xb + delta).clamp(0.0, 1.0)
        out.append(adv.detach())
    return torch.cat(out)
