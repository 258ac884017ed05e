import numpy as np
import pydantic
import pytest
import torch

from reprolab.contract import Run
from reprolab.core.transformer import n_params
from reprolab.methods.hyper_attention.config import HyperAttentionConfig
from reprolab.methods.hyper_attention.layers import LinearHA3, LinearHFA, pairwise_target
from reprolab.methods.hyper_attention.net import build, count, matched_size
from reprolab.methods.hyper_attention.tasks import make_task, one_hot


def test_ha3_matches_triple_loop():
    torch.manual_seed(0)
    d, L = 3, 4
    m = LinearHA3(d, rank=2).double()
    x = torch.randn(1, L, d, dtype=torch.double)
    c, wv = m.tensors()
    X = x[0]
    ref = torch.zeros(L, d, dtype=torch.double)
    for i in range(L):
        for j1 in range(L):
            for j2 in range(L):
                a = sum(
                    c[p, z1, z2] * X[i, p] * X[j1, z1] * X[j2, z2]
                    for p in range(d)
                    for z1 in range(d)
                    for z2 in range(d)
                )
                for t in range(d):
                    v = sum(
                        X[j1, x1] * X[j2, x2] * wv[x1, x2, t] for x1 in range(d) for x2 in range(d)
                    )
                    ref[i, t] += a * v
    torch.testing.assert_close(m(x)[0], ref)


def test_hfa_matches_formula():
    torch.manual_seed(1)
    m = LinearHFA(3, n_factors=2).double()
    X = torch.randn(5, 3, dtype=torch.double)
    cs = [q.weight.T @ k.weight for q, k in zip(m.q, m.k, strict=True)]
    a = (X @ cs[0] @ X.T) * (X @ cs[1] @ X.T)
    v = (X @ m.v[0].weight.T) * (X @ m.v[1].weight.T)
    torch.testing.assert_close(m(X[None])[0], a @ v)


def test_pairwise_target_matches_loop():
    g = torch.Generator().manual_seed(2)
    types = torch.randint(0, 4, (2, 6), generator=g)
    f, w = torch.randn(4, 4, generator=g), torch.randn(4, generator=g)
    y = pairwise_target(types, f, w)
    for b in range(2):
        for i in range(6):
            ref = sum(f[types[b, i], types[b, j]] * w[types[b, j]] for j in range(6))
            assert abs(float(y[b, i] - ref)) < 1e-5


def test_linear_sa_equals_xcxt_x_wv():
    from reprolab.core.transformer import Attention

    torch.manual_seed(3)
    m = Attention(4, heads=1, kind="linear", bias=False).double()
    X = torch.randn(6, 4, dtype=torch.double)
    c = m.q.weight.T @ m.k.weight / 2.0  # 1/sqrt(head_dim) folded into C
    wv = m.v.weight.T @ m.o.weight.T
    torch.testing.assert_close(m(X[None])[0], (X @ c @ X.T) @ X @ wv)


# ---------------------------------------------------------------- task targets


def _loop_targets(family, ents, p):
    """Brute-force targets, straight from the definitions in tasks.py's docstring."""
    n, length, _ = ents.shape
    out = np.zeros((n, length))
    for b in range(n):
        for i in range(length):
            if family == "threeway":
                t = np.einsum("ar,br,cr->abc", p["a"], p["b"], p["c"])
                u = p["p"] @ p["q"].T
                s = ents[b, :, 0]
                out[b, i] = sum(
                    t[s[i], s[j1], s[j2]] * u[s[j1], s[j2]]
                    for j1 in range(length)
                    for j2 in range(length)
                )
            elif family == "coupled":
                a, c = ents[b, :, 0], ents[b, :, 1]
                out[b, i] = sum(
                    p["f1"][a[i], a[j]] * p["f2"][c[i], c[j]] * p["w1"][a[j]] * p["w2"][c[j]]
                    for j in range(length)
                )
            elif family == "agents":
                grid, reach = int(p["grid"][0]), int(p["reach"][0])
                y = ents[b, :, 1]
                out[b, i] = -sum(
                    min(abs(y[i] - y[j]), grid - abs(y[i] - y[j])) <= reach for j in range(length)
                )
            else:
                s = ents[b, :, 0]
                out[b, i] = sum(p["f"][s[i], s[j]] * p["w"][s[j]] for j in range(length))
    return out


@pytest.mark.parametrize("family", ["pairwise", "threeway", "coupled", "agents"])
def test_targets_match_brute_force(family):
    rng = np.random.default_rng(4)
    task = make_task(family, rng, n_types=4, rank=2, n_a=3, n_b=4, grid=9, radius=1)
    ents = task.draw(rng, 3, 5)
    np.testing.assert_allclose(task.target(ents), _loop_targets(family, ents, task.params))


def test_agents_distance_wraps_around_the_cylinder():
    task = make_task("agents", np.random.default_rng(0), 2, 1, 2, 2, grid=10, radius=1)
    # y = 0 and y = 9 are 1 apart around the cylinder (reach 2R = 2); y = 5 is 5 away
    ents = np.array([[[3, 0], [7, 9], [1, 5]]])
    np.testing.assert_array_equal(task.target(ents), [[-2.0, -2.0, -1.0]])


def test_one_hot_concatenates_the_attributes():
    codes = one_hot(np.array([[[1, 0], [2, 3]]]), (3, 4))
    expected = np.zeros((1, 2, 7), dtype=np.float32)
    expected[0, 0, [1, 3]] = 1.0
    expected[0, 1, [2, 6]] = 1.0
    np.testing.assert_array_equal(codes, expected)


# ---------------------------------------------------------------- representation


def _set(linear, weight):
    with torch.no_grad():
        linear.weight.copy_(torch.as_tensor(np.asarray(weight), dtype=linear.weight.dtype))


def test_linear_sa_with_d_equal_n_represents_the_pairwise_target():
    """Thm 3.1 (sufficiency): with nn.Linear's x W^T, C = W_Q^T W_K; W_Q = I, W_K = f
    (so C = f) and W_V = w give the target exactly."""
    rng = np.random.default_rng(5)
    task = make_task("pairwise", rng, 5, 1, 2, 2, 8, 1)
    model = build("lsa", 5, 5).double()
    _set(model.attn.q, np.eye(5))
    _set(model.attn.k, task.params["f"])
    _set(model.attn.v, task.params["w"][None])
    ents = task.draw(rng, 4, 7)
    x = torch.as_tensor(one_hot(ents, task.cards), dtype=torch.double)
    np.testing.assert_allclose(model(x).detach().numpy(), task.target(ents), rtol=1e-10)


def test_hfa_represents_the_coupled_target_that_one_linear_sa_cannot():
    rng = np.random.default_rng(6)
    na, nb = 3, 4
    task = make_task("coupled", rng, 2, 1, na, nb, 8, 1)
    p, d = task.params, na + nb
    model = build("hfa", d, d).double()
    blocks = [np.zeros((d, d)), np.zeros((d, d))]
    blocks[0][:na, :na] = p["f1"]  # C^(1) reads feature a of both entities
    blocks[1][na:, na:] = p["f2"]  # C^(2) reads feature b
    for a in range(2):
        _set(model.attn.q[a], np.eye(d))
        _set(model.attn.k[a], blocks[a])
    _set(model.attn.v[0], np.r_[p["w1"], np.zeros(nb)][None])
    _set(model.attn.v[1], np.r_[np.zeros(na), p["w2"]][None])
    ents = task.draw(rng, 4, 6)
    x = torch.as_tensor(one_hot(ents, task.cards), dtype=torch.double)
    np.testing.assert_allclose(model(x).detach().numpy(), task.target(ents), rtol=1e-10)
    # no linear SA can: its output sum_j (x_i C x_j^T)(x_j W_V) is linear in the d^3
    # coefficients C_ac W_V,t, and least squares over all of them stays far off
    big = task.draw(rng, 200, 6)
    xb = one_hot(big, task.cards).astype(np.float64)
    flat = np.einsum("bia,bjc,bjt->biact", xb, xb, xb).reshape(-1, d**3)
    y = task.target(big).reshape(-1)
    coef, *_ = np.linalg.lstsq(flat, y, rcond=None)
    assert np.mean((flat @ coef - y) ** 2) > 0.05 * np.var(y)


def test_ha3_represents_the_threeway_target():
    rng = np.random.default_rng(7)
    n, r = 4, 2
    task = make_task("threeway", rng, n, r, 2, 2, 8, 1)
    p = task.params
    model = build("ha3", n, r).double()
    # C_(a z1 z2) = sum_s A_as B_z1s C_z2s; W^V_(x1 x2) = sum_q P_x1q Q_x2q (O = 1)
    for name, key in (("q", "a"), ("k1", "b"), ("k2", "c"), ("v1", "p"), ("v2", "q")):
        _set(getattr(model.attn, name), p[key].T)
    _set(model.attn.o, np.ones((1, r)))
    ents = task.draw(rng, 3, 5)
    x = torch.as_tensor(one_hot(ents, task.cards), dtype=torch.double)
    np.testing.assert_allclose(model(x).detach().numpy(), task.target(ents), rtol=1e-10)


# ---------------------------------------------------------------- parameter budgets


@pytest.mark.parametrize("variant", ["lsa", "hfa", "ha3", "sa1", "sa2"])
def test_closed_form_counts_match_the_networks(variant):
    for d, size, heads in ((4, 3, 1), (9, 5, 1), (6, 4, 2)):
        if heads > 1 and variant not in ("sa1", "sa2"):
            continue
        assert count(variant, d, size, heads, 2.0) == n_params(build(variant, d, size, heads))


def test_matched_size_is_the_nearest_count():
    target = 1000.0
    size = matched_size("sa1", 12, target)
    gaps = {s: abs(count("sa1", 12, s) - target) for s in range(1, 60)}
    assert gaps[size] == min(gaps.values())


def test_config_rejects_the_training_size_among_the_test_sizes():
    with pytest.raises(pydantic.ValidationError, match="l_train"):
        HyperAttentionConfig(l_train=20, l_test=[10, 20])
    with pytest.raises(pydantic.ValidationError, match="scales"):
        HyperAttentionConfig(scales=[2.0])


def test_samples_are_a_function_of_task_seed_and_part(tmp_path):
    """Evaluate regenerates the test sets that training never saw: asking for one part
    gives the same arrays as asking for all of them, and different seeds differ."""
    from reprolab.methods.hyper_attention import SPEC, method

    cfg = HyperAttentionConfig(
        families=["threeway"], n_train=16, n_val=8, n_test=8, l_train=4, l_test=[3, 6]
    )
    data, _ = method.prepare(Run(spec=SPEC, cfg=cfg, seeds=(0, 1), root=tmp_path), None)
    task = data["threeway"]
    every = method.splits(cfg, task, 0)
    one = method.splits(cfg, task, 0, ["test_L6"])
    assert set(one) == {"test_L6"} and set(every) == {
        "train",
        "val",
        "test_L4",
        "test_L3",
        "test_L6",
    }
    for key in ("ents", "clean", "y"):
        np.testing.assert_array_equal(one["test_L6"][key], every["test_L6"][key])
    assert every["test_L6"]["ents"].shape == (8, 6, 1)
    other = method.splits(cfg, task, 1, ["test_L6"])
    assert not np.array_equal(other["test_L6"]["clean"], one["test_L6"]["clean"])
