"""Rotation fusion: the symmetries are exact, the matchings recover known transforms."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from reprolab.core.transformer import vit
from reprolab.methods.rotation_fusion import fusion
from reprolab.methods.rotation_fusion.method import finetune_subsets


def _net(seed: int = 0, heads: int = 4):
    torch.manual_seed(seed)
    net = vit(28, 7, 32, 2, heads, 10).eval()
    with torch.no_grad():  # non-zero biases, so the bias terms of the symmetry matter
        for name, p in net.named_parameters():
            if name.endswith("bias"):
                p.normal_(0, 0.3)
    return net


def _x(n: int = 16) -> torch.Tensor:
    return torch.rand(n, 784, generator=torch.Generator().manual_seed(1))


def test_random_rotation_and_permutation_leave_logits_unchanged():
    net = _net()
    x = _x()
    moved = fusion.random_symmetry(net, torch.Generator().manual_seed(3))
    with torch.no_grad():
        ref, out = net(x), moved(x)
    assert torch.allclose(ref, out, atol=1e-5, rtol=0)
    # and the weights really moved (the test is not vacuous)
    assert fusion.distance(net, moved) > 1.0


@pytest.mark.parametrize("rotate,permute", [(True, False), (False, True)])
def test_each_symmetry_alone_is_exact(rotate, permute):
    net = _net(1)
    moved = fusion.random_symmetry(net, torch.Generator().manual_seed(4), rotate, permute)
    with torch.no_grad():
        assert torch.allclose(net(_x()), moved(_x()), atol=1e-5, rtol=0)


def test_rotating_q_without_k_changes_logits():
    """A control: rotating only Q (not K) is not a symmetry, so the check can fail."""
    net = _net(2)
    moved = fusion.random_symmetry(net, torch.Generator().manual_seed(5), permute=False)
    with torch.no_grad():
        moved.blocks[0].attn.k.weight.copy_(net.blocks[0].attn.k.weight)
        moved.blocks[0].attn.k.bias.copy_(net.blocks[0].attn.k.bias)
        assert (net(_x()) - moved(_x())).abs().max() > 1e-3


def test_procrustes_recovers_a_known_rotation_exactly():
    g = torch.Generator().manual_seed(0)
    b = torch.randn(6, 20, generator=g, dtype=torch.float64)
    r = fusion.random_orthogonal(6, g).double()
    o = fusion.procrustes(r @ b, b)
    assert torch.allclose(o, r, atol=1e-10)


def test_procrustes_is_the_closed_form_minimum():
    """Against the closed form ||A||^2 + ||B||^2 - 2 * nuclear norm(A B^T), and no random
    orthogonal matrix does better."""
    g = torch.Generator().manual_seed(1)
    a = torch.randn(4, 9, generator=g, dtype=torch.float64)
    b = torch.randn(4, 9, generator=g, dtype=torch.float64)
    o = fusion.procrustes(a, b)
    assert torch.allclose(o @ o.T, torch.eye(4, dtype=torch.float64), atol=1e-12)
    best = float((a - o @ b).pow(2).sum())
    closed = float(a.pow(2).sum() + b.pow(2).sum() - 2 * torch.linalg.matrix_norm(a @ b.T, "nuc"))
    assert best == pytest.approx(closed, abs=1e-9)
    for _ in range(200):
        q = fusion.random_orthogonal(4, g).double()
        assert float((a - q @ b).pow(2).sum()) >= best - 1e-9


def test_permutation_matches_brute_force_and_recovers_a_known_permutation():
    g = torch.Generator().manual_seed(2)
    b = torch.randn(5, 7, generator=g, dtype=torch.float64)
    perm = torch.randperm(5, generator=g)
    p = fusion.permutation(b[perm], b)
    assert torch.equal(p @ b, b[perm])
    a = torch.randn(5, 7, generator=g, dtype=torch.float64)
    brute = min(
        float((a - b[list(order)]).pow(2).sum()) for order in itertools.permutations(range(5))
    )
    assert float((a - fusion.permutation(a, b) @ b).pow(2).sum()) == pytest.approx(brute)


def test_align_undoes_a_random_symmetry():
    """b = a moved by a random rotation + FFN permutation: rotation matching brings it back
    onto a's weights; permutation-only matching cannot undo the rotation."""
    a = _net(3)
    b = fusion.random_symmetry(a, torch.Generator().manual_seed(6))
    back = fusion.align(a, b, "rotation", True)
    assert fusion.distance(a, back) < 1e-4
    assert fusion.distance(a, fusion.align(a, b, "permutation", True)) > 1.0
    # the FFN permutation alone is recovered by linear_sum_assignment
    c = fusion.random_symmetry(a, torch.Generator().manual_seed(7), rotate=False)
    assert fusion.distance(a, fusion.align(a, c, "none", True)) < 1e-5


@pytest.mark.parametrize("how", ["average", "perm", "rotation"])
def test_fusion_endpoints_are_the_two_models(how):
    a, b = _net(4), _net(5)
    x = _x()
    with torch.no_grad():
        assert torch.allclose(fusion.fuse(a, b, 0.0, how)(x), a(x), atol=1e-5)
        assert torch.allclose(fusion.fuse(a, b, 1.0, how)(x), b(x), atol=1e-4)


def test_matching_never_increases_the_weight_distance():
    a, b = _net(6), _net(7)
    plain = fusion.distance(a, b)
    perm = fusion.distance(a, fusion.align(a, b, "permutation", True))
    rot = fusion.distance(a, fusion.align(a, b, "rotation", True))
    assert rot <= perm + 1e-6 <= plain + 2e-6


def test_finetune_subsets_are_disjoint_and_skewed():
    y = np.repeat(np.arange(10), 200)
    a, b = finetune_subsets(y, 0.8, 0)
    assert len(np.intersect1d(a, b)) == 0 and len(a) + len(b) == len(y)
    assert np.mean(y[a] < 5) == pytest.approx(0.8, abs=0.05)
    assert np.mean(y[b] >= 5) == pytest.approx(0.8, abs=0.05)
