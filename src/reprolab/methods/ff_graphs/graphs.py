"""Feedforward graph families and their two metrics (numpy only).

Convention (as ``core.transformer.dag_mask``): ``adj[j, i] = 1`` is an edge j -> i with
j < i; node 0 is the source, node n - 1 the sink tau. Self-loops are implicit: every
metric adds them, as the paper does.

- **Mixing time** (forward walk): from node j the walk moves to a uniformly chosen
  element of its out-neighbours and itself (``w_ij = 1 / deg+_j`` for (j, i) in E, self
  loop included). The sink has no out-edge, so the walk is absorbed there and the
  stationary distribution is the point mass at tau. ``mixing_time`` is the smallest t
  with ``max_x ||W^t x - e_tau||_1 < eps``; the worst start is a point mass, and
  ``||W^t e_j - e_tau||_1 = 2 P(T_j > t)`` with T_j the hitting time of tau from j.
- **Minimax fidelity**: ``Delta = D_in^-1 (A + I)`` (row i averages node i's in-neighbours
  and itself, i.e. uniform attention); node fidelity ``phi_i = max_{t >= 1} [Delta^t]_{tau,i}``;
  minimax fidelity ``min_i phi_i``; the paper's *normalised* minimax fidelity is
  ``n * min_i phi_i`` (proxies.py of beyondparallelism reports ``100 * min_i phi_i`` over a
  100-step horizon instead; here the maximum over t is exact, see ``fidelity``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

FAMILIES = ("line", "full", "window", "dilated", "random", "searched")
SEEDED = ("random", "searched")


def _empty(n: int) -> np.ndarray:
    if n < 2:
        raise ValueError(f"a feedforward graph needs at least 2 nodes, got {n}")
    return np.zeros((n, n), dtype=np.uint8)


def line(n: int) -> np.ndarray:
    adj = _empty(n)
    idx = np.arange(n - 1)
    adj[idx, idx + 1] = 1
    return adj


def full(n: int) -> np.ndarray:
    """Fully connected causal: j -> i for every j < i."""
    return np.triu(np.ones_like(_empty(n)), 1)


def window(n: int, w: int) -> np.ndarray:
    """Sliding window: j -> i for i - w <= j < i (in-degree at most w)."""
    adj = _empty(n)
    for i in range(1, n):
        adj[max(0, i - w) : i, i] = 1
    return adj


def offsets_graph(n: int, offsets) -> np.ndarray:
    """j -> i whenever i - j is one of ``offsets`` (1 is always included)."""
    adj = _empty(n)
    for d in sorted({1, *(int(o) for o in offsets)}):
        if 1 <= d < n:
            idx = np.arange(n - d)
            adj[idx, idx + d] = 1
    return adj


def dilated(n: int, base: int = 2) -> np.ndarray:
    """Dilated graph: j -> i when i - j is a power of ``base`` (2: the power-of-two graph)."""
    if base < 2:
        raise ValueError(f"a dilated graph needs base >= 2, got {base}")
    offsets, d = [], 1
    while d < n:
        offsets.append(d)
        d *= base
    return offsets_graph(n, offsets)


def budget(n: int) -> int:
    """In-degree budget of the budgeted random graph: that of the dilated graph."""
    return max(1, math.ceil(math.log2(n)))


def random_budgeted(n: int, seed: int, degree: int | None = None) -> np.ndarray:
    """Budgeted random: node i reads i - 1 and ``degree - 1`` further predecessors drawn
    uniformly without replacement (in-degree min(i, degree)); ``degree`` None: the
    dilated graph's, ``budget(n)``."""
    if degree is not None and degree < 1:
        raise ValueError(f"a budgeted random graph needs in-degree >= 1, got {degree}")
    rng = np.random.default_rng([seed, n])
    adj = line(n)
    k = (budget(n) if degree is None else degree) - 1
    for i in range(2, n):
        pool = np.arange(i - 1)
        pick = rng.choice(pool, size=min(k, len(pool)), replace=False)
        adj[pick, i] = 1
    return adj


#: what a graph variant's parameter ``g`` sets in each family that has one (the
#: searched family's is the number of offsets its search looks for: see ``method.graph``)
PARAMETER = {
    "window": "width w",
    "dilated": "base b (offsets b^k)",
    "random": "in-degree budget",
    "searched": "number of searched offsets k",
}


def build(
    family: str,
    n: int,
    seed: int | None = None,
    w: int = 4,
    searched=(),
    g: int | None = None,
) -> np.ndarray:
    """The graph of ``family`` on n nodes; ``searched``: fractional offsets of the searched
    family (see ``search``); ``g``: the variant's parameter (:data:`PARAMETER`; None: the
    family's default graph)."""
    if g is not None and family not in PARAMETER:
        raise ValueError(f"the {family} family has no parameter (got g = {g})")
    if family == "line":
        return line(n)
    if family == "full":
        return full(n)
    if family == "window":
        return window(n, w if g is None else g)
    if family == "dilated":
        return dilated(n, 2 if g is None else g)
    if family == "random":
        if seed is None:
            raise ValueError("the random family needs a seed")
        return random_budgeted(n, seed, g)
    if family == "searched":
        return offsets_graph(n, scaled_offsets(searched, n))
    raise ValueError(f"unknown graph family {family!r}: one of {', '.join(FAMILIES)}")


def scaled_offsets(fractions, n: int) -> list[int]:
    return sorted({1, *(max(1, round(f * n)) for f in fractions)})


# ---------------------------------------------------------------- metrics


def _check(adj: np.ndarray) -> np.ndarray:
    a = np.asarray(adj) != 0
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError("adjacency must be square")
    if np.tril(a).any():
        raise ValueError("not feedforward: every edge j -> i needs j < i")
    out = a.sum(axis=1)
    if (out[:-1] == 0).any():
        raise ValueError("every node but the sink needs an out-edge (unique sink)")
    return a


def walk_matrix(adj: np.ndarray) -> np.ndarray:
    """``P[j, k]``: probability that the forward walk at j moves to k (self-loop added)."""
    a = _check(adj).astype(float) + np.eye(len(adj))
    return a / a.sum(axis=1, keepdims=True)


def survival(adj: np.ndarray, steps: int) -> np.ndarray:
    """``S[t, j] = P(T_j > t)`` for t = 0..steps (T_j: hitting time of the sink from j)."""
    p = walk_matrix(adj)
    s = np.ones(len(p))
    s[-1] = 0.0
    out = [s]
    for _ in range(steps):
        s = p @ s
        s[-1] = 0.0
        out.append(s)
    return np.array(out)


def mixing_time(adj: np.ndarray, eps: float = 0.5, max_steps: int | None = None) -> int:
    """Smallest t with ``max_j ||W^t e_j - e_tau||_1 = 2 max_j P(T_j > t) < eps``."""
    p = walk_matrix(adj)
    n = len(p)
    limit = max_steps or 1000 * n
    s = np.ones(n)
    s[-1] = 0.0
    for t in range(limit + 1):
        if 2.0 * s.max() < eps:
            return t
        s = p @ s
        s[-1] = 0.0
    raise RuntimeError(f"no mixing within {limit} steps")


def hitting_times(adj: np.ndarray) -> np.ndarray:
    """Expected steps of the forward walk from each node to the sink (exact recursion)."""
    p = walk_matrix(adj)
    n = len(p)
    h = np.zeros(n)
    for j in range(n - 2, -1, -1):
        onward = p[j, j + 1 :] @ h[j + 1 :]
        h[j] = (1.0 + onward) / (1.0 - p[j, j])
    return h


def diffusion_matrix(adj: np.ndarray) -> np.ndarray:
    """``Delta = D_in^-1 (A + I)`` with rows indexed by the receiving node."""
    a = _check(adj).T.astype(float) + np.eye(len(adj))
    return a / a.sum(axis=1, keepdims=True)


#: walk mass below which ``node_fidelity`` stops: a node whose fidelity is smaller than
#: this (a sparse random graph's worst node at large n) is known to within it
FIDELITY_TOL = 1e-12


def node_fidelity(adj: np.ndarray, max_steps: int | None = None) -> np.ndarray:
    """``phi_i = max_{t >= 1} [Delta^t]_{tau, i}``: the walk mass that has not yet
    reached the source (the only absorbing node of Delta) bounds every later entry, so the
    iteration stops once that mass is below every current maximum but the source's, whose
    supremum is the limit 1 of a nondecreasing sequence; exact, or within
    :data:`FIDELITY_TOL` for nodes whose fidelity is below it."""
    d = diffusion_matrix(adj)
    n = len(d)
    r = d[-1].copy()
    phi = r.copy()
    limit = max_steps or 1000 * n
    for _ in range(limit):
        if 1.0 - r[0] < max(phi[1:].min(), FIDELITY_TOL):
            phi[0] = 1.0
            return phi
        r = r @ d
        np.maximum(phi, r, out=phi)
    raise RuntimeError(f"fidelity did not settle within {limit} steps")


def minimax_fidelity(adj: np.ndarray) -> float:
    return float(node_fidelity(adj).min())


def metrics(adj: np.ndarray, eps: float = 0.5) -> dict[str, float]:
    n = len(adj)
    phi = minimax_fidelity(adj)
    return {
        "mixing_time": float(mixing_time(adj, eps)),
        "hitting_time": float(hitting_times(adj)[0]),
        "fidelity": float(n * phi),
        "fidelity_raw": phi,
        "edges": float((np.asarray(adj) != 0).sum()),
        "max_in_degree": float((np.asarray(adj) != 0).sum(axis=0).max()),
    }


def simulate_hitting(adj: np.ndarray, start: int, walks: int, seed: int) -> np.ndarray:
    """Monte Carlo: hitting times of the sink by ``walks`` independent forward walks."""
    p = walk_matrix(adj)
    cum = np.cumsum(p, axis=1)
    rng = np.random.default_rng(seed)
    pos = np.full(walks, start)
    steps = np.zeros(walks, dtype=np.int64)
    sink = len(p) - 1
    while (pos != sink).any():
        live = pos != sink
        u = rng.random(live.sum())
        nxt = (u[:, None] > cum[pos[live]]).sum(axis=1)
        pos[live] = np.minimum(nxt, sink)
        steps[live] += 1
    return steps


# ---------------------------------------------------------------- search


def score(adj: np.ndarray, eps: float = 0.5) -> float:
    """Search objective: high normalised fidelity and low mixing time (log ratio)."""
    m = metrics(adj, eps)
    return math.log(m["fidelity"]) - math.log(m["mixing_time"])


def search(sizes: Sequence[int], k: int, trials: int, seed: int, eps: float = 0.5) -> list[float]:
    """A seeded random search (a cheap stand-in for FunSearch) over graphs with offsets
    {1} and ``k`` fractional offsets f in (0, 1) (scaled to any n as round(f n)): random
    restarts plus single-offset mutations, scored by the mean ``score`` over ``sizes``
    (a rule must be good at every size it is used at: fractions that are good at one n
    can round to the line graph's offset 1 at a smaller one). Returns the best
    fractions."""
    rng = np.random.default_rng(seed)
    best, best_score = None, -math.inf
    current = sorted(rng.uniform(0.02, 0.6, size=k).tolist())
    for t in range(trials):
        if t % 5 == 0:
            cand = sorted(rng.uniform(0.02, 0.6, size=k).tolist())
        else:
            cand = list(best if best is not None else current)
            cand[int(rng.integers(k))] = float(rng.uniform(0.02, 0.6))
            cand = sorted(cand)
        s = float(np.mean([score(offsets_graph(n, scaled_offsets(cand, n)), eps) for n in sizes]))
        if s > best_score:
            best, best_score = cand, s
    return [round(f, 6) for f in best]


METRIC_PREFIX = "graph_n"


def metric_task(n: int) -> str:
    """The task of the metric units of size n (unit ids carry the task, not params)."""
    return f"{METRIC_PREFIX}{n:04d}"


def is_metric_task(task) -> bool:
    return str(task).startswith(METRIC_PREFIX)
