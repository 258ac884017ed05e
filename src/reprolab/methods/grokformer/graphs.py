"""Graph data of the grokformer method: the normalized Laplacian and its eigendecomposition,
contextual stochastic block models (CSBM) at a requested edge homophily, the 2D grid of
the filter-fitting task, its target spectral responses, and R^2 / SSE.

Pure numpy here, except :func:`csbm`, which draws the edges with torch_geometric's
``stochastic_blockmodel_graph`` (imported inside it).
"""

from __future__ import annotations

import numpy as np

#: target responses of the filter-fitting task on the normalized Laplacian spectrum
#: [0, 2] (the benchmark of BernNet and Specformer)
RESPONSES = ("low", "high", "band", "reject", "comb")


def response(name: str, lam: np.ndarray) -> np.ndarray:
    """h(lambda) of a known filter: low-pass exp(-10 l^2), high-pass 1 - exp(-10 l^2),
    band-pass exp(-10 (l - 1)^2), band-rejection 1 - exp(-10 (l - 1)^2), comb |sin(pi l)|."""
    lam = np.asarray(lam, dtype=np.float64)
    if name == "low":
        return np.exp(-10 * lam**2)
    if name == "high":
        return 1 - np.exp(-10 * lam**2)
    if name == "band":
        return np.exp(-10 * (lam - 1) ** 2)
    if name == "reject":
        return 1 - np.exp(-10 * (lam - 1) ** 2)
    if name == "comb":
        return np.abs(np.sin(np.pi * lam))
    raise ValueError(f"unknown response {name!r}: one of {RESPONSES}")


def adjacency(edge_index: np.ndarray, n: int) -> np.ndarray:
    """Dense symmetric 0/1 adjacency from an edge list (2, E); self loops dropped."""
    a = np.zeros((n, n), dtype=np.float64)
    src, dst = np.asarray(edge_index)
    a[src, dst] = 1.0
    a[dst, src] = 1.0
    np.fill_diagonal(a, 0.0)
    return a


def normalized_laplacian(a: np.ndarray) -> np.ndarray:
    """L = I - D^-1/2 A D^-1/2 (isolated nodes: a row of the identity, as networkx)."""
    deg = a.sum(axis=1)
    inv = np.where(deg > 0, 1.0 / np.sqrt(np.where(deg > 0, deg, 1.0)), 0.0)
    lap = -(inv[:, None] * a * inv[None, :])
    lap[np.diag_indices_from(lap)] += (deg > 0).astype(np.float64)
    return lap


def eigendecomposition(edge_index: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(eigenvalues ascending, eigenvectors as columns) of the normalized Laplacian,
    eigenvalues clipped to its spectrum [0, 2]."""
    lam, u = np.linalg.eigh(normalized_laplacian(adjacency(edge_index, n)))
    return np.clip(lam, 0.0, 2.0), u


def grid_edges(side: int) -> np.ndarray:
    """The 4-neighbour side x side lattice, each undirected edge in both directions."""
    idx = np.arange(side * side).reshape(side, side)
    right = np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()])
    down = np.stack([idx[:-1, :].ravel(), idx[1:, :].ravel()])
    und = np.concatenate([right, down], axis=1)
    return np.concatenate([und, und[::-1]], axis=1).astype(np.int64)


def grid_signals(side: int, count: int, seed: int) -> np.ndarray:
    """Seeded 2D images on the grid, (count, side*side): a smooth part (random Gaussian
    blobs) plus white noise, so every band of the spectrum carries energy."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:side, 0:side] / side
    out = np.empty((count, side * side))
    for i in range(count):
        img = rng.normal(0.0, 0.5, (side, side))
        for _ in range(3):
            cy, cx = rng.random(2)
            width = rng.uniform(0.05, 0.3)
            img += rng.normal() * np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * width**2))
        out[i] = img.ravel()
    return out


def csbm_probabilities(homophily: float, degree: float, n_per_class: int, classes: int):
    """(p_in, p_out) of an SBM with equal classes whose expected edge homophily is
    ``homophily`` at expected degree ``degree``: p_in n = h deg, p_out (C - 1) n =
    (1 - h) deg."""
    p_in = homophily * degree / n_per_class
    p_out = (1 - homophily) * degree / ((classes - 1) * n_per_class)
    if p_in > 1 or p_out > 1:
        raise ValueError("degree too large for the class size")
    return p_in, p_out


def csbm(
    nodes: int,
    classes: int,
    features: int,
    homophily: float,
    degree: float,
    separation: float,
    seed: int,
) -> dict[str, np.ndarray]:
    """A contextual SBM: equal classes, edges from torch_geometric's
    ``stochastic_blockmodel_graph`` (p_in, p_out from :func:`csbm_probabilities`),
    features x_i = mu_{y_i} + N(0, I) with class means of norm ``separation``."""
    import torch
    from torch_geometric.utils import stochastic_blockmodel_graph

    n = nodes // classes
    p_in, p_out = csbm_probabilities(homophily, degree, n, classes)
    probs = torch.full((classes, classes), p_out)
    probs.fill_diagonal_(p_in)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        edge_index = stochastic_blockmodel_graph([n] * classes, probs, directed=False)
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(classes), n)
    means = rng.normal(size=(classes, features))
    means *= separation / np.linalg.norm(means, axis=1, keepdims=True)
    x = means[y] + rng.normal(size=(n * classes, features))
    return {"edge_index": edge_index.numpy().astype(np.int64), "x": x, "y": y}


def edge_homophily(edge_index: np.ndarray, y: np.ndarray) -> float:
    """Share of edges whose ends have the same label."""
    src, dst = np.asarray(edge_index)
    return float(np.mean(y[src] == y[dst])) if src.size else float("nan")


def split(n: int, fractions: list[float], seed: int) -> tuple[np.ndarray, ...]:
    """Random train / val / test node indices."""
    perm = np.random.default_rng(seed).permutation(n)
    a = int(round(fractions[0] * n))
    b = a + int(round(fractions[1] * n))
    return perm[:a], perm[a:b], perm[b:]


def r2(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Coefficient of determination 1 - SS_res / SS_tot of flattened arrays."""
    y_true = np.asarray(y_true, dtype=np.float64).ravel()
    y_pred = np.asarray(y_pred, dtype=np.float64).ravel()
    ss_res = np.sum((y_true - y_pred) ** 2)
    ss_tot = np.sum((y_true - y_true.mean()) ** 2)
    return float(1.0 - ss_res / ss_tot)


# -- graph signal: the premise that a graph carries class information -------------------


def compatibility_eigenvalue(homophily: float, classes: int) -> float:
    """The class-contrast eigenvalue of an equal-class SBM whose expected edge homophily
    is h: the expected normalized adjacency D^-1/2 E[A] D^-1/2 has eigenvalue 1 on the
    constant vector and (C h - 1) / (C - 1) (multiplicity C - 1) on every class contrast;
    it equals the adjusted homophily of the expected graph. At h = 1 / C it is 0: the
    graph carries no class information."""
    return (classes * homophily - 1.0) / (classes - 1.0)


def ks_ratio(homophily: float, classes: int, degree: float) -> float:
    """degree * lambda^2, lambda = :func:`compatibility_eigenvalue`: the Kesten-Stigum
    ratio of a sparse SBM with equal classes and equal expected degrees. Below 1 no
    method can tell the classes from the graph better than chance (as n grows); above
    1 the class contrasts stand out of the random bulk of the spectrum."""
    return degree * compatibility_eigenvalue(homophily, classes) ** 2


def adjusted_homophily(edge_index: np.ndarray, y: np.ndarray) -> float:
    """Adjusted homophily (Platonov et al., 2023): (h_edge - sum_k p_k^2) / (1 - sum_k
    p_k^2), p_k the share of edge ends (degree) in class k; 0 when edges ignore labels,
    1 for a perfectly homophilic graph, negative for heterophily. On an equal-class SBM
    it estimates :func:`compatibility_eigenvalue`."""
    src, dst = np.asarray(edge_index)
    if not src.size:
        return float("nan")
    y = np.asarray(y)
    p = np.bincount(y[src], minlength=int(y.max()) + 1) / src.size
    chance = float(np.sum(p**2))
    return (float(np.mean(y[src] == y[dst])) - chance) / (1.0 - chance)


def graph_signal(edge_index: np.ndarray, y: np.ndarray) -> float:
    """The realised Kesten-Stigum ratio of a graph: mean degree * adjusted homophily^2
    (edge_index lists every undirected edge in both directions). Computed from the
    generated graph and its labels only, never from a model's accuracy."""
    src, _ = np.asarray(edge_index)
    n = len(y)
    return (src.size / n) * adjusted_homophily(edge_index, y) ** 2


#: the premise's threshold on :func:`graph_signal`: the Kesten-Stigum detectability bound
SIGNAL_THRESHOLD = 1.0


# -- the band-pass CSBM ------------------------------------------------------------------


def bandpass_blocks(
    classes: int, communities: int, per_cell: int, degree: float, class_share: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(block probabilities (C K, C K), class of each block, community of each block) of
    the band-pass CSBM: C classes crossed with K label-free communities, ``per_cell``
    nodes per (class, community) cell; P_ab = p_z [z_a = z_b] + p_y [y_a = y_b] with
    p_z (n / K) = (1 - s) d and p_y (n / C) = s d, so every node has expected degree d,
    a share 1 - s of it inside its community and s inside its class."""
    n = classes * communities * per_cell
    p_z = (1 - class_share) * degree / (n / communities)
    p_y = class_share * degree / (n / classes)
    y = np.repeat(np.arange(classes), communities)
    z = np.tile(np.arange(communities), classes)
    probs = p_z * (z[:, None] == z[None, :]) + p_y * (y[:, None] == y[None, :])
    if probs.max() > 1:
        raise ValueError("degree too large for the cell size")
    return probs, y, z


def bandpass_spectrum(class_share: float) -> dict[str, float]:
    """Normalized-Laplacian eigenvalues of the expected band-pass CSBM (closed form; the
    expected adjacency E[A] = P kron 1 1^T has every row sum d, so L = I - E[A] / d):
    0 on the constant vector, s on the K - 1 community contrasts (the label-free
    nuisance, low frequencies), 1 - s on the C - 1 class contrasts (the label signal, a
    middle band for s < 1/2) and 1 on every other vector (the random bulk's centre)."""
    return {"constant": 0.0, "community": class_share, "class": 1.0 - class_share, "rest": 1.0}


def bandpass_csbm(
    nodes: int,
    classes: int,
    communities: int,
    features: int,
    degree: float,
    class_share: float,
    separation: float,
    nuisance: float,
    seed: int,
) -> dict[str, np.ndarray]:
    """A band-pass CSBM: the graph of :func:`bandpass_blocks` (edges from
    torch_geometric's ``stochastic_blockmodel_graph``), features x_i = mu_{y_i} +
    nu_{z_i} + N(0, I) with class means of norm ``separation`` and community offsets
    (label-free) of norm ``nuisance``. The labels live on the class contrasts (Laplacian
    eigenvalue 1 - s), the nuisance on the community contrasts (eigenvalue s): a
    low-pass filter keeps the nuisance, a high-pass one the bulk's noise; the filter
    that separates them passes a band around 1 - s."""
    import torch
    from torch_geometric.utils import stochastic_blockmodel_graph

    per_cell = nodes // (classes * communities)
    probs, block_y, block_z = bandpass_blocks(classes, communities, per_cell, degree, class_share)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        edge_index = stochastic_blockmodel_graph(
            [per_cell] * len(block_y), torch.as_tensor(probs, dtype=torch.float), directed=False
        )
    rng = np.random.default_rng(seed)
    y = np.repeat(block_y, per_cell)
    z = np.repeat(block_z, per_cell)
    means = rng.normal(size=(classes, features))
    means *= separation / np.linalg.norm(means, axis=1, keepdims=True)
    offsets = rng.normal(size=(communities, features))
    offsets *= nuisance / np.linalg.norm(offsets, axis=1, keepdims=True)
    x = means[y] + offsets[z] + rng.normal(size=(len(y), features))
    return {"edge_index": edge_index.numpy().astype(np.int64), "x": x, "y": y, "z": z}
