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
  {y : s~(x', y) >= Phi(Phi^-1(q~) - eps / sigma)} with q~ calibrated on s~. In
  practice s~ is a Monte-Carlo estimate s^, whose error RSCP leaves uncorrected.
- RSCP+ (Yan, Romano, Weng, "Provably robust conformal prediction with improved
  efficiency", ICLR 2024, arXiv 2404.19651, Sec. 3 / Theorem 2; their released code,
  ``code/utils.py``'s ``prediction``): the score is the Monte-Carlo estimate s^ itself,
  calibrated at alpha - 2 beta (q^ = threshold(s^_cal, alpha - 2 beta)), and each of the
  two places where s^ stands for s~ is bounded with probability >= 1 - beta. In their
  non-conformity convention (S = 1 - s, set {k : S <= tau}) the set is
  {k : Phi^-1(S^(x', k) - b) - eps / sigma <= Phi^-1(tau_MC + b_Hoef)}; in ours, higher
  is more conforming:
      y in C+(x')  iff  s^(x', y) + b(x', y) >= Phi(Phi^-1(q^ - b_Hoef) - eps / sigma),
  with b_Hoef(beta) = sqrt(ln(1 / beta) / (2 N)) (Hoeffding, scores in [0, 1], N draws)
  on the calibration side, and on the test side b = b_Hoef or the empirical Bernstein
  bound (Maurer & Pontil 2009) sqrt(2 V ln(2 / beta) / N) + 7 ln(2 / beta) / (3 (N - 1)),
  V the sample variance of the N draws (their code's ``calculate_Bern_bound``). Why it
  covers: P(s^(x, y) >= q^) >= 1 - alpha + 2 beta at the clean x (split CP on s^);
  w.p. >= 1 - beta, s~(x, y) >= s^(x, y) - b_Hoef >= q^ - b_Hoef; Phi^-1(s~) is
  1 / sigma-Lipschitz, so s~(x', y) >= Phi(Phi^-1(q^ - b_Hoef) - eps / sigma); w.p.
  >= 1 - beta, s^(x', y) + b >= s~(x', y); a union bound leaves 1 - alpha. Where
  q^ - b_Hoef <= 0 the cut is 0 and every label is in the set.
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
    net,
    x: torch.Tensor,
    sigma: float,
    n_mc: int,
    gen: torch.Generator,
    batch: int = 8192,
    with_var: bool = False,
):
    """Monte-Carlo mean of softmax(f(x + d)) over ``n_mc`` Gaussian draws per row; with
    ``with_var``, also the unbiased sample variance of the draws, (mean, var)."""
    out, var = [], []
    rows = max(1, batch // n_mc)
    with torch.inference_mode():
        for chunk in x.split(rows):
            noise = torch.randn((n_mc, *chunk.shape), generator=gen) * sigma
            p = F.softmax(net((chunk.unsqueeze(0) + noise).reshape(-1, chunk.shape[-1])), -1)
            p = p.reshape(n_mc, len(chunk), -1)
            out.append(p.mean(0))
            if with_var:
                var.append(p.double().var(0, correction=1).float())
    return (torch.cat(out), torch.cat(var)) if with_var else torch.cat(out)


def rscp_cut(q: float, eps: float, sigma: float) -> float:
    """Smoothed-score cut of the RSCP set: Phi(Phi^-1(q) - eps / sigma)."""
    from scipy.stats import norm

    q = min(max(q, 1e-12), 1 - 1e-12)
    return float(norm.cdf(norm.ppf(q) - eps / sigma))


def hoeffding_bound(n_mc: int, beta: float) -> float:
    """b_Hoef(beta) = sqrt(ln(1 / beta) / (2 N)): a mean of N iid draws in [0, 1] falls
    short of (or exceeds) its expectation by more than this with probability <= beta
    (Hoeffding; Yan et al. 2024's b_Hoef, ``np.sqrt(-np.log(beta) / 2 / n_s)``)."""
    return math.sqrt(math.log(1.0 / beta) / (2.0 * n_mc))


def bernstein_bound(var: torch.Tensor, n_mc: int, beta: float) -> torch.Tensor:
    """Empirical Bernstein bound (Maurer & Pontil 2009, Thm 4) for a mean of N iid draws
    in [0, 1] with unbiased sample variance ``var``: w.p. >= 1 - beta the expectation
    exceeds the mean by at most sqrt(2 V ln(2 / beta) / N) + 7 ln(2 / beta) / (3 (N - 1))
    (Yan et al. 2024's code, ``calculate_Bern_bound``)."""
    t = math.log(2.0 / beta)
    return (2.0 * var.clamp_min(0) * t / n_mc).sqrt() + 7.0 * t / (3.0 * (n_mc - 1))


def rscp_plus_cut(q: float, eps: float, sigma: float, b_cal: float) -> float:
    """The cut of RSCP+'s corrected score s^ + b: Phi(Phi^-1(q - b_cal) - eps / sigma), 0
    where q - b_cal <= 0 (every label is in the set)."""
    from scipy.stats import norm

    low = q - b_cal
    if not low > 0:
        return 0.0
    return float(norm.cdf(norm.ppf(min(low, 1 - 1e-12)) - eps / sigma))


def rscp_plus_sets(
    mean: torch.Tensor, bound, q: float, eps: float, sigma: float, b_cal: float
) -> torch.Tensor:
    """RSCP+ sets {y : s^(x', y) + b(x', y) >= rscp_plus_cut(q, eps, sigma, b_cal)} from
    the Monte-Carlo means ``mean`` and the test-side bound ``bound`` (a number, or a
    tensor like ``mean``), with ``q`` calibrated at alpha - 2 beta."""
    return mean + bound >= rscp_plus_cut(q, eps, sigma, b_cal)


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
