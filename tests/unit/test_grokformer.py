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


# ------------------------------------------------------------ training options


class _Scripted(torch.nn.Module):
    """A node model whose evaluation logits are read from a table, one (N, C) slice per
    epoch: a training-mode forward counts the epoch (a persistent buffer, so the state
    kept says which epoch it is from) and gives logits w * e_0, so Adam moves the one
    weight w every epoch; each evaluation-mode forward records w."""

    def __init__(self, table: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("table", table, persistent=False)
        self.register_buffer("epoch", torch.zeros((), dtype=torch.long))
        self.w = torch.nn.Parameter(torch.zeros(()))
        self.trace: list[float] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c = self.table.shape[1:]
        if self.training:
            self.epoch += 1
            return self.w * torch.nn.functional.one_hot(torch.zeros(n, dtype=torch.long), c)
        self.trace.append(float(self.w))
        return self.table[int(self.epoch) - 1]


def _scripted_case(correct: list[int], margin: list[float], n: int = 100, c: int = 3):
    """Per epoch e, the first ``correct[e]`` validation nodes get logits margin[e] on
    their class, the other validation nodes margin[e] on a wrong class. Returns the
    table, the data, and the validation loss and accuracy per epoch (numpy, by hand)."""
    y = np.arange(n) % c
    _, val, _ = graphs.split(n, [0.6, 0.2, 0.2], 0)
    table = np.zeros((len(correct), n, c), dtype=np.float32)
    losses, accs = [], []
    for e, (k, m) in enumerate(zip(correct, margin, strict=True)):
        target = np.where(np.arange(len(val)) < k, y[val], (y[val] + 1) % c)
        table[e, val, target] = m
        z = table[e, val].astype(np.float64)
        logp = z - np.log(np.exp(z).sum(1, keepdims=True))
        losses.append(-logp[np.arange(len(val)), y[val]].mean())
        accs.append(k / len(val))
    data = {"x": np.zeros((n, 2), dtype=np.float32), "y": y}
    return torch.as_tensor(table), data, np.array(losses), np.array(accs)


def _fit_scripted(table, data, **cfg):
    from reprolab.contract import Unit
    from reprolab.methods.grokformer.config import GrokFormerConfig
    from reprolab.methods.grokformer.method import _fit_node

    model = _Scripted(table)
    cfg = GrokFormerConfig(epochs=len(table), history_every=4, **cfg)
    history = _fit_node(model, Unit("t", "grokformer", 0), cfg, data)
    return model, history


def test_val_loss_patience_counts_epochs_since_the_minimum():
    from reprolab.methods.grokformer.method import ValLossPatience

    rule = ValLossPatience(3)
    losses = [1.0, 0.8, 0.9, 0.8, 0.7, 0.75, 0.7, 0.71]  # ties are no improvement
    stops = [rule.update(v, e) for e, v in enumerate(losses, 1)]
    assert stops == [False] * 7 + [True]
    assert (rule.min_epoch, rule.min_loss) == (5, 0.7)


# 20 validation nodes. (a) The validation loss falls to epoch 5 and rises after it; the
# accuracy peaks at epoch 5 too. (b) The accuracy peaks at epoch 3 and the loss still
# falls to epoch 5 (larger margins): the state kept is epoch 3's, as the reference
# reports the test accuracy at the best validation accuracy.
CASES = {
    "loss_and_acc_best_at_5": ([10, 12, 14, 16, 18, *range(15, 2, -1)], [1.0] * 18, 5, 5),
    "acc_best_at_3_loss_at_5": ([12, 14, 18, 17, 17, *range(16, 3, -1)], [1.0] * 3 + [2.0] + [2.4] * 14, 3, 5),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("patience", [1, 3, 7])
def test_early_stopping_on_validation_loss(case, patience):
    correct, margin, best_epoch, min_epoch = CASES[case]
    table, data, losses, accs = _scripted_case(correct, margin)
    # the hand-built case is what it says: loss minimum at min_epoch, strictly rising after
    assert int(np.argmin(losses)) + 1 == min_epoch
    assert np.all(np.diff(losses[min_epoch - 1 :]) > 0)
    assert int(np.argmax(accs)) + 1 == best_epoch  # argmax: the first of the maximum
    model, history = _fit_scripted(table, data, patience=patience)
    stop = min_epoch + patience
    assert len(model.trace) == stop  # epochs run: patience epochs after the minimum
    last = history[-1]
    assert last["epoch"] == last["stop_epoch"] == stop
    assert last["stopped_early"] == 1.0
    assert (last["best_epoch"], last["min_val_loss_epoch"]) == (best_epoch, min_epoch)
    # the weights returned are the best epoch's (the scripted weight, and its epoch count)
    assert int(model.epoch) == best_epoch
    assert float(model.w.detach()) == model.trace[best_epoch - 1]
    assert float(model.w.detach()) != model.trace[-1]
    # logged entries: every history_every epochs, then the stop; validation loss by hand
    assert [h["epoch"] for h in history] == [*range(4, stop, 4), stop]
    for h in history:
        assert h["val_loss"] == pytest.approx(losses[h["epoch"] - 1], rel=1e-6)
        assert h["val_acc"] == pytest.approx(accs[h["epoch"] - 1])


def test_patience_not_reached_or_none_trains_every_epoch():
    correct, margin, best_epoch, min_epoch = CASES["loss_and_acc_best_at_5"]
    table, data, *_ = _scripted_case(correct, margin)
    epochs = len(table)
    # patience longer than the rise: all epochs, best state restored, stopped_early 0
    model, history = _fit_scripted(table, data, patience=epochs)
    assert len(model.trace) == epochs and int(model.epoch) == best_epoch
    assert history[-1]["stop_epoch"] == epochs and history[-1]["stopped_early"] == 0.0
    # None: every epoch, and the history as before the option (no early-stopping keys)
    model, history = _fit_scripted(table, data)
    assert len(model.trace) == epochs and int(model.epoch) == best_epoch
    assert [h["epoch"] for h in history] == [4, 8, 12, 16, 18]
    assert all(set(h) == {"epoch", "train_loss", "val_acc"} for h in history)


def test_early_stopping_on_a_real_grokformer():
    """The whole path on a small CSBM: the stop is patience epochs after the validation
    loss minimum, the state kept has the logged best validation accuracy."""
    from reprolab.contract import Unit
    from reprolab.methods.grokformer.config import GrokFormerConfig
    from reprolab.methods.grokformer.method import _fit_node
    from reprolab.methods.grokformer.net import GrokFormer

    g = graphs.csbm(60, 3, 4, 0.8, 8.0, 1.0, seed=1)
    lam, u = graphs.eigendecomposition(g["edge_index"], 60)
    data = {"x": g["x"].astype(np.float32), "y": g["y"].astype(np.int64)}
    graph = {
        "evals": torch.as_tensor(lam, dtype=torch.float32),
        "evecs": torch.as_tensor(u, dtype=torch.float32),
    }
    cfg = GrokFormerConfig(hidden=8, grok_freqs=4, epochs=500, patience=5, history_every=1)
    torch.manual_seed(0)
    model = GrokFormer(graph, 4, 3, cfg)
    history = _fit_node(model, Unit("t", "grokformer", 0), cfg, data)
    last = history[-1]
    assert last["stopped_early"] == 1.0 and last["stop_epoch"] < cfg.epochs
    assert last["stop_epoch"] == last["min_val_loss_epoch"] + cfg.patience
    losses = [h["val_loss"] for h in history]
    assert int(np.argmin(losses)) + 1 == last["min_val_loss_epoch"]
    accs = [h["val_acc"] for h in history]
    assert int(np.argmax(accs)) + 1 == last["best_epoch"]
    _, val, _ = graphs.split(60, cfg.split, 0)
    model.eval()
    with torch.no_grad():
        pred = model(torch.as_tensor(data["x"])).argmax(1).numpy()
    assert np.mean(pred[val] == data["y"][val]) == pytest.approx(max(accs))


def _node_models(**cfg):
    from reprolab.methods.grokformer.config import GrokFormerConfig
    from reprolab.methods.grokformer.net import NODE_MODELS

    edges, n = _small_graph()
    lam, u = graphs.eigendecomposition(edges, n)
    graph = {
        "edge_index": torch.as_tensor(edges),
        "evals": torch.as_tensor(lam, dtype=torch.float32),
        "evecs": torch.as_tensor(u, dtype=torch.float32),
    }
    c = GrokFormerConfig(**cfg)
    out = {}
    for name, cls in NODE_MODELS.items():
        torch.manual_seed(0)
        out[name] = cls(graph, c.features, c.classes, c)
    return out, c


def _count(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def _grokformer_params(d: int, h: int, c: int, k: int, m: int) -> int:
    """Encoder d -> h -> c; K Fourier terms Linear(2M + 1, 1) and alpha Linear(K, 1, no
    bias); two LayerNorm(c); attention q, k, v, o and the FFN's two Linear(c, c)."""
    return (d * h + h + h * c + c) + k * (2 * m + 2) + k + 2 * 2 * c + 6 * (c * c + c)


@pytest.mark.parametrize("grok_hidden", [None, 5, 128])
def test_grok_hidden_widens_only_grokformers_encoder(grok_hidden):
    base, _ = _node_models(hidden=16)
    models, c = _node_models(hidden=16, grok_hidden=grok_hidden)
    width = 16 if grok_hidden is None else grok_hidden
    assert _count(models["grokformer"]) == _grokformer_params(
        c.features, width, c.classes, c.grok_orders, c.grok_freqs
    )
    assert models["grokformer"].encoder[1].out_features == width
    for name in base:
        if name != "grokformer":
            assert _count(models[name]) == _count(base[name]), name


def test_grok_init_reference_normal_001_and_zero_bias():
    models, _ = _node_models(grok_hidden=128, grok_init="reference")
    default, _ = _node_models(grok_hidden=128)
    linears = [m for m in models["grokformer"].modules() if isinstance(m, torch.nn.Linear)]
    # encoder 2, Fourier terms 3 + alpha, attention q/k/v/o, FFN 2
    assert len(linears) == 2 + 3 + 1 + 4 + 2
    weights = torch.cat([m.weight.detach().reshape(-1) for m in linears])
    assert weights.numel() > 2000
    assert float(weights.std()) == pytest.approx(0.01, rel=0.05)
    assert abs(float(weights.mean())) < 0.001
    assert float(weights.abs().max()) < 0.06
    for m in linears:
        if m.bias is not None:
            assert torch.count_nonzero(m.bias) == 0
    for m in models["grokformer"].modules():  # LayerNorms as PyTorch makes them
        if isinstance(m, torch.nn.LayerNorm):
            assert torch.all(m.weight == 1) and torch.all(m.bias == 0)
    # the default init is PyTorch's, much wider; the baselines do not change
    default_w = torch.cat(
        [m.weight.detach().reshape(-1) for m in default["grokformer"].modules()
         if isinstance(m, torch.nn.Linear)]
    )  # fmt: skip
    assert float(default_w.std()) > 0.05
    for name in models:
        if name != "grokformer":
            a, b = models[name].state_dict(), default[name].state_dict()
            assert all(torch.equal(a[k], b[k]) for k in a), name
