"""Numpy pieces of Semi-Clipped: the seeded two-modality simulator, the batch
corrections used by PEA (control centering, control scaling, TVN), recall@k and the
linear probes of the premise check."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from reprolab.methods.semiclipped.config import SemiClippedConfig


def simulate(seed: int, cfg: SemiClippedConfig) -> dict[str, np.ndarray]:
    """Perturbation latents clustered by pathway, seen through a transcriptomics and an
    image map, each with its own per-batch shift, per-feature scale and correlated noise.
    Controls have latent zero. Perturbation id -1 marks a control. ``z`` is the latent of
    every perturbation (row = perturbation id), for the premise check only.

    The world's sizes are the config's simulator fields (``n_pathways``,
    ``perts_per_pathway``, ``n_batches``, ``n_controls``, ``reps``, ``latent``,
    ``tx_dim``, ``img_dim``, ``noise``). ``tx_weak_dims`` latent dimensions (the last
    ones) reach the transcriptomics side scaled by ``tx_weak_gain``: biology the
    expression profile measures badly and the image sees, the premise of distilling from
    images (0: both sides see every dimension alike, the draws are those of the simulator
    without the option)."""
    n_pathways, latent, tx_dim, img_dim = cfg.n_pathways, cfg.latent, cfg.tx_dim, cfg.img_dim
    perts_per_pathway, tx_weak_dims = cfg.perts_per_pathway, cfg.tx_weak_dims
    rng = np.random.default_rng(seed)
    n_perts = n_pathways * perts_per_pathway
    centers = rng.normal(size=(n_pathways, latent))
    pathway = np.repeat(np.arange(n_pathways), perts_per_pathway)
    z = centers[pathway] + 0.6 * rng.normal(size=(n_perts, latent))
    maps = {"tx": rng.normal(size=(latent, tx_dim)), "img": rng.normal(size=(latent, img_dim))}
    if tx_weak_dims:
        maps["tx"][latent - tx_weak_dims :] *= cfg.tx_weak_gain
    out: dict[str, list] = {"pert": [], "batch": [], "tx": [], "img": []}
    for b in range(cfg.n_batches):
        ids = np.concatenate([np.full(cfg.n_controls, -1), np.repeat(np.arange(n_perts), cfg.reps)])
        lat = np.where(ids[:, None] >= 0, z[np.maximum(ids, 0)], 0.0)
        for name, dim in (("tx", tx_dim), ("img", img_dim)):
            shift = 3.0 * rng.normal(size=dim)
            scale = np.exp(0.5 * rng.normal(size=dim))
            mix = np.eye(dim) + 0.5 * rng.normal(size=(dim, dim)) / np.sqrt(dim)
            eps = cfg.noise * rng.normal(size=(len(ids), dim)) @ mix
            out[name].append(((lat @ maps[name] + eps) * scale + shift).astype(np.float32))
        out["pert"].append(ids)
        out["batch"].append(np.full(len(ids), b))
    res = {k: np.concatenate(v) for k, v in out.items()}
    res["pathway"] = np.where(res["pert"] >= 0, pathway[np.maximum(res["pert"], 0)], -1)
    res["z"] = z
    return res


# ---------------------------------------------------------------- batch corrections

KINDS = ("center", "scale", "tvn")


def correction(
    controls: np.ndarray, kind: str, shrink: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """Affine batch correction ``x -> (x - m) @ W`` fitted on one batch's controls.
    center: W = I; scale: W = diag(1 / control std); tvn: W = C^{-1/2} (symmetric
    whitening of the control covariance C, shrunk towards its mean variance by
    ``shrink`` so small control subsets stay invertible)."""
    m = controls.mean(0)
    d = controls.shape[1]
    if kind == "center":
        return m, np.eye(d)
    if kind == "scale":
        return m, np.diag(1.0 / (controls.std(0) + 1e-8))
    if kind == "tvn":
        c = np.cov(controls, rowvar=False, bias=True)
        c = (1 - shrink) * c + shrink * np.trace(c) / d * np.eye(d)
        vals, vecs = np.linalg.eigh(c)
        return m, (vecs / np.sqrt(np.maximum(vals, 1e-10))) @ vecs.T
    raise ValueError(f"unknown correction {kind!r}; one of {KINDS}")


def correct(x, batch, is_control, kind: str, shrink: float = 0.0) -> np.ndarray:
    """Correct every batch with all of its controls."""
    out = np.empty_like(x, dtype=np.float32)
    for b in np.unique(batch):
        rows = batch == b
        m, w = correction(x[rows & is_control], kind, shrink)
        out[rows] = (x[rows] - m) @ w
    return out


def pea_bank(x, batch, is_control, n_per_batch: int, min_frac: float, shrink: float, rng):
    """PEA: per batch, ``n_per_batch`` random corrections (a random kind fitted on a
    random subset of the batch's controls). Returns means (B, K, d) and maps (B, K, d, d)."""
    batches = np.unique(batch)
    d = x.shape[1]
    means = np.zeros((batches.max() + 1, n_per_batch, d), np.float32)
    maps = np.zeros((batches.max() + 1, n_per_batch, d, d), np.float32)
    for b in batches:
        ctrl = x[(batch == b) & is_control]
        if len(ctrl) < 2:  # a held-out batch: no corrections needed
            continue
        for k in range(n_per_batch):
            n = max(2, int(round(rng.uniform(min_frac, 1.0) * len(ctrl))))
            sub = ctrl[rng.choice(len(ctrl), n, replace=False)]
            means[b, k], maps[b, k] = correction(sub, KINDS[rng.integers(len(KINDS))], shrink)
    return means, maps


# ---------------------------------------------------------------- recall


def recall_at_k(emb: np.ndarray, labels: np.ndarray, ks) -> dict[int, float]:
    """Mean over queries of |same-label items among the k nearest (cosine, query
    excluded)| / min(k, |same-label items|), over queries that have a relative."""
    e = emb / (np.linalg.norm(emb, axis=1, keepdims=True) + 1e-12)
    sim = e @ e.T
    np.fill_diagonal(sim, -np.inf)
    order = np.argsort(-sim, axis=1, kind="stable")
    same = labels[order] == labels[:, None]
    n_rel = (labels[None, :] == labels[:, None]).sum(1) - 1
    ok = n_rel > 0
    return {k: float((same[ok, :k].sum(1) / np.minimum(k, n_rel[ok])).mean()) for k in ks}


def pert_means(emb, pert) -> tuple[np.ndarray, np.ndarray]:
    ids = np.unique(pert)
    return ids, np.stack([emb[pert == i].mean(0) for i in ids])


# ---------------------------------------------------------------- premise check


def probe_folds(groups: np.ndarray, n_folds: int, seed: int) -> np.ndarray:
    """The fold of every row: whole groups (perturbations) are dealt at random to
    ``min(n_folds, number of groups)`` folds, so a probe is always scored on
    perturbations it was not fitted on."""
    ids, inverse = np.unique(groups, return_inverse=True)
    k = min(n_folds, len(ids))
    return (np.random.default_rng(seed).permutation(len(ids)) % k)[inverse]


def cross_fit_ridge(x, y, folds, alpha: float = 1.0) -> np.ndarray:
    """Out-of-fold predictions of ridge regression (sklearn: StandardScaler + Ridge with
    an intercept): each fold is predicted by a fit on the other folds."""
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import PredefinedSplit, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    model = make_pipeline(StandardScaler(), Ridge(alpha=alpha))
    return cross_val_predict(model, x, y, cv=PredefinedSplit(np.asarray(folds)))


def probe_r2(x, y, folds, alpha: float = 1.0) -> float:
    """Out-of-fold R^2 of a ridge probe of ``y`` (samples x targets) from ``x``,
    1 - SSE / (sum of squares about the mean) over all rows, averaged over targets."""
    y = np.asarray(y, np.float64).reshape(len(y), -1)
    pred = cross_fit_ridge(x, y, folds, alpha)
    sse = ((y - pred) ** 2).sum(0)
    sst = ((y - y.mean(0)) ** 2).sum(0)
    return float((1 - sse / sst).mean())


def probe_accuracy(x, labels, folds, alpha: float = 1.0) -> float:
    """Out-of-fold accuracy of a ridge probe of integer ``labels`` from ``x`` (one-hot
    targets, the highest prediction wins)."""
    classes, idx = np.unique(labels, return_inverse=True)
    pred = cross_fit_ridge(x, np.eye(len(classes))[idx], folds, alpha)
    return float((pred.argmax(1) == idx).mean())
