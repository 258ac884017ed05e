"""lip_rcp: robust conformal prediction with Lipschitz-bounded networks.

Paper: "Efficient Robust Conformal Prediction via Lipschitz-Bounded Networks" (Massena
et al., ICML 2025). Official code: https://github.com/deel-ai-papers/lip-rcp
(deel/lip_rcp/robust_ps.py).
"""

from reprolab.contract import MethodSpec, Variant
from reprolab.methods.lip_rcp.claims import CLAIMS
from reprolab.methods.lip_rcp.config import PROFILE_DEFAULTS, LipRCPConfig

SPEC = MethodSpec(
    slug="lip_rcp",
    title="lip-rcp: robust conformal prediction with 1-Lipschitz networks",
    paper=(
        "Massena et al., Efficient Robust Conformal Prediction via Lipschitz-Bounded "
        "Networks (ICML 2025)"
    ),
    code="https://github.com/deel-ai-papers/lip-rcp",
    config_model=LipRCPConfig,
    profile_defaults=PROFILE_DEFAULTS,
    variants=(
        Variant(
            "lip_rcp",
            "worst-case LAC scores (logits moved by L eps) on a 1-Lipschitz MLP",
            True,
        ),
        Variant(
            "vanilla_cp",
            "split CP with LAC scores on lip_rcp's trained 1-Lipschitz MLP",
            reuses="lip_rcp",
        ),
        Variant(
            "rscp",
            "randomized-smoothing robust CP (Gendler et al. 2022), Monte Carlo, uncorrected",
        ),
        Variant(
            "rscp_plus",
            "RSCP+ (Yan et al. 2024): RSCP with the Monte-Carlo error bounded, on rscp's net",
            reuses="rscp",
        ),
    ),
    claims=CLAIMS,
    metrics=(
        "coverage_gap",
        "coverage_attacked",
        "coverage_clean",
        "set_size",
        "wall_seconds",
        "lipschitz_emp",
        "accuracy",
    ),
    test_overrides={
        "datasets": ["digits"],
        "max_rows": 400,
        "hidden": 16,
        "depth": 1,
        "epochs": 1,
        "bjorck_iters": 4,
        "eps_grid": [0.5],
        "pgd_steps": 2,
        "n_mc": 4,
        "n_mc_plus": 8,
        "eot": 1,
        "lip_pairs": 16,
    },
)
