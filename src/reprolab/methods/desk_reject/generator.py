"""Seeded synthetic author-paper graphs with heavy-tailed author productivity.

Stand-in for a conference's submissions (the paper's case studies use no public data we
can ship): a pool of ``pool_ratio * m`` researchers with Pareto productivity weights;
each paper has 1 + Binomial(max_team - 1, team_p) authors (1 to 8 by default); its lead
author is drawn uniformly from the pool (early-career researchers lead most papers) and
its co-authors in proportion to productivity, so a few senior authors sit on many papers.
Papers are numbered in submission order; authors with no paper are dropped.
"""

from __future__ import annotations

import numpy as np

from reprolab.methods.desk_reject.policies import Instance

FAMILY_CODES = {"conf": 0, "tight": 1}


def synthetic_instance(
    m: int,
    limit: int,
    seed: int,
    family: str,
    pool_ratio: float,
    pareto_shape: float,
    max_team: int,
    team_p: float,
) -> Instance:
    rng = np.random.default_rng([seed, FAMILY_CODES[family], m])
    pool = max(max_team, round(pool_ratio * m))
    weight = 1.0 + rng.pareto(pareto_shape, pool)  # Pareto(shape) with minimum 1
    papers = []
    for _ in range(m):
        team = 1 + rng.binomial(max_team - 1, team_p)
        lead = int(rng.integers(pool))
        p = weight.copy()
        p[lead] = 0.0
        coauthors = rng.choice(pool, size=team - 1, replace=False, p=p / p.sum())
        papers.append(np.r_[lead, coauthors].astype(np.int64))
    # relabel the authors that have a paper as 0..n-1, in order of first appearance
    flat = np.concatenate(papers)
    _, first = np.unique(flat, return_index=True)
    order = flat[np.sort(first)]
    relabel = np.full(pool, -1, dtype=np.int64)
    relabel[order] = np.arange(len(order))
    return Instance.from_papers([relabel[p] for p in papers], limit, n_authors=len(order))
