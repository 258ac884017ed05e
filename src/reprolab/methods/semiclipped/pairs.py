"""Semi-Clipped's weak pairs and loss: the epoch's minibatches of (transcriptomics,
image) samples paired by perturbation, and the symmetric InfoNCE (CLIP) loss. Shared by
the hooks (method.py) and the Lightning module (module.py)."""

from __future__ import annotations

import numpy as np

from reprolab.methods.semiclipped.config import SemiClippedConfig


def clip_loss(a, b, temperature: float):
    """Symmetric InfoNCE over the cosine-similarity matrix (row i of a pairs with row i of b)."""
    import torch
    import torch.nn.functional as F

    logits = F.normalize(a, dim=1) @ F.normalize(b, dim=1).T / temperature
    target = torch.arange(len(a))
    return 0.5 * (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target))


def _others(pool: np.ndarray, row: int) -> np.ndarray:
    return pool[pool != row]


def train_rows(data: dict) -> np.ndarray:
    return (data["pert"] >= 0) & ~data["test_pert"] & ~data["test_batch"]


def batches(data: dict, cfg: SemiClippedConfig, rng: np.random.Generator, pea) -> list:
    """One epoch of weak pairs: each minibatch holds distinct perturbations; each
    transcriptomics sample is paired with a random image sample of the same perturbation
    (any batch). Where the task says ``pair_other_cell`` (a sample's two views are one
    cell) the image sample is another cell, and a perturbation with one training cell
    is left out. With PEA each sample gets a random correction from ``pea``."""
    rows = np.flatnonzero(train_rows(data))
    rows = rows[rng.permutation(len(rows))]
    img_rows = {
        p: np.flatnonzero(train_rows(data) & (data["pert"] == p))
        for p in np.unique(data["pert"][rows])
    }
    other_cell = "pair_other_cell" in data
    if other_cell:
        rows = rows[[len(img_rows[int(data["pert"][r])]) > 1 for r in rows]]
    out, cur, seen = [], [], set()
    for r in rows:
        p = int(data["pert"][r])
        if p in seen:
            continue
        cur.append(r)
        seen.add(p)
        if len(cur) == cfg.batch_size:
            out.append(np.array(cur))
            cur, seen = [], set()
    if len(cur) >= 2:
        out.append(np.array(cur))
    res = []
    for idx in out:
        if pea is None:
            x = data["tx_tvn"][idx]
        else:
            means, maps = pea
            k = rng.integers(means.shape[1], size=len(idx))
            b = data["batch"][idx]
            x = np.einsum("nd,nde->ne", data["tx"][idx] - means[b, k], maps[b, k])
        if other_cell:
            j = np.array([rng.choice(_others(img_rows[int(data["pert"][i])], i)) for i in idx])
        else:
            j = np.array([rng.choice(img_rows[int(data["pert"][i])]) for i in idx])
        res.append((x.astype(np.float32), data["img_emb"][j].astype(np.float32)))
    return res
