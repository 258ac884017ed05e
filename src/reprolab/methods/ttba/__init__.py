"""ttba: the two-third bridge hard-label attack, against HopSkipJump and Sign-OPT.

Paper: "TtBA: Two-third Bridge Approach for Decision-Based Adversarial Attack" (Wang et
al., ICML 2025). Official code: https://github.com/BUPTAIOC/TtBA (TtBA.py, main.py).
"""

from reprolab.contract import MethodSpec, Variant
from reprolab.methods.ttba.claims import CLAIMS
from reprolab.methods.ttba.config import PROFILE_DEFAULTS, TtbaConfig

#: headline metrics of every attack (per unit: median over the attacked images)
ATTACK_METRICS = (
    "median_l2",
    "median_l2_half",
    "median_l2_quarter",
    "success_rate",
    "queries_to_success_median",
    "queries_used_max",
)
#: TtBA's best-k diagnostic (the baselines have no k_bridge)
BEST_K_METRICS = ("k_ratio_median",)
#: the victim's own metrics (test split)
VICTIM_METRICS = ("accuracy",)

SPEC = MethodSpec(
    slug="ttba",
    title="TtBA: two-third bridge hard-label attack vs HopSkipJump and Sign-OPT",
    paper=(
        "Wang et al., TtBA: Two-third Bridge Approach for Decision-Based Adversarial "
        "Attack (ICML 2025)"
    ),
    code="https://github.com/BUPTAIOC/TtBA",
    config_model=TtbaConfig,
    profile_defaults=PROFILE_DEFAULTS,
    variants=(
        Variant(
            "victim",
            "the CNN under attack, trained once per (task, seed); reports its clean accuracy",
            metrics=VICTIM_METRICS,
        ),
        Variant(
            "ttba",
            "TtBA: normal estimate, k_bridge bisection, step with 2/3 k_bridge",
            is_method=True,
            reuses="victim",
            metrics=(*ATTACK_METRICS, *BEST_K_METRICS),
        ),
        Variant(
            "hsja",
            "HopSkipJump from adversarial-robustness-toolbox (L2, untargeted)",
            reuses="victim",
            metrics=ATTACK_METRICS,
        ),
        Variant(
            "signopt",
            "Sign-OPT from adversarial-robustness-toolbox (untargeted)",
            reuses="victim",
            metrics=ATTACK_METRICS,
        ),
    ),
    claims=CLAIMS,
    # The quantize stage quantizes the trained victims; every attack then runs on the
    # int8 victim too. int8_dynamic quantizes the CNN's two Linear layers; the
    # convolutions stay fp32.
    metrics=(*ATTACK_METRICS, *BEST_K_METRICS, *VICTIM_METRICS),
    test_overrides={
        "datasets": ["digits"],
        "max_rows": 0,
        "epochs": 1,
        "lr": 1e-2,
        "batch_size": 32,
        "channels": [8, 16],
        "hidden": 32,
        "n_images": 1,
        "budget": 150,
        "curve_points": 2,
        "init_query": 4,
        "diag_images": 1,
        "diag_grid": 0.1,
    },
)
