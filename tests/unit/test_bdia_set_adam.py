"""SET-Adam (bdia's optimiser) against closed forms, torch's Adam where it reduces to it,
and an independent float64 reference of the three operations."""

import math

import numpy as np
import pytest
import torch

from reprolab.methods.bdia.set_adam import SETAdam


def _quadratic_run(opt_cls, x0, a, steps, **kw):
    """Minimise sum_i a_i x_i^2 / 2 from x0, one parameter tensor per entry of x0."""
    xs = [torch.tensor([v], dtype=torch.float64, requires_grad=True) for v in x0]
    opt = opt_cls(xs, **kw)
    for _ in range(steps):
        opt.zero_grad()
        loss = sum(ai * x.pow(2).sum() / 2 for ai, x in zip(a, xs, strict=True))
        loss.backward()
        opt.step()
    return torch.cat([x.detach() for x in xs])


def test_one_coordinate_layers_with_tau_and_eps_zero_are_torch_adam():
    # a layer of one coordinate has cos^2 = 1; with eps = 0 SET's sqrt(v^ + 0) is Adam's
    # sqrt(v^) + 0 and tau = 0 removes the translation: the trajectories must agree
    x0, a = [1.5, -0.7, 3.0], [1.0, 4.0, 0.25]
    ours = _quadratic_run(SETAdam, x0, a, 60, lr=0.05, eps=0.0, tau=0.0)
    ref = _quadratic_run(torch.optim.Adam, x0, a, 60, lr=0.05, eps=0.0)
    torch.testing.assert_close(ours, ref, rtol=1e-12, atol=1e-12)
    # and the translation is not a no-op: tau = 0.5 leaves Adam's path
    moved = _quadratic_run(SETAdam, x0, a, 60, lr=0.05, eps=0.0, tau=0.5)
    assert not torch.allclose(moved, ref, atol=1e-6)


def test_first_step_of_a_one_coordinate_layer_closed_form():
    # m^ = g, v^ = g^2, cos^2 = 1: step = lr / (1 - tau) * g / sqrt(g^2 + eps)
    for g, lr, tau, eps in [(2.0, 0.1, 0.5, 1e-8), (-0.3, 0.01, 0.25, 1e-2), (5.0, 1.0, 0.0, 0.0)]:
        x = torch.tensor([0.0], dtype=torch.float64, requires_grad=True)
        opt = SETAdam([x], lr=lr, tau=tau, eps=eps)
        (g * x).sum().backward()  # gradient g
        opt.step()
        assert x.item() == pytest.approx(-lr / (1 - tau) * g / math.sqrt(g * g + eps), rel=1e-12)


def test_first_step_of_a_two_coordinate_layer_closed_form():
    # g = (1, 2): v^ = (1, 4), cos^2 = 25 / 34, w = 5/sqrt(34) (1, 2),
    # w~ = w - 0.5 * min w = 5/sqrt(34) (0.5, 1.5), step = lr * g / w~
    # = lr * sqrt(34) / 5 * (2, 4/3)
    lr = 0.1
    x = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    opt = SETAdam([x], lr=lr, eps=0.0, tau=0.5)
    (torch.tensor([1.0, 2.0], dtype=torch.float64) * x).sum().backward()
    opt.step()
    expect = -lr * math.sqrt(34) / 5 * np.array([2.0, 4.0 / 3.0])
    np.testing.assert_allclose(x.detach().numpy(), expect, rtol=1e-12)


def _numpy_set_adam(grads_fn, x0, steps, lr, b1, b2, eps, tau):
    """An independent float64 loop of the paper's three operations on one layer."""
    x = np.array(x0, dtype=np.float64)
    m, v = np.zeros_like(x), np.zeros_like(x)
    for t in range(1, steps + 1):
        g = grads_fn(x)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        cos = v.sum() / (math.sqrt(len(v)) * np.linalg.norm(v))  # angle to the all-ones
        w = np.sqrt(cos**2 * v / (1 - b2**t) + eps)
        w = w - tau * w.min()
        x = x - lr / (1 - b1**t) * m / w
    return x


def test_layer_trajectory_matches_an_independent_reference():
    a = np.array([0.5, 2.0, 8.0, 0.1, 3.0])
    x0 = [1.0, -2.0, 0.5, 4.0, -1.0]
    kw = {"lr": 0.02, "eps": 1e-8, "tau": 0.5}
    ref = _numpy_set_adam(lambda x: a * x, x0, 40, b1=0.9, b2=0.999, **kw)
    x = torch.tensor(x0, dtype=torch.float64, requires_grad=True)
    opt = SETAdam([x], **kw)
    for _ in range(40):
        opt.zero_grad()
        (torch.from_numpy(a) * x.pow(2) / 2).sum().backward()
        opt.step()
    np.testing.assert_allclose(x.detach().numpy(), ref, rtol=1e-10, atol=1e-12)


def test_suppresses_the_range_of_stepsizes_and_survives_tiny_moments():
    # the point of SET: with the same eps, the spread max/min of the per-coordinate
    # stepsizes (step / m^) is far smaller than torch Adam's on the same gradients (eps
    # under the root floors the denominator at sqrt(eps) where Adam's floor is eps)
    g = torch.tensor([1e-6, 1e-3, 1.0, 10.0], dtype=torch.float64)

    def stepsizes(opt_cls, **kw):
        x = torch.zeros(4, dtype=torch.float64, requires_grad=True)
        opt = opt_cls([x], lr=1.0, eps=1e-8, **kw)
        (g * x).sum().backward()
        opt.step()
        s = (-x.detach() / g).numpy()
        return s.max() / s.min()

    assert stepsizes(SETAdam) < stepsizes(torch.optim.Adam) / 10
    # moments far below float32's normal range: no nan, no inf
    y = torch.zeros(3, requires_grad=True)
    opt = SETAdam([y], lr=1e-3)
    (torch.tensor([1e-25, 2e-25, 0.0]) * y).sum().backward()
    opt.step()
    assert torch.isfinite(y).all()


def test_rejects_a_tau_that_would_zero_the_denominator():
    with pytest.raises(ValueError, match="tau"):
        SETAdam([torch.zeros(1, requires_grad=True)], tau=1.0)


def test_the_module_uses_set_adam_when_configured():
    from reprolab.core.transformer import vit
    from reprolab.methods.bdia.module import ViTClassifier

    torch.manual_seed(0)
    net = vit(image_size=8, patch=4, dim=8, depth=2, heads=2)
    conf = ViTClassifier(net, "standard", 9, 0, 3e-3, 4, "set_adam").configure_optimizers()
    assert isinstance(conf["optimizer"], SETAdam)
    conf = ViTClassifier(net, "standard", 9, 0, 3e-3, 4, "adam").configure_optimizers()
    assert isinstance(conf["optimizer"], torch.optim.Adam)
