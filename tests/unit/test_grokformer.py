"""grokformer: the Fourier filter, the Laplacian eigendecomposition, CSBM homophily, R^2,
each against an independent reference (closed form, networkx/scipy, sklearn)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.linalg
import torch
from sklearn.metrics import r2_score

from reprolab.methods.grokformer import graphs
from reprolab.methods.grokformer.net import FourierFilter, GrokFilter, spectral_apply


def _small_graph() -> tuple[np.ndarray, int]:
    g = nx.Graph([(0, 1), (1, 2), (2, 0), (2, 3), (3, 4), (4, 5), (5, 3), (1, 4)])
    g.add_node(6)  # an isolated node
    edges = np.array(list(g.edges())).T
    return np.concatenate([edges, edges[::-1]], axis=1), g.number_of_nodes()


def test_fourier_filter_closed_form():
    """h(lambda) = sum_k alpha_k [w_k0 + sum_m a_km sin(m lambda^k) + b_km cos(m lambda^k)],
    computed by hand for random coefficients (the constant feature's weight set to 0)."""
    torch.manual_seed(0)
    f = FourierFilter(orders=3, freqs=4)
    with torch.no_grad():
        for t in f.terms:
            t.weight[0, 0] = 0.0
    lam = torch.linspace(0, 2, 11, dtype=torch.float32)
    expect = np.zeros(11)
    ln = lam.double().numpy()
    for k in range(1, 4):
        w = f.terms[k - 1].weight.detach().double().numpy()[0]
        b0 = float(f.terms[k - 1].bias.detach())
        inner = b0 + sum(
            w[m] * np.sin(m * ln**k) + w[4 + m] * np.cos(m * ln**k) for m in range(1, 5)
        )
        expect += float(f.alpha.weight[0, k - 1].detach()) * inner
    np.testing.assert_allclose(f(lam).detach().numpy(), expect, rtol=1e-5, atol=1e-5)


def test_filter_with_only_constants_is_scaled_identity():
    """All coefficients zero except w_k0: h is the constant sum_k alpha_k w_k0, so
    U diag(h) U^T is that constant times the identity."""
    edges, n = _small_graph()
    lam, u = graphs.eigendecomposition(edges, n)
    graph = {
        "edge_index": torch.as_tensor(edges),
        "evals": torch.as_tensor(lam, dtype=torch.float32),
        "evecs": torch.as_tensor(u, dtype=torch.float32),
    }

    class Cfg:
        grok_orders, grok_freqs = 3, 5

    model = GrokFilter(graph, Cfg())
    w0 = [0.7, -0.2, 1.5]
    alpha = [0.5, 2.0, -1.0]
    with torch.no_grad():
        for t, b in zip(model.filter.terms, w0, strict=True):
            t.weight.zero_()
            t.bias.fill_(b)
        model.filter.alpha.weight.copy_(torch.tensor([alpha]))
    scale = sum(a * b for a, b in zip(alpha, w0, strict=True))
    x = torch.randn(n, 4)
    out = model(x)
    np.testing.assert_allclose(out.detach().numpy(), scale * x.numpy(), atol=1e-5)
    dense = model(torch.eye(n)).detach().numpy()
    np.testing.assert_allclose(dense, scale * np.eye(n), atol=1e-5)


def test_laplacian_against_networkx_and_scipy():
    edges, n = _small_graph()
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(edges.T.tolist())
    ref = nx.normalized_laplacian_matrix(g, nodelist=range(n)).toarray()
    ours = graphs.normalized_laplacian(graphs.adjacency(edges, n))
    np.testing.assert_allclose(ours, ref, atol=1e-12)
    lam, u = graphs.eigendecomposition(edges, n)
    np.testing.assert_allclose(lam, scipy.linalg.eigh(ref, eigvals_only=True), atol=1e-10)
    np.testing.assert_allclose(u @ np.diag(lam) @ u.T, ref, atol=1e-10)
    np.testing.assert_allclose(u.T @ u, np.eye(n), atol=1e-10)


def test_laplacian_against_torch_geometric():
    from torch_geometric.utils import get_laplacian, to_dense_adj

    edges = graphs.grid_edges(4)
    ei, w = get_laplacian(torch.as_tensor(edges), normalization="sym", num_nodes=16)
    ref = to_dense_adj(ei, edge_attr=w, max_num_nodes=16)[0].double().numpy()
    np.testing.assert_allclose(
        graphs.normalized_laplacian(graphs.adjacency(edges, 16)), ref, atol=1e-6
    )
    # a path graph P_n has normalized Laplacian eigenvalues 1 - cos(pi k / (n - 1))
    path = np.array([[0, 1, 2, 3, 1, 2, 3, 4], [1, 2, 3, 4, 0, 1, 2, 3]])
    lam, _ = graphs.eigendecomposition(path, 5)
    np.testing.assert_allclose(lam, 1 - np.cos(np.pi * np.arange(5) / 4), atol=1e-10)


@pytest.mark.parametrize("h", [0.1, 0.5, 0.9])
def test_csbm_realised_homophily_close_to_requested(h):
    g = graphs.csbm(600, 3, 4, h, degree=10.0, separation=1.0, seed=3)
    realised = graphs.edge_homophily(g["edge_index"], g["y"])
    assert abs(realised - h) < 0.05
    from torch_geometric.utils import homophily

    ref = homophily(torch.as_tensor(g["edge_index"]), torch.as_tensor(g["y"]), method="edge")
    assert realised == pytest.approx(float(ref), abs=1e-6)
    # undirected: every edge in both directions
    pairs = set(map(tuple, g["edge_index"].T.tolist()))
    assert all((b, a) in pairs for a, b in pairs)


def test_r2_against_sklearn():
    rng = np.random.default_rng(0)
    y = rng.normal(size=200)
    for pred in (y + 0.3 * rng.normal(size=200), rng.normal(size=200), np.full(200, y.mean())):
        assert graphs.r2(y, pred) == pytest.approx(r2_score(y, pred), abs=1e-12)


def test_responses_and_target_filtering():
    lam = np.array([0.0, 1.0, 2.0])
    np.testing.assert_allclose(graphs.response("band", lam), [np.exp(-10), 1, np.exp(-10)])
    comb = graphs.response("comb", np.array([0.0, 0.5, 1.0, 1.5, 2.0]))
    np.testing.assert_allclose(comb, [0, 1, 0, 1, 0], atol=1e-12)
    np.testing.assert_allclose(graphs.response("low", lam) + graphs.response("high", lam), 1)
    # the spectral filter of the target response equals the closed-form target matrix
    edges = graphs.grid_edges(3)
    lam, u = graphs.eigendecomposition(edges, 9)
    x = torch.randn(9, 2, dtype=torch.float64)
    resp = torch.as_tensor(graphs.response("low", lam))
    out = spectral_apply(torch.as_tensor(u), resp, x).numpy()
    lap = graphs.normalized_laplacian(graphs.adjacency(edges, 9))
    w, v = np.linalg.eigh(lap)
    ref = v @ np.diag(np.exp(-10 * np.clip(w, 0, 2) ** 2)) @ v.T @ x.numpy()
    np.testing.assert_allclose(out, ref, atol=1e-10)


def test_gpr_hops_equal_dense_polynomial():
    from reprolab.methods.grokformer.net import Hops, gcn_operator

    edges = graphs.grid_edges(3)
    op = gcn_operator(torch.as_tensor(edges), 9)
    a = graphs.adjacency(edges, 9) + np.eye(9)
    d = a.sum(1) ** -0.5
    ahat = d[:, None] * a * d[None, :]
    hops = Hops(op, 3, 0.1)
    x = torch.randn(9, 2)
    gam = hops.gamma.weight.detach().double().numpy()[0]
    ref = sum(gam[k] * np.linalg.matrix_power(ahat, k) @ x.double().numpy() for k in range(4))
    np.testing.assert_allclose(hops(x).detach().numpy(), ref, atol=1e-5)
