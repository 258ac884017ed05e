"""The dilemma by exhaustive search on tiny instances.

An *ideal* desk rejection rejects papers only because of excessive submissions: it is
feasible (``A x <= b``) and rejects no paper of an innocent author (``s_i <= b``). The
paper states that once there are more than three authors no rule can always achieve
this. Here every instance with exactly ``n`` authors (each on at least one paper), at
most ``max_papers`` papers (each a non-empty author set; papers may repeat) and a limit
``b`` is enumerated once up to relabelling the authors, and every keep-vector of every
instance is tried: since any rule's outcome is some keep-vector, an instance where none
of the ``2^m`` keep-vectors is ideal is an instance where every rule hurts an innocent.
"""

from __future__ import annotations

import itertools

import numpy as np

from reprolab.methods.desk_reject.policies import Instance


def _permuted_masks(n: int) -> np.ndarray:
    """``table[p, mask]``: the author set ``mask`` after relabelling authors by perm p."""
    perms = list(itertools.permutations(range(n)))
    table = np.zeros((len(perms), 1 << n), dtype=np.int64)
    for p, perm in enumerate(perms):
        for mask in range(1 << n):
            table[p, mask] = sum(1 << perm[a] for a in range(n) if mask >> a & 1)
    return table


def canonical_multisets(n: int, max_papers: int) -> list[tuple[int, ...]]:
    """Multisets of non-empty author sets (bitmasks) covering all n authors, one per
    class under relabelling the authors (the lexicographically smallest sorted form)."""
    full = (1 << n) - 1
    table = _permuted_masks(n)
    out: list[tuple[int, ...]] = []
    for m in range(1, max_papers + 1):
        combos = np.array(
            list(itertools.combinations_with_replacement(range(1, full + 1), m)), dtype=np.int64
        )
        covers = np.bitwise_or.reduce(combos, axis=1) == full
        combos = combos[covers]
        if not len(combos):
            continue
        images = np.sort(table[:, combos], axis=2)  # perms x combos x m
        diff = images - combos[None]
        first = np.argmax(diff != 0, axis=2)
        lead = np.take_along_axis(diff, first[..., None], axis=2)[..., 0]
        smaller = (lead < 0).any(axis=0)  # some relabelling gives a smaller form
        out.extend(tuple(int(v) for v in c) for c in combos[~smaller])
    return out


def incidence(masks: np.ndarray, n: int) -> np.ndarray:
    """A (n x m) from paper bitmasks."""
    return ((masks[None, :] >> np.arange(n)[:, None]) & 1).astype(np.int64)


def ideal_by_brute_force(masks: np.ndarray, n: int, limit: int) -> bool:
    """Try all 2^m keep-vectors: is one feasible and untouched for every innocent author?"""
    a = incidence(masks, n)
    m = a.shape[1]
    xs = (np.arange(1 << m)[:, None] >> np.arange(m)[None, :]) & 1
    kept = xs @ a.T
    s = a.sum(axis=1)
    innocent = s <= limit
    feasible = (kept <= limit).all(axis=1)
    untouched = (kept[:, innocent] == s[innocent]).all(axis=1)
    return bool(np.any(feasible & untouched))


def to_instance(masks: np.ndarray, n: int, limit: int) -> Instance:
    papers = [[a for a in range(n) if int(mask) >> a & 1] for mask in masks if mask]
    return Instance.from_papers(papers, limit, n_authors=n)


def enumerate_task(n: int, limits: list[int], max_papers: int) -> dict[str, np.ndarray]:
    """Arrays of one tiny task: every canonical instance with n authors, per limit."""
    multisets = canonical_multisets(n, max_papers)
    rows = [(ms, b) for b in limits for ms in multisets]
    masks = np.zeros((len(rows), max_papers), dtype=np.int64)
    for r, (ms, _) in enumerate(rows):
        masks[r, : len(ms)] = ms
    limit = np.array([b for _, b in rows], dtype=np.int64)
    n_papers = np.array([len(ms) for ms, _ in rows], dtype=np.int64)
    ideal = np.array([ideal_by_brute_force(np.array(ms), n, b) for ms, b in rows], dtype=np.int64)
    team = np.array([max(bin(v).count("1") for v in ms) for ms, _ in rows], dtype=np.int64)
    return {
        "masks": masks,
        "limit": limit,
        "n_papers": n_papers,
        "ideal": ideal,
        "max_team": team,
        "n_authors": np.array([n], dtype=np.int64),
    }
