"""Multi-dimensional safety directions in the residual stream (Pan et al.; ICML 2025).

Paper: "The Hidden Dimensions of LLM Alignment: A Multi-Dimensional Analysis of
Orthogonal Safety Directions" (arXiv 2502.09674). Official code:
https://github.com/BMPixel/safety-residual-space
"""

from reprolab.contract import MethodSpec, Variant
from reprolab.core import lm
from reprolab.methods.safety_dims.claims import CLAIMS
from reprolab.methods.safety_dims.config import PROFILE_DEFAULTS, SafetyDimsConfig

_REMOVAL = ("refusal_score_drop", "refusal_drop", "trigger_share")

SPEC = MethodSpec(
    slug="safety_dims",
    title="Multi-dimensional safety directions (residual-space shift of safety fine-tuning)",
    paper=(
        "Pan, Liu, Chen, Zhou, Yu, Jia, The Hidden Dimensions of LLM Alignment: A "
        "Multi-Dimensional Analysis of Orthogonal Safety Directions (ICML 2025, arXiv "
        "2502.09674)"
    ),
    code="https://github.com/BMPixel/safety-residual-space",
    config_model=SafetyDimsConfig,
    profile_defaults=PROFILE_DEFAULTS,
    variants=(
        Variant(
            "safety_tuned",
            "LoRA safety fine-tuning (refuse harmful, comply with benign); the analyses "
            "compare it with the base model (the 'before' reference)",
            is_method=True,
            metrics=(
                "eff_rank_90",
                "comp0_acc_mid",
                "wrapper_p",
                "probe_acc_mid",
                "refusal_rate_harmful",
                "refusal_rate_benign",
            ),
        ),
        Variant(
            "remove_top",
            "delete the top-relevance message tokens of each harmful test prompt",
            reuses="safety_tuned",
            metrics=_REMOVAL,
        ),
        Variant(
            "remove_random",
            "delete as many random message tokens (the baseline)",
            reuses="safety_tuned",
            metrics=_REMOVAL,
        ),
    ),
    claims=CLAIMS,
    quantization=lm.quantization(),
    metrics=(
        "eff_rank_90",
        "comp0_acc_mid",
        "wrapper_p",
        "probe_acc_mid",
        "refusal_rate_harmful",
        "refusal_rate_benign",
        *_REMOVAL,
    ),
    assets=("smollm2",),
    test_overrides={
        "tiny_layers": 2,
        "tiny_hidden": 32,
        "test_topics": 2,
        "train_per_cell": 2,
        "test_per_cell": 2,
        "epochs": 1,
        "batch_size": 4,
        "permutations": 19,
        "random_draws": 1,
        "spectrum_k": 4,
    },
)
