"""EnsLoss and the fixed losses it is compared with, as pure functions of margins.

All take margins ``s_i = y_i f(x_i)`` with labels ``y in {-1, +1}`` and return a scalar.

EnsLoss (paper Alg. 1; official ``losses.py::ensLoss.forward``) never writes a loss
down: per batch it draws random loss *derivatives* that satisfy the convexity and
calibration (CC) conditions and back-propagates ``mean(g * s)`` with ``g`` detached, so
``d loss / d s_i = g_i / n``:

1. ``g = -exp(z)``, ``z ~ N(0, 1)`` i.i.d. (inverse Box-Cox with lambda = 0 of a normal
   draw), clipped below at -1 and sorted;
2. assign so the smallest margin receives the most negative derivative: ``g`` is then
   non-decreasing in ``s``, i.e. the derivative of a convex loss;
3. for margins above 1 divide by the margin (a superlinear decay of the tail);
4. subtract 1e-6 so every derivative is strictly negative: a convex loss with
   ``phi'(0) < 0`` is classification-calibrated (Bartlett et al., 2006).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def ensloss_derivatives(
    margins: torch.Tensor, generator: torch.Generator | None = None
) -> torch.Tensor:
    """The random calibrated loss-derivatives g (one per sample), steps 1-4 above."""
    s = margins.detach().flatten()
    draws = -torch.exp(torch.randn(s.shape, generator=generator, dtype=s.dtype))
    draws = torch.sort(draws).values.clamp_min(-1.0)
    g = torch.empty_like(s)
    g[torch.argsort(s)] = draws
    tail = s > 1.0
    g[tail] = g[tail] / s[tail]
    return g - 1e-6


def ensloss(margins: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    g = ensloss_derivatives(margins, generator)
    return (g * margins.flatten()).mean()


def logistic(margins: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """log(1 + exp(-s)): binary cross-entropy on logits."""
    return F.softplus(-margins).mean()


def hinge(margins: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    return F.relu(1.0 - margins).mean()


def exponential(margins: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    return torch.exp(-margins).mean()


LOSSES = {"ensloss": ensloss, "bce": logistic, "hinge": hinge, "exp": exponential}
