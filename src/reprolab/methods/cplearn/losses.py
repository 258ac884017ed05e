"""CPLearn's temperature, codebook and loss, and the Barlow Twins loss: pure functions.

Checked term by term against the official ``solo/losses/cplearn.py`` and
``solo/methods/cplearn.py`` of github.com/emsansone/CPLearn (read, not copied):

- projector ``e = tanh(BN(Linear(h)))`` (dim f), ``z = e @ W`` with ``W`` a fixed random
  +-1 matrix (f x c, a buffer, never trained), logits ``z / tau`` with
  ``tau = f / (sqrt(n) log((1 - eps (c - 1)) / eps))``, n the batch size, eps = 1e-8;
- with ``p_v = softmax(z_v / tau)`` per row and ``pbar_v`` its batch mean, the loss of two
  views v, w is ``0.5 [KL(pbar_w || U) + beta CE(p_w, p_v)] + 0.5 [KL(pbar_v || U) +
  beta CE(p_v, p_w)]`` where ``KL(pbar || U) = sum_j pbar_j log(c pbar_j)`` (the official
  ``(p * log(c * pbar)).sum(1).mean()`` is the same number, since the batch mean of p is
  pbar) and ``CE(p, q) = -mean_i sum_j p_ij log q_ij``. No stop-gradient: both the target
  and the predicted assignment receive gradients, as in the official code.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

#: smallest batch-mean probability fed to the log: a code that no row of the batch uses
#: (softmax underflows to exactly 0 at these temperatures) contributes 0 * log(tiny) = 0
#: to the prior term and a finite gradient, where log(0) would give 0 * inf = NaN.
_TINY = 1e-30


def temperature(f: int, n: int, c: int, eps: float = 1e-8) -> float:
    """tau = f / (sqrt(n) * log((1 - eps (c - 1)) / eps)) (the card's closed form)."""
    if not 0 < eps * (c - 1) < 1:
        raise ValueError(f"eps * (c - 1) must lie in (0, 1); got eps={eps}, c={c}")
    return f / (math.sqrt(n) * math.log((1.0 - eps * (c - 1)) / eps))


def codebook(f: int, c: int, seed: int) -> torch.Tensor:
    """The fixed random +-1 matrix W (f x c), a pure function of ``seed``."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, 2, (f, c), generator=gen).float().mul_(2.0).sub_(1.0)


def prior_term(logits: torch.Tensor) -> torch.Tensor:
    """KL(pbar || uniform) = sum_j pbar_j log(c pbar_j), pbar the batch-mean assignment."""
    c = logits.shape[1]
    pbar = logits.softmax(dim=1).mean(dim=0)
    return (pbar * torch.log(c * pbar.clamp_min(_TINY))).sum()


def cross_term(target_logits: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """CE(p_target, p) = -mean_i sum_j softmax(target)_ij log softmax(logits)_ij."""
    return -(target_logits.softmax(dim=1) * logits.log_softmax(dim=1)).sum(dim=1).mean()


def cplearn_loss(
    logits_v: torch.Tensor, logits_w: torch.Tensor, beta: float, prior: bool = True
) -> tuple[torch.Tensor, dict[str, float]]:
    """The symmetric CPLearn loss of two views' logits (z / tau), and its two parts.

    ``prior=False`` is the ablation without the prior-matching term."""
    kl = 0.5 * (prior_term(logits_w) + prior_term(logits_v))
    ce = 0.5 * (cross_term(logits_w, logits_v) + cross_term(logits_v, logits_w))
    loss = (kl if prior else 0.0) + beta * ce
    return loss, {"prior": float(kl.detach()), "cross": float(ce.detach())}


def barlow_twins_loss(z1: torch.Tensor, z2: torch.Tensor, lamb: float) -> torch.Tensor:
    """Zbontar et al. 2021, eq. 1: sum_i (1 - C_ii)^2 + lambda sum_{i != j} C_ij^2 with C
    the cross-correlation of the two views' embeddings, each standardised over the batch
    (batch norm without affine parameters, biased variance as in the paper's code)."""
    n = z1.shape[0]
    a = F.batch_norm(z1, None, None, training=True)
    b = F.batch_norm(z2, None, None, training=True)
    corr = a.T @ b / n
    on = (torch.diagonal(corr) - 1.0).pow(2).sum()
    off = corr.pow(2).sum() - torch.diagonal(corr).pow(2).sum()
    return on + lamb * off
