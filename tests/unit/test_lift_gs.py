import numpy as np
import torch

from reprolab.methods.lift_gs.render import (
    Camera,
    TorchRenderer,
    hungarian,
    iou_3d,
    project,
    render_bruteforce,
)


def _cam(w=8, h=6):
    return Camera(
        fx=10.0,
        fy=10.0,
        cx=w / 2,
        cy=h / 2,
        R=torch.eye(3),
        t=torch.tensor([0.0, 0.0, 3.0]),
        width=w,
        height=h,
    )


def _scene(n=4, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    means = (torch.rand(n, 3, generator=g, dtype=dtype) - 0.5) * 1.0
    sig = 0.1 + 0.2 * torch.rand(n, generator=g, dtype=dtype)
    op = 0.3 + 0.6 * torch.rand(n, generator=g, dtype=dtype)
    feat = torch.rand(n, 2, generator=g, dtype=dtype)
    return means, sig, op, feat


def test_projection_hand_computed():
    cam = Camera(
        fx=100.0,
        fy=50.0,
        cx=16.0,
        cy=8.0,
        R=torch.eye(3),
        t=torch.tensor([0.0, 0.0, 2.0]),
        width=32,
        height=16,
    )
    uv, z = project(torch.tensor([[0.5, -0.2, 2.0]]), cam)  # camera point (0.5, -0.2, 4)
    assert torch.allclose(uv, torch.tensor([[100 * 0.5 / 4 + 16, 50 * -0.2 / 4 + 8]]))
    assert torch.allclose(z, torch.tensor([4.0]))


def test_renderer_matches_bruteforce():
    for seed in range(3):
        scene = _scene(5, seed)
        out = TorchRenderer().render(*scene, _cam())
        ref = render_bruteforce(*scene, _cam())
        np.testing.assert_allclose(out.numpy(), ref, atol=1e-10)
        assert ref.max() > 0.05


def test_gradcheck_float64():
    means, sig, op, feat = (x.requires_grad_() for x in _scene(3, 1))
    cam = _cam(5, 4)
    f = lambda m, s, o, c: TorchRenderer(alpha_max=1.0).render(m, s, o, c, cam)  # noqa: E731
    assert torch.autograd.gradcheck(f, (means, sig, op, feat), eps=1e-6, atol=1e-5)


def test_hungarian_recovers_permutation():
    rng = np.random.default_rng(0)
    perm = rng.permutation(6)
    cost = rng.uniform(1, 2, (6, 6))
    cost[np.arange(6), perm] = 0.0
    rows, cols = hungarian(cost)
    assert np.array_equal(cols[np.argsort(rows)], perm)


def test_iou_3d_hand_built():
    assert iou_3d([1, 1, 0, 0], [1, 0, 1, 0]) == 1 / 3
    assert iou_3d([0, 0], [0, 0]) == 1.0
    assert iou_3d([1, 1], [1, 1]) == 1.0
