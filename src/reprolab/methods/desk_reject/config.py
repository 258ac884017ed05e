"""Desk-rejection settings. Defaults are the smoke profile; PROFILE_DEFAULTS['paper']
scales up (CVPR 2025's real limit of 25 on conference-sized instances)."""

from __future__ import annotations

from pydantic import Field

from reprolab.contract import MethodConfig, distinct_values, prepare_field


class DeskRejectConfig(MethodConfig):
    # prepare reads the prepare_field keys: the instance generator and the tiny enumeration
    # "conf" family: conference-like instances, the limit binds for a few prolific authors
    sizes: list[int] = prepare_field([100, 200], min_length=1)  # papers per instance
    limit: int = prepare_field(6, ge=1)  # b; CVPR 2025 used 25
    pool_ratio: float = prepare_field(2.0, gt=0)  # researchers in the pool per paper
    # "tight" family: a small limit on a dense collaboration graph (fractional LPs)
    tight_sizes: list[int] = prepare_field([40, 80], min_length=0)
    tight_limit: int = prepare_field(2, ge=1)
    tight_pool_ratio: float = prepare_field(0.5, gt=0)
    # shared by both families
    pareto_shape: float = prepare_field(2.0, gt=0)  # tail of author productivity
    max_team: int = prepare_field(8, ge=1, le=20)  # authors per paper: 1..max_team
    team_p: float = prepare_field(0.5, gt=0, lt=1)
    # the dilemma: exhaustive search over tiny instances
    tiny_authors: list[int] = prepare_field([2, 3, 4], min_length=0)
    tiny_limits: list[int] = prepare_field([1, 2], min_length=1)
    tiny_max_papers: int = prepare_field(4, ge=1, le=5)
    # solvers
    milp_max_papers: int = Field(default=1000, ge=1)  # larger instances skip the MILPs
    # branch-and-bound nodes per MILP solve: a work budget, so a solve the budget stops
    # ends at the same point on any machine (a time limit made results machine-dependent)
    milp_node_limit: int = Field(default=10_000, ge=1)

    _sizes_positive = distinct_values(
        "sizes",
        "tight_sizes",
        message="sizes must be distinct positive paper counts",
        ok=lambda m: m >= 1,
    )

    _tiny_authors = distinct_values(
        "tiny_authors",
        message="tiny_authors must be distinct author counts in 1..4",
        ok=lambda n: 1 <= n <= 4,
    )

    def tasks(self) -> dict[str, dict[str, str | int]]:
        """Task name -> its unit parameters: ``family`` (conf, tight: one seeded synthetic
        instance per seed; tiny: the exhaustive search) and ``papers`` and ``limit``, or
        for a tiny task ``authors``. Names are for people; nothing parses them."""
        out: dict[str, dict[str, str | int]] = {}
        for family, sizes, limit in (
            ("conf", self.sizes, self.limit),
            ("tight", self.tight_sizes, self.tight_limit),
        ):
            for m in sizes:
                out[f"{family}_m{m}"] = {"family": family, "papers": m, "limit": limit}
        for n in self.tiny_authors:
            out[f"tiny_n{n}"] = {"family": "tiny", "authors": n}
        return out


PROFILE_DEFAULTS = {
    "smoke": {},
    "paper": {
        "sizes": [500, 1000, 2000, 4000],
        "limit": 25,
        "tight_sizes": [50, 100, 200],
        "tiny_max_papers": 5,
        "milp_max_papers": 4000,
        "milp_node_limit": 10_000,
    },
}
