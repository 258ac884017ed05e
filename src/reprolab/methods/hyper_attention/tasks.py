"""Seeded interaction tasks (numpy only): entities are rows of integer attributes, the
model sees their concatenated one-hot codes, and each entity's target sums interactions
with the others.

- ``pairwise``: one type s in [N]; ``y_i = sum_j f(s_i, s_j) w_(s_j)`` (the paper's
  Section 3 target; linear self-attention with d = N represents it exactly).
- ``threeway``: one type; ``y_i = sum_(j1,j2) T(s_i, s_j1, s_j2) U(s_j1, s_j2)`` with T
  and U of CP rank ``rank`` (order-3 HyperAttention's form, quadratic in the type counts,
  so no single pairwise layer represents it).
- ``coupled``: two features (a, b); ``y_i = sum_j f1(a_i, a_j) f2(b_i, b_j) w1(a_j)
  w2(b_j)`` (a coupling of feature-level interactions: HyperFeatureAttention's form; one
  linear attention on [onehot(a), onehot(b)] only reaches sums of such terms).
- ``agents``: the paper's colliding agents on a cylindrical N x N grid, positions (x, y),
  ``V_i = -sum_j 1{min(|y_i - y_j|, N - |y_i - y_j|) <= 2R}`` (the card writes j != i;
  the two differ by the constant 1, see ``_agents``).

Targets are divided by one constant per task (the standard deviation of the clean
target at the training population size), so every task has unit-scale targets and the
noise level ``noise`` is in those units.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FAMILIES = ("pairwise", "threeway", "coupled", "agents")


@dataclass(frozen=True)
class Interaction:
    """One drawn task: attribute cardinalities and the clean target function."""

    family: str
    cards: tuple[int, ...]  # cardinality of each attribute column
    params: dict[str, np.ndarray]

    @property
    def dim(self) -> int:
        return int(sum(self.cards))

    def draw(self, rng: np.random.Generator, n: int, length: int) -> np.ndarray:
        """Entities (n, length, attributes), uniform in each attribute."""
        cols = [rng.integers(0, c, size=(n, length)) for c in self.cards]
        return np.stack(cols, axis=-1).astype(np.int64)

    def target(self, ents: np.ndarray) -> np.ndarray:
        """Clean targets (n, length), before the task's scale."""
        return TARGETS[self.family](ents, self.params)


def one_hot(ents: np.ndarray, cards: tuple[int, ...]) -> np.ndarray:
    """Concatenated one-hot codes (n, length, sum(cards)) as float32."""
    out = np.zeros((*ents.shape[:2], sum(cards)), dtype=np.float32)
    offset = 0
    for col, card in enumerate(cards):
        np.put_along_axis(out, (ents[..., col] + offset)[..., None], 1.0, axis=-1)
        offset += card
    return out


def _pairwise(ents: np.ndarray, p: dict[str, np.ndarray]) -> np.ndarray:
    s = ents[..., 0]
    return (p["f"][s[:, :, None], s[:, None, :]] * p["w"][s][:, None, :]).sum(-1)


def _threeway(ents: np.ndarray, p: dict[str, np.ndarray]) -> np.ndarray:
    # y_i = sum_(j1,j2) T[s_i,s_j1,s_j2] U[s_j1,s_j2] with T = sum_r A_r (x) B_r (x) C_r and
    # U = sum_q P_q (x) Q_q, contracted through the type counts n_t of each sequence
    s = ents[..., 0]
    n_types = p["a"].shape[0]
    counts = np.zeros((len(s), n_types))
    np.add.at(counts, (np.arange(len(s))[:, None], s), 1.0)
    # M[b, r, q] = sum_t n_t B[t, r] P[t, q], likewise with C and Q
    m1 = np.einsum("bt,tr,tq->brq", counts, p["b"], p["p"])
    m2 = np.einsum("bt,tr,tq->brq", counts, p["c"], p["q"])
    g = (m1 * m2).sum(-1)  # (batch, r)
    return np.einsum("bir,br->bi", p["a"][s], g)


def _coupled(ents: np.ndarray, p: dict[str, np.ndarray]) -> np.ndarray:
    a, b = ents[..., 0], ents[..., 1]
    f = p["f1"][a[:, :, None], a[:, None, :]] * p["f2"][b[:, :, None], b[:, None, :]]
    w = p["w1"][a] * p["w2"][b]
    return (f * w[:, None, :]).sum(-1)


def _agents(ents: np.ndarray, p: dict[str, np.ndarray]) -> np.ndarray:
    n, reach = int(p["grid"][0]), int(p["reach"][0])
    y = ents[..., 1]
    diff = np.abs(y[:, :, None] - y[:, None, :])
    close = np.minimum(diff, n - diff) <= reach
    # the sum runs over every j, the agent itself included: the card's j != i form minus
    # the constant 1, which a bias-free sum over j (SA_lin) cannot add at every L
    return -close.sum(-1).astype(np.float64)


TARGETS = {"pairwise": _pairwise, "threeway": _threeway, "coupled": _coupled, "agents": _agents}


def make_task(
    family: str,
    rng: np.random.Generator,
    n_types: int,
    rank: int,
    n_a: int,
    n_b: int,
    grid: int,
    radius: int,
) -> Interaction:
    """Draw the interaction functions of one task (standard normal entries)."""
    if family == "pairwise":
        params = {"f": rng.normal(size=(n_types, n_types)), "w": rng.normal(size=n_types)}
        return Interaction(family, (n_types,), params)
    if family == "threeway":
        params = {k: rng.normal(size=(n_types, rank)) for k in ("a", "b", "c", "p", "q")}
        return Interaction(family, (n_types,), params)
    if family == "coupled":
        params = {
            "f1": rng.normal(size=(n_a, n_a)),
            "f2": rng.normal(size=(n_b, n_b)),
            "w1": rng.normal(size=n_a),
            "w2": rng.normal(size=n_b),
        }
        return Interaction(family, (n_a, n_b), params)
    if family == "agents":
        params = {"grid": np.array([grid]), "reach": np.array([2 * radius])}
        return Interaction(family, (grid, grid), params)
    raise ValueError(f"unknown task family {family!r}: one of {', '.join(FAMILIES)}")


def sample(
    task: Interaction,
    rng: np.random.Generator,
    n: int,
    length: int,
    scale: float,
    noise: float,
) -> dict[str, np.ndarray]:
    """``n`` sequences of ``length`` entities: attributes, clean and noisy targets (the
    clean target divided by ``scale``; Gaussian noise of std ``noise`` added)."""
    ents = task.draw(rng, n, length)
    clean = task.target(ents) / scale
    noisy = clean + noise * rng.normal(size=clean.shape)
    return {
        "ents": ents,
        "clean": clean.astype(np.float32),
        "y": noisy.astype(np.float32),
    }
