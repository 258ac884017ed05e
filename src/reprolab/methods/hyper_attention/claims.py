"""hyper_attention's claims as data (core checks only).

Rules, fixed before the pipeline runs (the learning rates and the agents bound were set
from exploratory runs on seed 0's validation sets, see README). Every check reads one
task family (``Where(..., family=...)``), pools seeds, and reads its interval at the look
of the sequential plan (``judging.claims.Level``, alpha 0.05 two-sided overall);
``lsa_agents_ood`` is the central claim:

- ``excess`` = test MSE against the clean targets / noise variance: the test MSE against
  noisy targets is (1 + excess) times the noise floor. "Reaches the noise floor" means
  excess < 0.1 (within 10% of the floor) at the training size (``excess_id``) and at
  the worst other size (``excess_ood``).
- ``nmse`` = test MSE against the clean targets / their variance.
- Comparisons at matched parameter count: core PairedDifference of ``nmse_id`` paired by
  (seed), baselines at ``scale`` = 1 (their count nearest the method's on that task);
  lower is better, reproduced when the interval of method - baseline lies below 0.
"""

from __future__ import annotations

from reprolab.evidence.judging.claims import Claim, PairedDifference, Threshold, Where

FLOOR_MARGIN = 0.1
AGENTS_NMSE = 0.01

_PAIRWISE = (
    "one-layer linear self-attention, d = N entity types, target "
    "y_i = sum_j f(s_i, s_j) w_(s_j) (Section 3, Thm 3.1) (card)"
)
_AGENTS = (
    "colliding agents on a cylindrical N x N grid, N = 360, trained at L = 20 agents, "
    "tested at L in {2, 5, 10, 30, 40} (paper's experiment, card)"
)
_THREEWAY = "order-3 linear HyperAttention vs standard attention at matched size (card)"
_COUPLED = (
    "coupled feature-level interactions; the paper compares parameter counts at N = 360 "
    "(HFA ~1e6 vs self-attention ~2e7) (card)"
)


_NMSE_EFFECT = 0.01
_NMSE_BASIS = (
    "margin: 0.01 of the clean target's variance (one point of R^2; also the label-noise "
    "variance, noise std 0.1 of the target std); no error gap in the abstract or card"
)


def _beats(method: str, baseline: str, family: str) -> Where:
    return Where(
        PairedDifference(method, baseline, higher_is_better=False), family=family, scale=1.0
    )


CLAIMS = (
    Claim(
        id="lsa_pairwise_noise_floor",
        statement=(
            "Linear self-attention reaches the noise floor on pairwise targets at the "
            f"training population size: test MSE within {FLOOR_MARGIN:.0%} of the noise "
            "variance (excess < 0.1)"
        ),
        paper_value="learns pairwise interaction functions; training MSE -> 0 (card)",
        paper_setting=_PAIRWISE,
        metric="excess_id",
        check=Where(Threshold("lsa", FLOOR_MARGIN, higher_is_better=False), family="pairwise"),
        effect=0.1,
        effect_basis=(
            "paper: training MSE -> 0 (card), i.e. excess ~0, against the bound 0.1: distance 0.1"
        ),
        source="card",
        rule="sign",  # the same error metric as lsa_agents_ood
    ),
    Claim(
        id="lsa_pairwise_ood",
        statement=(
            "Trained at one population size, linear self-attention stays at the noise floor "
            "at every other size tested (worst size: excess < 0.1)"
        ),
        paper_value="generalises to other population sizes / out of distribution (card)",
        paper_setting=_PAIRWISE,
        metric="excess_ood",
        check=Where(Threshold("lsa", FLOOR_MARGIN, higher_is_better=False), family="pairwise"),
        effect=0.1,
        effect_basis=(
            "paper: test error ~1e-7 at other population sizes (card), i.e. excess ~0, "
            "against the bound 0.1: distance 0.1"
        ),
        source="card",
        rule="sign",  # the same error metric as lsa_agents_ood
    ),
    Claim(
        id="lsa_agents_ood",
        statement=(
            "On colliding agents, linear self-attention trained at L = 20 predicts the "
            f"potential at every other L with normalised MSE < {AGENTS_NMSE}"
        ),
        paper_value="training MSE -> 0; test error ~1e-7 also at L in {2, 5, 10, 30, 40}",
        paper_setting=_AGENTS,
        metric="nmse_ood",
        check=Where(Threshold("lsa", AGENTS_NMSE, higher_is_better=False), family="agents"),
        effect=0.01,
        effect_basis=(
            "paper: test error ~1e-7 (card), i.e. normalised MSE ~0, against the bound "
            "0.01: distance ~0.01"
        ),
        source="card",
        central=True,
        # an error metric that is either near 0 (the model learned the map) or a failure
        # two orders larger: its mean at 5-20 seeds is a poor summary and a t-interval
        # misstates it (bench/results/sequential_grid.md, bimodal cells); the median
        # ("a typical seed") is what the card's '~1e-7' describes
        rule="sign",
    ),
    *(
        Claim(
            id=f"ha3_beats_{baseline}_threeway",
            statement=(
                "Order-3 HyperAttention has lower test error than a "
                f"{depth}-layer softmax transformer with the same parameter count on a "
                "three-way interaction target"
            ),
            paper_value=(
                "HyperAttention captures 3-way interactions that standard attention "
                "cannot at matched size (no number in the card)"
            ),
            paper_setting=_THREEWAY,
            metric="nmse_id",
            check=_beats("ha3", baseline, "threeway"),
            effect=_NMSE_EFFECT,
            effect_basis=_NMSE_BASIS,
            source="card",
        )
        for baseline, depth in (("sa1", 1), ("sa2", 2))
    ),
    *(
        Claim(
            id=f"hfa_beats_{baseline}_coupled",
            statement=(
                f"At the same parameter count, linear HyperFeatureAttention has lower test "
                f"error than {what} on coupled-feature targets (so self-attention needs more "
                "parameters for the same error)"
            ),
            paper_value="HFA ~1e6 parameters vs ~2e7 for self-attention at N = 360",
            paper_setting=_COUPLED,
            metric="nmse_id",
            check=_beats("hfa", baseline, "coupled"),
            effect=_NMSE_EFFECT,
            effect_basis=_NMSE_BASIS,
            source="card",
        )
        for baseline, what in (
            ("lsa", "linear self-attention"),
            ("sa1", "a 1-layer softmax transformer"),
            ("sa2", "a 2-layer softmax transformer"),
        )
    ),
)
