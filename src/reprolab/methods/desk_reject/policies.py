"""Desk-rejection policies under a per-author submission limit.

Cao, Li, Liang, Sha, Shi, Song, Zhang, "Dissecting Submission Limit in Desk-Rejections:
A Mathematical Analysis of Fairness in AI Conference Policies" (arXiv 2502.00690).

Notation (the paper's problem as the card states it; the cost is marked [check] there):

- authorship matrix ``A`` in {0,1}^(n x m): ``A[i, j] = 1`` when author i is on paper j;
- submission limit ``b``; submissions of author i: ``s_i = (A 1)_i``;
- keep-vector ``x`` in {0,1}^m (``x_j = 1``: paper j passes desk rejection), feasible
  when ``A x <= b 1_n`` (no author keeps more than b papers);
- author cost ``c_i(x) = 1 - (A x)_i / min(b, s_i)``: the share of the papers the limit
  would let author i keep that were rejected (0 = untouched, 1 = lost every paper);
- worst-case (individual) fairness: ``min_x max_i c_i(x)``, NP-hard;
- average (group) fairness: ``min_x (1/n) sum_i c_i(x)``, linear in x, so an LP over
  ``0 <= x <= 1`` followed by a rounding that keeps ``A x <= b``.

An *innocent* author complies with the limit on their own (``s_i <= b``); a policy *hits*
an innocent author when it rejects at least one of their papers (``(A x)_i < s_i``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

_EPS = 1e-9


@dataclass(frozen=True)
class Instance:
    """Papers in submission order, each a set of author ids (CSR: the authors of paper j
    are ``idx[ptr[j]:ptr[j + 1]]``); ``n_authors`` authors, every one on some paper."""

    ptr: np.ndarray
    idx: np.ndarray
    n_authors: int
    limit: int

    @classmethod
    def from_papers(cls, papers: list, limit: int, n_authors: int | None = None) -> Instance:
        lengths = [len(p) for p in papers]
        idx = np.concatenate([np.asarray(p, dtype=np.int64) for p in papers]) if papers else []
        idx = np.asarray(idx, dtype=np.int64)
        n = int(idx.max()) + 1 if n_authors is None else n_authors
        return cls(np.r_[0, np.cumsum(lengths)].astype(np.int64), idx, n, int(limit))

    @property
    def n_papers(self) -> int:
        return len(self.ptr) - 1

    def papers(self) -> list[np.ndarray]:
        return [self.idx[self.ptr[j] : self.ptr[j + 1]] for j in range(self.n_papers)]

    def matrix(self) -> sp.csr_matrix:
        cols = np.repeat(np.arange(self.n_papers), np.diff(self.ptr))
        data = np.ones(len(self.idx))
        return sp.csr_matrix((data, (self.idx, cols)), shape=(self.n_authors, self.n_papers))

    def submissions(self) -> np.ndarray:
        return np.bincount(self.idx, minlength=self.n_authors)

    def quota(self) -> np.ndarray:
        """``min(b, s_i)``: how many papers author i may keep."""
        return np.minimum(self.limit, self.submissions())

    def innocent(self) -> np.ndarray:
        return self.submissions() <= self.limit


@dataclass
class Solution:
    keep: np.ndarray  # 0/1 per paper
    seconds: float
    optimal: bool = True
    info: dict[str, float] = field(default_factory=dict)


# ------------------------------------------------------------------ evaluation


def kept_per_author(inst: Instance, keep: np.ndarray) -> np.ndarray:
    return np.bincount(
        inst.idx, weights=np.repeat(keep, np.diff(inst.ptr)), minlength=inst.n_authors
    )


def is_feasible(inst: Instance, keep: np.ndarray) -> bool:
    return bool(np.all(kept_per_author(inst, keep) <= inst.limit + _EPS))


def author_costs(inst: Instance, keep: np.ndarray) -> np.ndarray:
    """``c_i = 1 - (A x)_i / min(b, s_i)``; clipped at 0 (an infeasible x could go below)."""
    return np.maximum(0.0, 1.0 - kept_per_author(inst, keep) / inst.quota())


def innocent_hit(inst: Instance, keep: np.ndarray) -> np.ndarray:
    """Innocent authors (s_i <= b) with at least one paper desk-rejected."""
    return inst.innocent() & (kept_per_author(inst, keep) < inst.submissions() - _EPS)


def ideal_exists(inst: Instance) -> bool:
    """Whether some feasible x rejects no paper of any innocent author.

    Every paper with an innocent author must be kept; the other papers can all be
    rejected, so such an x exists iff no over-limit author is on more than b papers that
    have an innocent co-author. (Checked against brute force over all x in the tests.)
    """
    innocent = inst.innocent()
    protected = np.array([innocent[p].any() for p in inst.papers()], dtype=float)
    load = kept_per_author(inst, protected)
    return bool(np.all(load[~innocent] <= inst.limit))


# ------------------------------------------------------------------ policies


def cvpr_rule(inst: Instance) -> Solution:
    """CVPR 2025-style rule: papers in submission order; a paper is desk-rejected when
    one of its authors already has b papers that passed, otherwise it passes."""
    t0 = time.perf_counter()
    kept = np.zeros(inst.n_authors, dtype=np.int64)
    keep = np.zeros(inst.n_papers, dtype=np.int64)
    for j, authors in enumerate(inst.papers()):
        if np.all(kept[authors] < inst.limit):
            keep[j] = 1
            kept[authors] += 1
    return Solution(keep, time.perf_counter() - t0)


def average_weights(inst: Instance) -> np.ndarray:
    """``w_j = sum_{i on j} 1 / min(b, s_i)``, so that mean cost = 1 - w.x / n."""
    per_author = 1.0 / inst.quota()
    return np.bincount(
        np.repeat(np.arange(inst.n_papers), np.diff(inst.ptr)),
        weights=per_author[inst.idx],
        minlength=inst.n_papers,
    )


def mean_cost_of(inst: Instance, keep: np.ndarray) -> float:
    return float(author_costs(inst, keep).mean())


def lp_relaxation(inst: Instance) -> tuple[np.ndarray, float, np.ndarray]:
    """LP of average fairness: max w.x s.t. A x <= b, 0 <= x <= 1 (HiGHS dual simplex,
    which returns a vertex). Returns (x, the LP's mean cost, the duals of A x <= b)."""
    from scipy.optimize import linprog

    w = average_weights(inst)
    res = linprog(
        -w,
        A_ub=inst.matrix(),
        b_ub=np.full(inst.n_authors, float(inst.limit)),
        bounds=(0.0, 1.0),
        method="highs-ds",
    )
    if res.status != 0:
        raise RuntimeError(f"LP relaxation failed: {res.message}")
    bound = 1.0 + float(res.fun) / inst.n_authors
    return np.clip(res.x, 0.0, 1.0), bound, -np.asarray(res.ineqlin.marginals)


def round_feasible(inst: Instance, x: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """Round a fractional keep-vector without breaking ``A x <= b``: keep the papers at 1
    (floor), then add the others in decreasing LP value (ties: larger weight w_j, then
    submission order) whenever every author still has room."""
    w = average_weights(inst) if w is None else w
    keep = (x >= 1.0 - 1e-7).astype(np.int64)
    kept = kept_per_author(inst, keep)
    if np.any(kept > inst.limit):  # x was not feasible to begin with
        raise ValueError("the papers at x_j = 1 already exceed the limit")
    papers = inst.papers()
    order = np.lexsort((np.arange(inst.n_papers), -w, -x))
    for j in order:
        if not keep[j] and np.all(kept[papers[j]] < inst.limit):
            keep[j] = 1
            kept[papers[j]] += 1
    return keep


def lp_rounded(inst: Instance) -> Solution:
    """The paper's average-fairness mechanism: LP relaxation, then feasible rounding."""
    t0 = time.perf_counter()
    x, bound, _ = lp_relaxation(inst)
    keep = round_feasible(inst, x)
    fractional = int(np.sum((x > 1e-7) & (x < 1 - 1e-7)))
    return Solution(
        keep,
        time.perf_counter() - t0,
        info={"lp_bound": bound, "lp_fractional": float(fractional)},
    )


def _milp(c, integrality, constraints, node_limit: int):
    """HiGHS branch and cut, stopped after ``node_limit`` branch-and-bound nodes (a work
    budget, unlike a time limit: a stopped solve gives the same point on any machine)."""
    from scipy.optimize import Bounds, milp

    res = milp(
        c,
        integrality=integrality,
        bounds=Bounds(0.0, 1.0),
        constraints=constraints,
        options={"node_limit": int(node_limit), "disp": False},
    )
    if res.x is None:
        raise RuntimeError(f"MILP found no feasible point: {res.message}")
    return res


def milp_average(inst: Instance, node_limit: int) -> Solution:
    """Exact average fairness: max w.x s.t. A x <= b, x in {0,1}^m (HiGHS branch and cut)."""
    from scipy.optimize import LinearConstraint

    t0 = time.perf_counter()
    res = _milp(
        -average_weights(inst),
        np.ones(inst.n_papers),
        [LinearConstraint(inst.matrix(), -np.inf, float(inst.limit))],
        node_limit,
    )
    keep = np.round(res.x).astype(np.int64)
    return Solution(keep, time.perf_counter() - t0, optimal=res.status == 0)


def milp_worst_case(inst: Instance, node_limit: int) -> Solution:
    """Worst-case fairness, lexicographically: first t* = min_x max_i c_i(x) (variables x
    and t, constraints A x <= b and (A x)_i / min(b, s_i) + t >= 1), then the lowest mean
    cost among the x with max cost t* (ties in the max are common, e.g. t* = 1)."""
    from scipy.optimize import LinearConstraint

    t0 = time.perf_counter()
    a = inst.matrix()
    d = inst.quota().astype(float)
    m, n = inst.n_papers, inst.n_authors
    scaled = sp.hstack([sp.diags(1.0 / d) @ a, sp.csr_matrix(np.ones((n, 1)))]).tocsr()
    limit_rows = sp.hstack([a, sp.csr_matrix((n, 1))]).tocsr()
    c = np.zeros(m + 1)
    c[-1] = 1.0
    stage1 = _milp(
        c,
        np.r_[np.ones(m), 0.0],
        [
            LinearConstraint(limit_rows, -np.inf, float(inst.limit)),
            LinearConstraint(scaled, 1.0, np.inf),
        ],
        node_limit,
    )
    keep1 = np.round(stage1.x[:m]).astype(np.int64)
    t_star = float(author_costs(inst, keep1).max())
    # (A x)_i is an integer, so max cost <= t* is (A x)_i >= ceil(d_i (1 - t*)) exactly.
    floor_kept = np.ceil(d * (1.0 - t_star) - 1e-6)
    stage2 = _milp(
        -average_weights(inst),
        np.ones(m),
        [LinearConstraint(a, floor_kept, float(inst.limit))],
        node_limit,
    )
    keep = np.round(stage2.x).astype(np.int64)
    if author_costs(inst, keep).max() > t_star + 1e-9:  # node limit: keep stage 1's x
        keep = keep1
    return Solution(
        keep,
        time.perf_counter() - t0,
        optimal=stage1.status == 0 and stage2.status == 0,
        info={"worst_case_t": t_star},
    )


def solve(policy: str, inst: Instance, node_limit: int) -> Solution:
    if policy == "cvpr_rule":
        return cvpr_rule(inst)
    if policy == "lp_rounded":
        return lp_rounded(inst)
    if policy == "milp_average":
        return milp_average(inst, node_limit)
    if policy == "milp_worst_case":
        return milp_worst_case(inst, node_limit)
    raise ValueError(f"unknown policy {policy!r}")


def instance_metrics(inst: Instance, keep: np.ndarray) -> dict[str, float]:
    """Per-instance metrics of one keep-vector (see the README for definitions)."""
    if not is_feasible(inst, keep):
        raise AssertionError("a policy returned a keep-vector that violates A x <= b")
    cost = author_costs(inst, keep)
    innocent = inst.innocent()
    hit = innocent_hit(inst, keep)
    ideal = ideal_exists(inst)
    return {
        "mean_cost": float(cost.mean()),
        "max_cost": float(cost.max()),
        "cost_share_zero": float(np.mean(cost <= _EPS)),
        "cost_share_low": float(np.mean((cost > _EPS) & (cost <= 0.5))),
        "cost_share_high": float(np.mean((cost > 0.5) & (cost < 1 - _EPS))),
        "cost_share_full": float(np.mean(cost >= 1 - _EPS)),
        "innocent_hit": float(hit.sum()),
        "innocent_hit_frac": float(hit.sum() / max(1, innocent.sum())),
        "rejected": float(inst.n_papers - keep.sum()),
        "rejected_frac": float(1.0 - keep.sum() / inst.n_papers),
        "no_ideal": float(not ideal),
        "avoidable_hit": float(ideal and bool(hit.any())),
    }
