"""The residual-space analysis of safety fine-tuning.

On arrays (no model needed): given last-token hidden states of the same prompts before (``X``) and after (``Y``)
safety fine-tuning at one layer (n prompts x d), the paper (Pan et al. 2025; code
``BMPixel/safety-residual-space``) takes the shift ``Y - X``, its uncentred SVD, and the
eigenvalues ``s**2 / (n - 1)``:

- :func:`secondary_ratio`: the paper's picture of the shift, "a dominant direction
  [...] while multiple smaller directions" (abstract), as one number: the variance of
  the next k components (1..k) in units of component 0's, ``sum(ev[1:k+1]) / ev[0]``
  (0 for a shift along one direction, k for k + 1 equal ones); the central claim
  compares it with a harmless control fine-tune's shift (issue 46);
- :func:`effective_rank`: the smallest k whose leading eigenvalues reach a variance
  share tau (the code sweeps tau from 0.4 to 0.9), kept as a diagnostic;
- :func:`probe_accuracy`: how well the projection on one component separates refused
  from answered prompts (component 0 should be the refusal direction), a threshold fitted
  on one half of the prompts and scored on the other;
- :func:`separation_null`: whether the next components separate prompt groups (wrapper
  types: plain, hypothetical narrative, role-play): the between-group share of variance
  of the projections against its null distribution under shuffled group labels
  (:func:`separation_test` turns it into a permutation p-value).

On models (the evaluate stage's two analyses, :func:`analyse` and :func:`removal`): the
last-token states of the held-out prompts (``reprolab.methods.safety_dims.residual``) of
a (before, after) pair of models, and the refusal scores after deleting tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from reprolab.methods.safety_dims import residual
from reprolab.methods.safety_dims.prompts import WRAPPER_CODES

#: null quantile the separation statistic must beat (the one-sided 5% level)
NULL_QUANTILE = 0.95


def mid_layers(n_layers: int) -> list[int]:
    """The middle third of the layers (at least one): 10..19 of SmolLM2's 30."""
    a = n_layers // 3
    return list(range(a, max(a + 1, n_layers - a)))


def analysis_layer(n_layers: int) -> int:
    """The layer of the relevance and of the separation test (15 of 30; the reference
    uses layer 15 of Llama-3.1-8B's 32)."""
    return n_layers // 2


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


def secondary_ratio(eigenvalues: Sequence[float], k: int) -> float:
    """Variance of components 1..k over that of component 0 (eigenvalues sorted
    descending first): how much the secondary directions hold next to the dominant one.
    Fewer than k + 1 eigenvalues count the missing ones as 0."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    ev = np.sort(np.asarray(eigenvalues, float))[::-1]
    if ev.size == 0 or ev[0] <= 0:
        raise ValueError("the shift is zero: no dominant direction")
    return float(ev[1 : k + 1].sum() / ev[0])


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


def separation_null(
    projections: np.ndarray, groups: Sequence, permutations: int = 999, seed: int = 0
) -> tuple[float, np.ndarray]:
    """(between-group share, its null distribution): the share under ``permutations``
    random relabellings of ``groups``."""
    g = np.asarray(groups)
    if len(np.unique(g)) < 2:
        raise ValueError("need at least two groups")
    observed = between_share(projections, g)
    rng = np.random.default_rng(seed)
    null = np.array([between_share(projections, rng.permutation(g)) for _ in range(permutations)])
    return observed, null


def separation_test(
    projections: np.ndarray, groups: Sequence, permutations: int = 999, seed: int = 0
) -> tuple[float, float]:
    """(between-group share, permutation p-value): p = (1 + #{share_perm >= share}) /
    (1 + permutations), floored at 1 / (1 + permutations)."""
    observed, null = separation_null(projections, groups, permutations, seed)
    return observed, (1 + int((null >= observed).sum())) / (1 + permutations)


def null_summary(observed: float, null: np.ndarray) -> dict[str, float]:
    """The statistic against its null: the excess over the null's
    :data:`NULL_QUANTILE` quantile (> 0 where the one-sided permutation test at 5% rejects,
    but not floored: its size varies with the data), and the z-score against the null's
    mean and standard deviation."""
    q = float(np.quantile(null, NULL_QUANTILE))
    sd = float(null.std(ddof=1))
    return {
        "excess": observed - q,
        "null_q95": q,
        "null_mean": float(null.mean()),
        "z": (observed - float(null.mean())) / sd if sd > 0 else float("inf"),
    }


def random_direction_accuracy(
    states: np.ndarray, labels: np.ndarray, draws: int, rng: np.random.Generator, seed: int
) -> float:
    """Mean held-out accuracy (:func:`probe_accuracy`, same split) of ``draws`` random
    unit directions: the control of a probe on one direction of the same states."""
    r = rng.standard_normal((draws, states.shape[1]))
    r /= np.linalg.norm(r, axis=1, keepdims=True)
    return float(np.mean([probe_accuracy(states @ v, labels, seed) for v in r]))


# ---------------------------------------------------------------- on models


def first_tokens(data: dict) -> tuple[int, int]:
    """The first token of the refusal and of the compliant answer (the refusal score)."""
    return int(data["refusal_ids"][0]), int(data["comply_ids"][0])


def pad_id(data: dict) -> int:
    meta = data["tok_meta"]
    return int(meta[3]) if int(meta[3]) >= 0 else int(meta[2])


def refusal_rates(model, data: dict, split: str) -> dict[str, float]:
    """How often ``model`` refuses the harmful and the benign prompts of ``split``
    (refusal score > 0)."""
    _, scores = residual.last_states(
        model, data[f"{split}_ids"], data[f"{split}_len"], first_tokens(data), with_states=False
    )
    harmful = data[f"{split}_harmful"].astype(bool)
    refused = scores > 0
    return {"harmful": float(refused[harmful].mean()), "benign": float(refused[~harmful].mean())}


def _probe_split(n: int, seed: int) -> np.ndarray:
    """The fit half of :func:`probe_accuracy`'s split (same generator)."""
    return np.random.default_rng(seed).permutation(n)[: n // 2]


def _mean_probe(states: np.ndarray, labels: np.ndarray, seed: int) -> tuple[float, np.ndarray]:
    """Difference-of-means refusal probe fitted on the fit half: (held-out accuracy, unit
    direction). A fit half without both labels gives chance (0.5) and a zero direction."""
    fit = np.zeros(len(labels), bool)
    fit[_probe_split(len(labels), seed)] = True
    if not (labels[fit].any() and (~labels[fit]).any()):
        return 0.5, np.zeros(states.shape[1])
    d = states[fit & labels].mean(0) - states[fit & ~labels].mean(0)
    norm = np.linalg.norm(d)
    d = d / norm if norm > 0 else d
    return probe_accuracy(states @ d, labels, seed), d


def analyse(base, tuned, cfg: Any, data: dict, seed: int) -> dict[str, float]:
    """Every residual-space metric of one (base, tuned) pair at one precision, on the
    test prompts."""
    ids, lengths, first = data["test_ids"], data["test_len"], first_tokens(data)
    before, base_scores = residual.last_states(base, ids, lengths, first)
    after, scores = residual.last_states(tuned, ids, lengths, first)
    harmful = data["test_harmful"].astype(bool)
    refused = scores > 0
    # the probe's labels: the tuned model's own refusals, or the targets it was taught
    # when one behaviour has fewer than 2 prompts (flagged as probe_on_targets)
    on_targets = min(refused.sum(), (~refused).sum()) < 2
    labels = harmful if on_targets else refused
    n_layers = after.shape[0]
    mid, layer_star = mid_layers(n_layers), analysis_layer(n_layers)
    rng = np.random.default_rng(seed)
    out: dict[str, float] = {}
    ranks = {tau: np.zeros(n_layers) for tau in cfg.taus}
    comp0_acc, probe_acc, rand_acc, cos = (np.full(n_layers, 0.5) for _ in range(4))
    cos[:] = 0.0
    shift_norm = np.zeros(n_layers)
    # the central claim's statistic per layer (0 where there is no shift), and the
    # dominant component's share of the whole variance (a diagnostic)
    ratio, dominant = np.zeros(n_layers), np.zeros(n_layers)
    spectra = {}
    plotted = sorted({0, layer_star, n_layers - 1})
    wrapper = {"share": 0.0, "p": 1.0, "excess": -1.0, "z": 0.0, "null_q95": 1.0}
    for layer in range(n_layers):
        shift = after[layer] - before[layer]
        shift_norm[layer] = float(np.linalg.norm(shift, axis=1).mean())
        if not np.any(shift):
            continue  # no shift at all: rank 0, nothing to classify with (chance)
        spec = shift_spectrum(before[layer], after[layer])
        for tau in cfg.taus:
            ranks[tau][layer] = effective_rank(spec.eigenvalues, tau)
        ratio[layer] = secondary_ratio(spec.eigenvalues, cfg.secondary)
        dominant[layer] = spec.share(1)
        comp0 = spec.components[0]
        comp0_acc[layer] = probe_accuracy(after[layer] @ comp0, labels, seed)
        probe_acc[layer], direction = _mean_probe(after[layer], labels, seed)
        cos[layer] = abs(float(comp0 @ direction))
        rand_acc[layer] = random_direction_accuracy(
            after[layer], labels, cfg.random_dirs, rng, seed
        )
        if layer in plotted:
            spectra[layer] = spec.eigenvalues / spec.eigenvalues.sum()
        k = min(cfg.secondary, spec.components.shape[0] - 1)
        if layer == layer_star and k >= 1:
            proj = shift @ spec.components[1 : 1 + k].T
            share, null = separation_null(proj, data["test_wrapper"], cfg.permutations, seed)
            summary = null_summary(share, null)
            p = (1 + int((null >= share).sum())) / (1 + cfg.permutations)
            wrapper = {"share": share, "p": p, **summary}
    for key in ("share", "p", "excess", "z", "null_q95"):
        out[f"wrapper_{key}"] = float(wrapper[key])
    for tau in cfg.taus:
        tag = round(tau * 100)
        out[f"eff_rank_{tag}"] = float(ranks[tau][mid].mean())
        for layer in range(n_layers):
            out[f"eff_rank_{tag}_l{layer:02d}"] = float(ranks[tau][layer])
    out["eff_rank_90_max"] = float(ranks[0.9].max())
    out["secondary_ratio_mid"] = float(ratio[mid].mean())
    out["dominant_share_mid"] = float(dominant[mid].mean())
    for layer in range(n_layers):
        out[f"secondary_ratio_l{layer:02d}"] = float(ratio[layer])
    out["comp0_acc_mid"] = float(comp0_acc[mid].mean())
    out["comp0_acc_max"] = float(comp0_acc.max())
    out["probe_acc_mid"] = float(probe_acc[mid].mean())
    out["rand_acc_mid"] = float(rand_acc[mid].mean())
    out["comp0_vs_random_mid"] = out["comp0_acc_mid"] - out["rand_acc_mid"]
    out["comp0_cos_mid"] = float(cos[mid].mean())
    out["shift_norm_mid"] = float(shift_norm[mid].mean())
    for layer in range(n_layers):
        out[f"comp0_acc_l{layer:02d}"] = float(comp0_acc[layer])
        out[f"probe_acc_l{layer:02d}"] = float(probe_acc[layer])
        out[f"rand_acc_l{layer:02d}"] = float(rand_acc[layer])
    for layer in plotted:
        shares = spectra.get(layer, np.zeros(0))
        for j in range(cfg.spectrum_k):
            out[f"ev_share_{j:02d}_l{layer:02d}"] = float(shares[j]) if j < len(shares) else 0.0
    out["refusal_rate_harmful"] = float(refused[harmful].mean())
    out["refusal_rate_benign"] = float(refused[~harmful].mean())
    out["base_refusal_rate_harmful"] = float((base_scores > 0)[harmful].mean())
    out["base_refusal_rate_benign"] = float((base_scores > 0)[~harmful].mean())
    out["refusal_margin_harmful"] = float(scores[harmful].mean())
    out["probe_on_targets"] = float(on_targets)
    out["n_layers"] = float(n_layers)
    return out


def _scores(model, rows: list[list[int]], data: dict) -> np.ndarray:
    ids, lengths = residual.pad_rows(rows, pad_id(data))
    _, scores = residual.last_states(model, ids, lengths, first_tokens(data), with_states=False)
    return scores


def removal(tuned, cfg: Any, data: dict, top: np.ndarray, how: str, seed: int) -> dict[str, float]:
    """Refusal of the harmful test prompts before and after deleting tokens of the user's
    message: ``top`` (positions per prompt) or ``random_draws`` random sets of as many."""
    ids, lengths = data["test_ids"], data["test_len"]
    rows = np.flatnonzero(data["test_harmful"].astype(bool))
    original = [[int(t) for t in ids[i, : lengths[i]]] for i in rows]
    s0 = _scores(tuned, original, data)
    draws: list[list[np.ndarray]] = []
    if how == "top":
        draws.append([top[i][top[i] >= 0] for i in rows])
    else:
        rng = np.random.default_rng([seed, 7])
        for _ in range(cfg.random_draws):
            draws.append(
                [
                    residual.random_positions(
                        int(data["test_ustart"][i]),
                        int(data["test_uend"][i]),
                        int((top[i] >= 0).sum()),
                        rng,
                    )
                    for i in rows
                ]
            )
    drops, flips, trig = [], [], []
    for positions in draws:
        edited = [
            residual.remove_tokens(ids[i], int(lengths[i]), pos)
            for i, pos in zip(rows, positions, strict=True)
        ]
        s1 = _scores(tuned, edited, data)
        drops.append(float((s0 - s1).mean()))
        flips.append(float((s0 > 0).mean() - (s1 > 0).mean()))
        wrapped = [
            data["test_trigger"][i][pos].mean()
            for i, pos in zip(rows, positions, strict=True)
            if data["test_wrapper"][i] != WRAPPER_CODES["plain"] and len(pos)
        ]
        trig.append(float(np.mean(wrapped)) if wrapped else 0.0)
    return {
        "refusal_score_drop": float(np.mean(drops)),
        "refusal_drop": float(np.mean(flips)),
        "trigger_share": float(np.mean(trig)),
        "refusal_before": float((s0 > 0).mean()),
    }
