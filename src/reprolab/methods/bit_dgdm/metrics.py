"""Sample-quality metrics: validity / uniqueness / novelty (molecules: DiGress's policy;
community graphs: a two-block SBM test, as DiGress / SPECTRE do for SBM graphs) and
MMD^2 between graph-statistic histograms (GraphRNN / GRAN / DiGress evaluation).

MMD: each graph gives a normalized histogram; two sets X, Y of histograms compare by
``MMD^2 = mean k(X, X) + mean k(Y, Y) - 2 mean k(X, Y)`` (means over all pairs, i = j
included, as GRAN's ``compute_mmd``), with the Gaussian total-variation kernel
``k(a, b) = exp(-TV(a, b)^2 / (2 sigma^2))``, ``TV = |a - b|_1 / 2``. Statistics:
degree (sigma 1), clustering coefficient in 100 bins on [0, 1] (sigma 0.1), and, in
place of 4-node orbit counts (ORCA), the number of triangles through each node
(sigma 1): a 3-node orbit, cheap to count exactly.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import networkx as nx
import numpy as np
from scipy.spatial.distance import cdist
from scipy.stats import norm

from reprolab.methods.bit_dgdm import graphs

SIGMAS = {"degree": 1.0, "clustering": 0.1, "triangles": 1.0}


def to_networkx(e: np.ndarray) -> nx.Graph:
    return nx.from_numpy_array((np.asarray(e) > 0).astype(np.int8))


def _pad(rows: Sequence[np.ndarray]) -> np.ndarray:
    width = max(len(r) for r in rows)
    out = np.zeros((len(rows), width))
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
    return out


def histograms(gs: Sequence[nx.Graph], stat: str) -> list[np.ndarray]:
    out = []
    for g in gs:
        if stat == "degree":
            h = np.asarray(nx.degree_histogram(g), float)
        elif stat == "clustering":
            h, _ = np.histogram(list(nx.clustering(g).values()), bins=100, range=(0.0, 1.0))
        elif stat == "triangles":
            h = np.bincount(list(nx.triangles(g).values())).astype(float)
        else:
            raise ValueError(f"unknown graph statistic {stat!r}")
        h = np.asarray(h, float)
        out.append(h / h.sum() if h.sum() > 0 else h)
    return out


def mmd2(xs: Sequence[np.ndarray], ys: Sequence[np.ndarray], sigma: float) -> float:
    """Biased MMD^2 with the Gaussian-TV kernel between two sets of histograms."""
    both = _pad([*xs, *ys])
    a, b = both[: len(xs)], both[len(xs) :]

    def k(p, q):
        tv = cdist(p, q, "cityblock") / 2.0
        return np.exp(-(tv**2) / (2 * sigma**2)).mean()

    return float(k(a, a) + k(b, b) - 2 * k(a, b))


def graph_mmds(gen: Sequence[nx.Graph], ref: Sequence[nx.Graph]) -> dict[str, float]:
    out = {
        f"mmd_{stat}": mmd2(histograms(gen, stat), histograms(ref, stat), sigma)
        for stat, sigma in SIGMAS.items()
    }
    out["mmd_avg"] = float(np.mean(list(out.values())))
    return out


def molecule_metrics(
    samples: Sequence[tuple[np.ndarray, np.ndarray]], train_smiles: set[str]
) -> dict[str, float]:
    """validity: share of sampled graphs whose molecule sanitizes; uniqueness: distinct
    largest-fragment SMILES among the valid ones / valid; novelty: distinct valid SMILES
    not in the training subset / distinct; connected: share of valid with one fragment."""
    valid, connected = [], 0
    for x, e in samples:
        smi, frags = graphs.molecule_smiles(x, e)
        if smi is not None:
            valid.append(smi)
            connected += frags == 1
    unique = set(valid)
    n = max(len(samples), 1)
    return {
        "validity": len(valid) / n,
        "uniqueness": len(unique) / max(len(valid), 1),
        "novelty": len(unique - train_smiles) / max(len(unique), 1),
        "connected": connected / max(len(valid), 1),
        "valid_unique": len(unique) / n,
    }


def sbm_p_values(g: nx.Graph, p_in: float, p_out: float) -> tuple[float, float]:
    """Two-sided p-values that the within- and between-block edge densities of ``g`` are
    ``p_in`` and ``p_out``: blocks from a Kernighan-Lin bisection (seeded), then a score
    test per density, ``z = (k / N - p) / sqrt(p (1 - p) / N)`` over the N node pairs."""
    blocks = nx.algorithms.community.kernighan_lin_bisection(g, seed=0)
    label = {v: i for i, block in enumerate(blocks) for v in block}
    a, b = (len(block) for block in blocks)
    intra = sum(label[u] == label[v] for u, v in g.edges())
    counts = (
        (intra, a * (a - 1) / 2 + b * (b - 1) / 2, p_in),
        (g.number_of_edges() - intra, a * b, p_out),
    )
    out = []
    for k, pairs, p in counts:
        if pairs == 0 or p in (0.0, 1.0):
            out.append(1.0 if pairs == 0 or k / pairs == p else 0.0)
            continue
        z = (k / pairs - p) / np.sqrt(p * (1 - p) / pairs)
        out.append(float(2 * norm.sf(abs(z))))
    return out[0], out[1]


def community_metrics(
    samples: Sequence[nx.Graph], train: Sequence[nx.Graph], p_in: float, p_out: float
) -> dict[str, float]:
    """validity: share of graphs with at least 2 nodes whose two SBM densities both pass
    the score test at level 0.025 (Bonferroni: 5% overall); uniqueness / novelty: distinct
    Weisfeiler-Lehman hashes among the valid graphs / not among the training graphs'."""
    valid = [g for g in samples if len(g) >= 2 and min(sbm_p_values(g, p_in, p_out)) > 0.025]
    with warnings.catch_warnings():  # networkx 3.5+ notes its hashes changed in 3.5
        warnings.simplefilter("ignore", UserWarning)
        hashes = {nx.weisfeiler_lehman_graph_hash(g, iterations=3) for g in valid}
        seen = {nx.weisfeiler_lehman_graph_hash(g, iterations=3) for g in train}
    return {
        "validity": len(valid) / max(len(samples), 1),
        "uniqueness": len(hashes) / max(len(valid), 1),
        "novelty": len(hashes - seen) / max(len(hashes), 1),
        "connected": sum(nx.is_connected(g) for g in valid) / max(len(valid), 1),
        "valid_unique": len(hashes) / max(len(samples), 1),
    }
