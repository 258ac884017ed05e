"""The tiny transformer toolkit: masks checked against explicit loops and gradients,
pluggable attention, the residual-branch identity and quantizable projections."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from reprolab.core import transformer as tf


def _loop_attention(att: tf.Attention, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Attention written as the textbook double loop over allowed (query, key) pairs."""
    b, n, d = x.shape
    h, dh = att.heads, att.head_dim
    q, k, v = att.q(x), att.k(x), att.v(x)
    out = torch.zeros(b, n, d, dtype=torch.float64)
    for bi in range(b):
        for head in range(h):
            sl = slice(head * dh, (head + 1) * dh)
            for i in range(n):
                allowed = [j for j in range(n) if mask[i, j]]
                s = torch.tensor(
                    [float(q[bi, i, sl] @ k[bi, j, sl]) / math.sqrt(dh) for j in allowed],
                    dtype=torch.float64,
                )
                w = torch.softmax(s, 0) if att.kind == "softmax" else s
                for wj, j in zip(w, allowed, strict=True):
                    out[bi, i, sl] += wj * v[bi, j, sl].double()
    return att.o(out.float())


@pytest.mark.parametrize("kind", ["softmax", "linear"])
def test_dag_mask_equals_the_loop_over_allowed_pairs(kind):
    torch.manual_seed(0)
    # a 5-node DAG: 0->2, 1->2, 2->4, 3->4, 0->3 (edges j -> i: i reads from j)
    adj = np.zeros((5, 5), dtype=int)
    for j, i in [(0, 2), (1, 2), (2, 4), (3, 4), (0, 3)]:
        adj[j, i] = 1
    mask = tf.dag_mask(adj)
    assert mask[2, 0] and mask[2, 1] and mask[2, 2] and not mask[0, 2] and not mask[4, 0]
    att = tf.Attention(8, heads=2, kind=kind)
    x = torch.randn(2, 5, 8)
    with torch.no_grad():
        fast, slow = att(x, mask), _loop_attention(att, x, mask)
    torch.testing.assert_close(fast, slow, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kind", ["softmax", "linear"])
def test_causal_mask_leaks_nothing_from_the_future(kind):
    torch.manual_seed(1)
    n = 6
    model = tf.Encoder(tf.TokenEmbedding(7, 16), 16, depth=2, out_dim=3, heads=2, kind=kind)
    model.pool = "none"
    emb = model.embed(torch.randint(0, 7, (1, n))).detach().requires_grad_(True)
    mask = tf.causal_mask(n)
    h = emb
    for block in model.blocks:
        h = block(h, mask)
    out = model.readout(h)
    for t in range(n):
        (grad,) = torch.autograd.grad(out[0, t].sum(), emb, retain_graph=True)
        assert torch.all(grad[0, t + 1 :] == 0), f"position {t} sees the future"
        assert grad[0, : t + 1].abs().sum() > 0  # and it does see the past


def test_block_is_input_plus_its_residual_branch():
    torch.manual_seed(2)
    block = tf.Block(12, heads=3)
    x = torch.randn(4, 5, 12)
    assert torch.equal(block(x), x + block.delta(x))


def test_patch_embedding_cuts_images_into_row_major_patches():
    emb = tf.PatchEmbedding(image_size=4, patch=2, dim=3)
    img = torch.arange(16.0).reshape(1, 1, 4, 4)
    patches = emb.patches(img)
    assert patches.shape == (1, 4, 4)
    assert patches[0, 0].tolist() == [0, 1, 4, 5]  # top-left patch
    assert patches[0, 3].tolist() == [10, 11, 14, 15]  # bottom-right patch
    assert torch.equal(emb.patches(img.flatten(1)), patches)  # flat input works too
    assert emb(img).shape == (1, 5, 3)  # class token + 4 patches


def test_every_projection_is_a_linear_layer_the_int8_stage_reaches():
    from reprolab.core import quant

    torch.manual_seed(3)
    model = tf.vit(dim=16, depth=2, heads=2).eval()
    names = set(quant._linears(model))
    for i in range(2):
        assert {f"blocks.{i}.attn.{p}" for p in "qkvo"} <= names
    x = torch.rand(8, 784)
    q = quant.quantize(model, "int8_dynamic", x)
    cov = quant.coverage(model, q)
    assert cov["share"] > 0.9
    assert (q(x).argmax(-1) == model(x).argmax(-1)).float().mean() >= 0.75


def test_sequence_tasks_are_seeded_and_labelled_as_documented():
    x, y = tf.sequence_task("sum_mod", 50, 9, 5, seed=4)
    x2, y2 = tf.sequence_task("sum_mod", 50, 9, 5, seed=4)
    assert np.array_equal(x, x2) and np.array_equal(y, y2)
    assert np.array_equal(y, x.sum(1) % 5)
    x, y = tf.sequence_task("first_token", 20, 4, 3, seed=0)
    assert np.array_equal(y, x[:, 0])
    # majority against a per-row Counter, ties to the smallest token
    from collections import Counter

    x, y = tf.sequence_task("majority", 200, 7, 3, seed=1)
    want = [min(t for t, c in Counter(r).items() if c == max(Counter(r).values())) for r in x]
    assert y.tolist() == want
    assert len(set(y.tolist())) == 3
    # minority: the least frequent of all vocab tokens (absent ones count 0), ties smallest
    x, y = tf.sequence_task("minority", 200, 7, 4, seed=2)
    want = [
        min(
            t for t in range(4) if r.tolist().count(t) == min(r.tolist().count(u) for u in range(4))
        )
        for r in x
    ]
    assert y.tolist() == want and len(set(want)) > 1
    # prefix_majority: the majority of the first PREFIX tokens only, whatever the length
    x, y = tf.sequence_task("prefix_majority", 200, 40, 3, seed=3)
    want = [
        min(
            t
            for t, c in Counter(r[: tf.PREFIX]).items()
            if c == max(Counter(r[: tf.PREFIX]).values())
        )
        for r in x
    ]
    assert y.tolist() == want
    assert (y != tf.sequence_task("majority", 200, 40, 3, seed=3)[1]).any()
    with pytest.raises(ValueError, match="unknown sequence task"):
        tf.sequence_task("parity", 2, 2, 2, 0)


def test_sinusoidal_positions_match_the_formula():
    table = tf.sinusoidal_positions(5, 4)
    assert table[3, 0] == pytest.approx(math.sin(3))
    assert table[3, 1] == pytest.approx(math.cos(3))
    assert table[3, 2] == pytest.approx(math.sin(3 / 100))
