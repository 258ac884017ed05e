"""EnsLoss's random derivatives satisfy the convexity + calibration conditions, and
the fixed losses equal their closed forms / torch's own implementations."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from reprolab.methods.ensloss.losses import LOSSES, ensloss, ensloss_derivatives


def margins(n=257, seed=0):
    return torch.randn(n, generator=torch.Generator().manual_seed(seed)) * 2.0


def test_derivatives_are_calibrated_and_convex():
    s = margins()
    g = ensloss_derivatives(s, torch.Generator().manual_seed(1))
    assert (g < 0).all()  # phi'(s) < 0 everywhere: calibrated (phi'(0) < 0)
    assert (g >= -1.0 - 1e-6).all()
    order = torch.argsort(s)
    assert (torch.diff(g[order]) >= -1e-12).all()  # non-decreasing in s: convex loss


def test_tail_is_divided_by_the_margin():
    s = torch.tensor([2.0, 4.0, 8.0])
    # with one draw per sample sorted, recompute without the tail step to compare
    gen = torch.Generator().manual_seed(3)
    draws = torch.sort(-torch.exp(torch.randn(3, generator=gen))).values.clamp_min(-1.0)
    g = ensloss_derivatives(s, torch.Generator().manual_seed(3))
    torch.testing.assert_close(g, draws / s - 1e-6)


def test_gradient_of_the_surrogate_is_g_over_n():
    s = margins(64).requires_grad_(True)
    loss = ensloss(s, torch.Generator().manual_seed(5))
    loss.backward()
    g = ensloss_derivatives(s.detach(), torch.Generator().manual_seed(5))
    torch.testing.assert_close(s.grad, g / 64)


def test_draws_are_a_function_of_the_generator_seed():
    s = margins()
    a = ensloss_derivatives(s, torch.Generator().manual_seed(9))
    b = ensloss_derivatives(s, torch.Generator().manual_seed(9))
    c = ensloss_derivatives(s, torch.Generator().manual_seed(10))
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_fixed_losses_match_references():
    f = margins(100, seed=2)
    y01 = (torch.rand(100, generator=torch.Generator().manual_seed(4)) > 0.5).float()
    s = f * (2 * y01 - 1)
    torch.testing.assert_close(LOSSES["bce"](s), F.binary_cross_entropy_with_logits(f, y01))
    torch.testing.assert_close(LOSSES["hinge"](s), torch.clamp(1 - s, min=0).mean())
    torch.testing.assert_close(LOSSES["exp"](s), torch.exp(-s).mean())
