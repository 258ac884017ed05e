"""Misfit vs gain in weak-to-strong generalisation beyond the squared loss.

Paper: "Relating Misfit to Gain in Weak-to-Strong Generalization Beyond the Squared Loss"
(Mulgund & Pabbaraju, arXiv 2501.19105). Authors' code:
https://github.com/abhmul/general-misfit-gain
"""

from reprolab.contract import MethodSpec, Variant
from reprolab.methods.w2s_bregman.claims import CLAIMS
from reprolab.methods.w2s_bregman.config import PROFILE_DEFAULTS, W2SConfig

SPEC = MethodSpec(
    slug="w2s_bregman",
    title="Misfit vs gain in weak-to-strong generalisation (KL / Bregman)",
    paper=(
        "Mulgund, Pabbaraju, Relating Misfit to Gain in Weak-to-Strong Generalization "
        "Beyond the Squared Loss (arXiv 2501.19105)"
    ),
    code="https://github.com/abhmul/general-misfit-gain",
    config_model=W2SConfig,
    profile_defaults=PROFILE_DEFAULTS,
    variants=(
        Variant("k1", "one linear softmax head trained on KL(f_strong || f_weak)"),
        Variant("k2", "convex combination of 2 softmax heads, learned softmax weights"),
        Variant("k4", "convex combination of 4 softmax heads, learned softmax weights"),
        Variant("k8", "convex combination of 8 softmax heads (the paper's k-combination)", True),
        Variant("convex", "convex hull of fixed heads incl. f*'s (exact Bregman projection)"),
    ),
    claims=CLAIMS,
    metrics=("gain_minus_misfit", "gain", "misfit", "gain_minus_misfit_rev", "err_strong"),
    test_overrides={
        "n_tasks": 1,
        "variants": ["k1", "k8", "convex"],
        "n_weak": 40,
        "n_pool": 60,
        "n_strong": 40,
        "n_test": 50,
        "steps": 4,
        "weak_steps": 4,
        "history_every": 2,
        "convex_atoms": 3,
    },
)
