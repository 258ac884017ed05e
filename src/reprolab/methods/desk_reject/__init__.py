"""Fairness-aware desk rejection under per-author submission limits (Cao et al., 2025).

Paper: "Dissecting Submission Limit in Desk-Rejections: A Mathematical Analysis of
Fairness in AI Conference Policies" (arXiv 2502.00690). No official code.
"""

from reprolab.contract import MethodSpec, Quantization, Variant
from reprolab.methods.desk_reject.claims import CLAIMS
from reprolab.methods.desk_reject.config import (
    PROFILE_DEFAULTS,
    DeskRejectConfig,
)

SPEC = MethodSpec(
    slug="desk_reject",
    title="Fairness-aware desk rejection under submission limits",
    paper=(
        "Cao, Li, Liang, Sha, Shi, Song, Zhang, Dissecting Submission Limit in "
        "Desk-Rejections: A Mathematical Analysis of Fairness in AI Conference Policies "
        "(arXiv 2502.00690, ICML 2025)"
    ),
    code="none published; re-implemented from the paper's problem statement",
    config_model=DeskRejectConfig,
    profile_defaults=PROFILE_DEFAULTS,
    variants=(
        Variant(
            "lp_rounded",
            "average fairness: LP relaxation (HiGHS) of min mean author cost, rounded to a "
            "feasible keep-vector (the method)",
            True,
        ),
        Variant(
            "cvpr_rule",
            "CVPR 2025-style rule: papers in submission order, rejected once an author has b",
        ),
        Variant("milp_average", "exact optimum of average fairness by MILP (HiGHS)"),
        Variant(
            "milp_worst_case",
            "worst-case fairness by MILP: min max author cost, then min mean cost among ties",
        ),
    ),
    claims=CLAIMS,
    quantization=Quantization(
        schemes=(),
        reason=(
            "the trained object is a 0/1 keep-vector from an LP/MILP solve (which papers pass "
            "desk rejection), not a network: there are no weights or activations to quantize"
        ),
    ),
    metrics=("mean_cost", "max_cost", "innocent_hit_frac", "rejected_frac", "no_ideal"),
    test_overrides={
        "sizes": [30],
        "tight_sizes": [20],
        "tiny_authors": [2, 3],
        "tiny_limits": [1],
        "tiny_max_papers": 3,
        "milp_node_limit": 2_000,
    },
)
