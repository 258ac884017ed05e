"""Collapse metrics on embeddings (numpy, independent of the model)."""

from __future__ import annotations

import numpy as np


def effective_rank(x: np.ndarray) -> float:
    """Roy & Vetterli (2007) effective rank of the covariance of the rows of ``x``:
    exp of the Shannon entropy of its normalised singular values."""
    x = np.asarray(x, dtype=np.float64)
    centred = x - x.mean(axis=0, keepdims=True)
    cov = centred.T @ centred / max(len(x) - 1, 1)
    s = np.linalg.svd(cov, compute_uv=False)
    total = s.sum()
    if total <= 0:
        return 0.0  # every row identical: complete representation collapse
    p = s[s > 0] / total
    return float(np.exp(-(p * np.log(p)).sum()))


def usage_entropy(assign: np.ndarray, n_clusters: int) -> float:
    """Entropy of the cluster-usage histogram, divided by its largest possible value
    log(min(n_clusters, n_points)); 1 = every cluster used equally (or every point in
    its own cluster), 0 = every point in one cluster."""
    counts = np.bincount(np.asarray(assign), minlength=n_clusters).astype(np.float64)
    top = np.log(min(n_clusters, len(assign)))
    if top <= 0:
        return 0.0
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum() / top)


def usage_perplexity(assign: np.ndarray) -> float:
    """exp of the entropy of the usage histogram: the effective number of clusters in
    use (k for k equally used clusters, 1 for one)."""
    counts = np.unique(np.asarray(assign), return_counts=True)[1].astype(np.float64)
    p = counts / counts.sum()
    return float(np.exp(-(p * np.log(p)).sum()))


def intra_cluster_variance(x: np.ndarray, assign: np.ndarray) -> float:
    """Mean squared distance of each L2-normalised row to its cluster's centroid, i.e.
    the size-weighted mean over clusters of the within-cluster variance (summed over
    dimensions). Unit vectors: at most 1; 0 when every cluster has collapsed to a point."""
    x = np.asarray(x, dtype=np.float64)
    x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    assign = np.asarray(assign)
    labels, inverse = np.unique(assign, return_inverse=True)
    sums = np.zeros((len(labels), x.shape[1]))
    np.add.at(sums, inverse, x)
    centroids = sums / np.bincount(inverse)[:, None]
    return float(((x - centroids[inverse]) ** 2).sum(axis=1).mean())
