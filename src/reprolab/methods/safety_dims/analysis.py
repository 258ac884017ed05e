"""The residual-space analysis of safety fine-tuning, on arrays (no model needed).

Given last-token hidden states of the same prompts before (``X``) and after (``Y``)
safety fine-tuning at one layer (n prompts x d), the paper (Pan et al. 2025; code
``BMPixel/safety-residual-space``) takes the shift ``Y - X``, its uncentred SVD, and the
eigenvalues ``s**2 / (n - 1)``:

- :func:`effective_rank`: the smallest k whose leading eigenvalues reach a variance
  share tau (the code sweeps tau from 0.4 to 0.9); > 1 at tau = 0.9 means the shift is
  not one direction;
- :func:`probe_accuracy`: how well the projection on one component separates refused
  from answered prompts (component 0 should be the refusal direction), a threshold fitted
  on one half of the prompts and scored on the other;
- :func:`separation_test`: whether the next components separate prompt groups (wrapper
  types: plain, hypothetical narrative, role-play), a permutation test of the
  between-group share of variance of the projections.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Spectrum:
    eigenvalues: np.ndarray  # s**2 / (n - 1), descending
    components: np.ndarray  # rows: right singular vectors (unit, d-dimensional)

    def share(self, k: int) -> float:
        """Variance share of the leading k components."""
        return float(self.eigenvalues[:k].sum() / self.eigenvalues.sum())


def shift_spectrum(before: np.ndarray, after: np.ndarray) -> Spectrum:
    """Uncentred SVD of the shift ``after - before`` (n x d, one row per prompt)."""
    before, after = np.asarray(before, float), np.asarray(after, float)
    if before.shape != after.shape or before.ndim != 2:
        raise ValueError(
            f"before and after must be n x d arrays of one shape, got {before.shape} and "
            f"{after.shape}"
        )
    n = before.shape[0]
    if n < 2:
        raise ValueError("need at least 2 prompts")
    _, s, vt = np.linalg.svd(after - before, full_matrices=False)
    return Spectrum(s**2 / (n - 1), vt)


def effective_rank(eigenvalues: Sequence[float], tau: float) -> int:
    """Smallest k with (sum of the k largest eigenvalues) / total >= tau."""
    if not 0 < tau <= 1:
        raise ValueError(f"tau must be in (0, 1], got {tau}")
    ev = np.sort(np.asarray(eigenvalues, float))[::-1]
    if ev.sum() <= 0:
        raise ValueError("the shift is zero: no variance to share")
    shares = np.cumsum(ev) / ev.sum()
    return int(np.searchsorted(shares, tau - 1e-12) + 1)


def probe_accuracy(scores: np.ndarray, labels: np.ndarray, seed: int = 0) -> float:
    """Held-out accuracy of a threshold on 1-D ``scores`` for binary ``labels``: the
    threshold and its direction are fitted on a random half, accuracy is measured on the
    other half (so a random direction scores about 0.5, not max(p, 1 - p) by fitting)."""
    scores, labels = np.asarray(scores, float), np.asarray(labels).astype(bool)
    n = len(scores)
    if n < 4 or labels.all() or not labels.any():
        raise ValueError("need at least 4 scores and both labels")
    order = np.random.default_rng(seed).permutation(n)
    fit, test = order[: n // 2], order[n // 2 :]
    best = (-1.0, 0.0, 1)
    for t in np.unique(scores[fit]):
        for sign in (1, -1):
            acc = float(np.mean((sign * (scores[fit] - t) >= 0) == labels[fit]))
            if acc > best[0]:
                best = (acc, float(t), sign)
    _, t, sign = best
    return float(np.mean((sign * (scores[test] - t) >= 0) == labels[test]))


def between_share(projections: np.ndarray, groups: Sequence) -> float:
    """Share of the projections' total variance (summed over columns) that lies between
    group means (the R^2 of a one-way ANOVA, pooled over components)."""
    x = np.asarray(projections, float)
    x = x[:, None] if x.ndim == 1 else x
    g = np.asarray(groups)
    centred = x - x.mean(axis=0)
    total = float((centred**2).sum())
    between = sum(
        float((g == k).sum() * ((x[g == k].mean(axis=0) - x.mean(axis=0)) ** 2).sum())
        for k in np.unique(g)
    )
    return between / total if total > 0 else 0.0


def separation_test(
    projections: np.ndarray, groups: Sequence, permutations: int = 999, seed: int = 0
) -> tuple[float, float]:
    """(between-group share, permutation p-value): the share under random relabellings
    of ``groups``; p = (1 + #{share_perm >= share}) / (1 + permutations)."""
    g = np.asarray(groups)
    if len(np.unique(g)) < 2:
        raise ValueError("need at least two groups")
    observed = between_share(projections, g)
    rng = np.random.default_rng(seed)
    hits = sum(
        between_share(projections, rng.permutation(g)) >= observed for _ in range(permutations)
    )
    return observed, (1 + hits) / (1 + permutations)
