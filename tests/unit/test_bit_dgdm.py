"""bit_dgdm: the discrete diffusion (transition matrices, noising, posterior, sampling),
the rdkit conversion, the MMD and SBM-validity metrics and the denoiser's equivariance,
each against an independent reference (closed forms, matrix products, brute-force Bayes,
rdkit's canonical SMILES, explicit kernel sums, permuted inputs)."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
import torch
from torch import nn

from reprolab.methods.bit_dgdm import diffusion, graphs, metrics
from reprolab.methods.bit_dgdm.net import GraphDiffusion

M = torch.tensor([0.6, 0.25, 0.1, 0.05])


def test_transition_matrices_are_stochastic_and_keep_the_marginal():
    alpha, abar = diffusion.cosine_schedule(40)
    assert alpha[0] == 1 and abar[0] == 1 and (alpha[1:] < 1).all() and (abar.diff() < 0).all()
    q = diffusion.transition(alpha, M)  # (41, 4, 4)
    assert torch.allclose(q.sum(-1), torch.ones(41, 4))
    assert (q >= 0).all()
    assert torch.allclose(M @ q, M.expand(41, 4), atol=1e-6)  # m^T Q_t = m^T
    # Qbar_t in closed form equals the product Q_1 ... Q_t
    prod = torch.eye(4)
    for t in range(1, 41):
        prod = prod @ q[t]
        assert torch.allclose(prod, diffusion.transition(abar[t], M), atol=1e-5)
    # the prior: every row of Qbar_T is (almost) the marginal
    assert torch.allclose(diffusion.transition(abar[40], M), M.expand(4, 4), atol=1e-3)


def _graph_batch(b=3, n=7, kx=4, ke=4, seed=0):
    gen = torch.Generator().manual_seed(seed)
    n_nodes = torch.tensor([n, n - 2, 3])[:b]
    mask = torch.arange(n)[None] < n_nodes[:, None]
    x = torch.randint(kx, (b, n), generator=gen) * mask
    e = diffusion.symmetric_edges(torch.randint(ke, (b, n, n), generator=gen))
    e = e * diffusion.node_pair_mask(mask)
    return x, e, mask


def test_noise_keeps_edges_symmetric_and_padding_empty():
    x, e, mask = _graph_batch()
    gen = torch.Generator().manual_seed(1)
    xt, et = diffusion.noise(x, e, mask, torch.tensor([0.9, 0.5, 0.01]), M, M, gen)
    assert torch.equal(et, et.transpose(1, 2))
    assert (torch.diagonal(et, dim1=1, dim2=2) == 0).all()
    assert (xt[~mask] == 0).all()
    assert (et[~diffusion.node_pair_mask(mask)] == 0).all()
    assert not torch.equal(et, e)  # something was noised


def test_noise_frequencies_match_x0_qbar():
    """Monte Carlo: noised node types of clean type 2 follow row 2 of Qbar_t, noised edge
    types of clean type 0 (no edge) follow row 0."""
    b = 20_000
    x0 = torch.full((b, 2), 2)
    e0 = torch.zeros(b, 2, 2, dtype=torch.long)
    mask = torch.ones(b, 2, dtype=torch.bool)
    abar = torch.full((b,), 0.3)
    xt, et = diffusion.noise(x0, e0, mask, abar, M, M, torch.Generator().manual_seed(3))
    qbar = diffusion.transition(torch.tensor(0.3), M)
    freq_x = torch.bincount(xt.flatten(), minlength=4).float() / xt.numel()
    freq_e = torch.bincount(et[:, 0, 1], minlength=4).float() / b
    assert torch.allclose(freq_x, qbar[2], atol=0.01)
    assert torch.allclose(freq_e, qbar[0], atol=0.015)


def test_posterior_matches_brute_force_bayes():
    """q(z_s | z_t, x0) = q(z_t | z_s) q(z_s | x0) / q(z_t | x0), enumerated, mixed over
    a predicted p(x0)."""
    alpha, abar = diffusion.cosine_schedule(10)
    t = 6
    q_t, qs, qt = (diffusion.transition(a, M) for a in (alpha[t], abar[t - 1], abar[t]))
    p0 = torch.tensor([0.1, 0.5, 0.3, 0.1])
    for zt in range(4):
        brute = torch.zeros(4)
        for c, k in itertools.product(range(4), range(4)):
            brute[k] += p0[c] * q_t[k, zt] * qs[c, k] / qt[c, zt]
        got = diffusion.posterior(p0[None], torch.eye(4)[zt][None], q_t, qs, qt)[0]
        assert torch.allclose(got, brute / brute.sum(), atol=1e-6)


class _Oracle(nn.Module):
    """Predicts one fixed clean graph with certainty, whatever the input."""

    def __init__(self, x, e, steps):
        super().__init__()
        ref = GraphDiffusion(4, 4, x.shape[0], steps, dx=4, de=2, dy=2, layers=1, heads=1)
        for name in ("alpha", "abar", "m_x", "m_e", "n_dist"):
            self.register_buffer(name, getattr(ref, name).clone())
        self.n_dist.zero_()
        self.n_dist[x.shape[0]] = 1.0
        self.x, self.e, self.steps = x, e, steps

    def forward(self, X, E, t, node_mask):
        b = X.shape[0]
        lx = torch.nn.functional.one_hot(self.x, 4).float()[None].expand(b, -1, -1) * 50
        le = torch.nn.functional.one_hot(self.e, 4).float()[None].expand(b, -1, -1, -1) * 50
        return lx, le


def test_reverse_chain_ends_at_the_predicted_graph():
    x, e, mask = _graph_batch(b=1)
    oracle = _Oracle(x[0], e[0], steps=8)
    seen = []
    out = diffusion.sample(oracle, 5, torch.Generator().manual_seed(0), 2, seen)
    assert len(out) == 5
    for xs, es in out:
        assert torch.equal(xs, x[0]) and torch.equal(es, e[0])
    assert len(seen) == 3 * 8  # 3 batches x every step
    assert sorted({round(float(s[2][0]), 6) for s in seen}) == [
        round(k / 8, 6) for k in range(1, 9)
    ]


@pytest.mark.parametrize(
    "smiles", ["CC(=O)O", "c1ccccc1O", "N#CC1CC1", "FC(F)(F)C=O", "O=c1cc[nH]cc1", "CC1=CNC=N1"]
)
def test_rdkit_conversion_round_trips(smiles):
    g = graphs.smiles_to_graph(smiles)
    assert g is not None
    x, e = g
    assert (e == e.T).all() and (np.diag(e) == 0).all()
    rebuilt, frags = graphs.molecule_smiles(x, e)
    assert frags == 1 and rebuilt == graphs.canonical(smiles)


def test_conversion_rejects_and_validity_fails_where_it_should():
    assert graphs.smiles_to_graph("C[N+](C)(C)C") is None  # charged
    assert graphs.smiles_to_graph("CCCCCCCCCC") is None  # 10 heavy atoms
    assert graphs.smiles_to_graph("CCl") is None  # not C/N/O/F
    x = np.zeros(6, np.int8)  # a carbon with five single bonds
    e = np.zeros((6, 6), np.int8)
    e[0, 1:] = e[1:, 0] = 1
    assert graphs.molecule_smiles(x, e) == (None, 0)
    e2 = np.zeros((4, 4), np.int8)  # two disconnected C-C: valid, 2 fragments
    e2[0, 1] = e2[1, 0] = e2[2, 3] = e2[3, 2] = 1
    assert graphs.molecule_smiles(np.zeros(4, np.int8), e2) == ("CC", 2)


def _brute_mmd(xs, ys, sigma):
    def k(a, b):
        size = max(len(a), len(b))
        a, b = np.pad(a, (0, size - len(a))), np.pad(b, (0, size - len(b)))
        return np.exp(-((np.abs(a - b).sum() / 2) ** 2) / (2 * sigma**2))

    def mean(p, q):
        return np.mean([k(a, b) for a in p for b in q])

    return mean(xs, xs) + mean(ys, ys) - 2 * mean(xs, ys)


def test_mmd_is_zero_on_itself_and_grows_with_perturbation():
    rng = np.random.default_rng(0)
    base = [nx.gnp_random_graph(14, 0.3, seed=i) for i in range(30)]
    for stat, sigma in metrics.SIGMAS.items():
        h = metrics.histograms(base, stat)
        assert metrics.mmd2(h, h, sigma) == pytest.approx(0.0, abs=1e-12)
    previous = 0.0
    for p_add in (0.05, 0.2, 0.5):  # more and more extra edges
        pert = []
        for g in base:
            g = g.copy()
            for u, v in itertools.combinations(g.nodes, 2):
                if rng.random() < p_add:
                    g.add_edge(u, v)
            pert.append(g)
        hx, hy = metrics.histograms(base, "degree"), metrics.histograms(pert, "degree")
        value = metrics.mmd2(hx, hy, 1.0)
        assert value == pytest.approx(_brute_mmd(hx, hy, 1.0), abs=1e-10)
        assert value > previous
        previous = value


def test_sbm_validity_accepts_sbm_graphs_and_rejects_er_graphs():
    d = graphs.community_graphs(100, 1, 1, (12, 20), 0.7, 0.05, seed=5)
    sbm = [
        metrics.to_networkx(e) for _, e in graphs.unpad(d["x_train"], d["e_train"], d["n_train"])
    ]
    er = [nx.gnp_random_graph(16, 0.37, seed=i) for i in range(100)]
    assert metrics.community_metrics(sbm, sbm, 0.7, 0.05)["validity"] > 0.85
    assert metrics.community_metrics(er, sbm, 0.7, 0.05)["validity"] < 0.05


def test_denoiser_is_permutation_equivariant():
    torch.manual_seed(0)
    model = GraphDiffusion(4, 4, 7, 10, dx=16, de=8, dy=8, layers=2, heads=4).eval()
    x, e, mask = _graph_batch(b=2)
    xo, eo = diffusion.one_hot_graph(x, e, mask, 4, 4)
    t = torch.tensor([[0.3], [0.8]])
    perm = torch.randperm(7)
    with torch.no_grad():
        lx, le = model(xo, eo, t, mask)
        px, pe = model(xo[:, perm], eo[:, perm][:, :, perm], t, mask[:, perm])
    assert torch.allclose(px, lx[:, perm], atol=1e-5)
    assert torch.allclose(pe, le[:, perm][:, :, perm], atol=1e-5)
    assert torch.allclose(le, le.transpose(1, 2), atol=1e-6)
    assert (lx[~mask] == 0).all()
    # every projection is an nn.Linear (what the quantizer swaps)
    n_linear = sum(isinstance(m, nn.Linear) for m in model.modules())
    n_param_modules = sum(
        1 for m in model.modules() if any(True for _ in m.parameters(recurse=False))
    )
    n_norm = sum(isinstance(m, nn.LayerNorm) for m in model.modules())
    assert n_linear == n_param_modules - n_norm
