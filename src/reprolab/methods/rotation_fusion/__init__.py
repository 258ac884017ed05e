"""Rotation symmetry for transformer fusion (Zhang, Zheng, Chen, Li; ICML 2025).

Paper: "Beyond the Permutation Symmetry of Transformers: The Role of Rotation for Model
Fusion" (arXiv 2502.00264). Official code: https://github.com/zhengzaiyi/RotationSymmetry
(vit-fusion/otfusion/pi_utils.py).
"""

from reprolab.contract import MethodSpec, Variant
from reprolab.methods.rotation_fusion.claims import CLAIMS
from reprolab.methods.rotation_fusion.config import PROFILE_DEFAULTS, RotationFusionConfig

#: metrics of the endpoints units that measure the matching of the pair
#: (``fusion.match_stats``): weight distance before matching (absolute, relative to the
#: models' norm), after the perm and the rotation matching, the permutation's share of
#: fixed points, the rotation's mean angle from the identity (degrees)
MATCH_METRICS = (
    "dist_ab",
    "dist_ab_rel",
    "dist_ab_perm",
    "dist_ab_rot",
    "perm_fixed_frac",
    "rot_angle_deg",
)

#: the self-fusion gate of the endpoints units (``method.self_fusion_gate``): the max
#: logit change of model ``a`` fused with a randomly permuted copy of itself, and whether
#: it is within round-off (the premise of the fusion claims)
GATE_METRICS = ("self_fusion_err", "self_fusion_ok")

SPEC = MethodSpec(
    slug="rotation_fusion",
    title="Rotation symmetry for transformer fusion",
    paper=(
        "Zhang, Zheng, Chen, Li, Beyond the Permutation Symmetry of Transformers: The Role "
        "of Rotation for Model Fusion (ICML 2025, arXiv 2502.00264)"
    ),
    code="https://github.com/zhengzaiyi/RotationSymmetry",
    config_model=RotationFusionConfig,
    profile_defaults=PROFILE_DEFAULTS,
    variants=(
        Variant(
            "endpoints",
            "the pair of trained endpoint ViTs; scored as the better one (picked on validation)",
        ),
        Variant(
            "rotation",
            "per-head Procrustes rotation of Q/K and V/O + FFN permutation, then average",
            is_method=True,
            reuses="endpoints",
            metrics=("test_acc", "val_acc"),
        ),
        Variant(
            "perm",
            "per-head permutation of Q/K and V/O + FFN permutation, then average",
            reuses="endpoints",
            metrics=("test_acc", "val_acc"),
        ),
        Variant(
            "average",
            "plain parameter averaging, no matching",
            reuses="endpoints",
            metrics=("test_acc", "val_acc"),
        ),
    ),
    claims=CLAIMS,
    metrics=(
        "test_acc",
        "val_acc",
        "invariance_err",
        "test_acc_a",
        "test_acc_b",
        *MATCH_METRICS,
        *GATE_METRICS,
    ),
    assets=("images",),
    test_overrides={
        "dataset": "digits",
        "patch": 4,
        "max_rows": 300,
        "pairs_per_seed": 1,
        "dim": 8,
        "heads": 2,
        "depth": 1,
        "epochs": 1,
        "finetune_epochs": 1,
        "alphas": [0.5],
        "invariance_rows": 16,
    },
)
