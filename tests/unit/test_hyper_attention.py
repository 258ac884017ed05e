import torch

from reprolab.methods.hyper_attention.layers import LinearHA3, LinearHFA, pairwise_target


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
