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
_SHIFT = (
    "secondary_ratio_mid",
    "dominant_share_mid",
    "eff_rank_90",
    "comp0_acc_mid",
    "comp0_vs_random_mid",
    "rand_acc_mid",
    "wrapper_excess",
    "wrapper_z",
    "probe_acc_mid",
    "refusal_rate_harmful",
    "refusal_rate_benign",
    "calib_refusal_harmful",
    "base_calib_refusal_harmful",
)

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
            metrics=_SHIFT,
        ),
        Variant(
            "control_tuned",
            "the harmless control: LoRA tuned on benign prompts alone (compliant opening), "
            "as many rows and steps as safety_tuned; the null of the shift's secondary-to-dominant ratio",
            metrics=_SHIFT,
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
    metrics=(*_SHIFT, *_REMOVAL),
    assets=("smollm2",),
    test_overrides={
        "tiny_layers": 2,
        "tiny_hidden": 32,
        "test_topics": 2,
        "calib_topics": 1,
        "train_per_cell": 2,
        "calib_per_cell": 2,
        "test_per_cell": 2,
        "epochs": 1,
        "batch_size": 4,
        "permutations": 19,
        "random_draws": 1,
        "random_dirs": 2,
        "spectrum_k": 4,
    },
)
