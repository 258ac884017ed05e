"""(Hyper) self-attention as an interaction learner (Ustaomeroglu & Qu, ICML 2025).

Paper: "A Theoretical Study of (Hyper) Self-Attention through the Lens of Interactions"
(arXiv 2506.06179). No official code found; the modules follow the formulas of the paper
(linear self-attention, linear HyperFeatureAttention, order-3 linear HyperAttention).
"""

from reprolab.contract import MethodSpec, Quantization, Variant
from reprolab.methods.hyper_attention.claims import CLAIMS
from reprolab.methods.hyper_attention.config import (
    PROFILE_DEFAULTS,
    HyperAttentionConfig,
)

SPEC = MethodSpec(
    slug="hyper_attention",
    title="(Hyper) self-attention as an interaction learner: linear SA, HFA, HyperAttention",
    paper=(
        "Ustaomeroglu, Qu, A Theoretical Study of (Hyper) Self-Attention through the Lens "
        "of Interactions (arXiv 2506.06179)"
    ),
    code="no official code found; modules from the paper's formulas",
    config_model=HyperAttentionConfig,
    profile_defaults=PROFILE_DEFAULTS,
    variants=(
        Variant("ha3", "order-3 linear HyperAttention, rank-R factors (three-way task)", True),
        Variant("hfa", "linear HyperFeatureAttention, 2 factors (coupled-feature task)"),
        Variant("lsa", "one-layer linear self-attention (X C X^T) X W_V"),
        Variant("sa1", "1-layer softmax transformer, width matched to the parameter budget"),
        Variant("sa2", "2-layer softmax transformer, width matched to the parameter budget"),
    ),
    claims=CLAIMS,
    quantization=Quantization(schemes=("int8_dynamic", "rtn_w8a8")),
    metrics=("nmse_id", "nmse_ood", "excess_id", "excess_ood", "n_params"),
    test_overrides={
        "n_types": 4,
        "coupled_a": 3,
        "coupled_b": 3,
        "grid": 10,
        "radius": 1,
        "l_train": 6,
        "l_test": [3, 9],
        "n_train": 32,
        "n_val": 8,
        "n_test": 8,
        "steps": 3,
        "batch": 8,
        "history_every": 2,
        "scales": [1.0, 2.0],
    },
)
