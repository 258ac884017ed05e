"""crane: grammar-constrained decoding that keeps room for reasoning (CRANE).

Paper: "CRANE: Reasoning with constrained LLM generation" (Banerjee, Suresh, Ugare,
Misailovic, Singh; ICML 2025; arXiv 2502.09061). Official code:
https://github.com/uiuc-focal-lab/CRANE (src/crane/main.py, gsm_grammar.lark).
"""

from reprolab.contract import MethodSpec, Variant
from reprolab.core import lm
from reprolab.methods.crane.claims import CLAIMS
from reprolab.methods.crane.config import PROFILE_DEFAULTS, CraneConfig

#: span_breaks / reasoning_right / right_but_invalid: CRANE's condition per unit (the
#: answer span breaks the grammar; the reasoning reaches the gold answer; both), the
#: premise of the claims against unconstrained CoT (claims.RIGHT_BUT_INVALID)
DECODER_METRICS = (
    "accuracy",
    "validity",
    "answered",
    "answer_validity",
    "span_breaks",
    "reasoning_right",
    "right_but_invalid",
)

SPEC = MethodSpec(
    slug="crane",
    title="CRANE: constrained decoding that leaves room for reasoning (vs direct, constrained, CoT)",
    paper=(
        "Banerjee, Suresh, Ugare, Misailovic, Singh. CRANE: Reasoning with constrained LLM "
        "generation (ICML 2025, arXiv 2502.09061)"
    ),
    code="https://github.com/uiuc-focal-lab/CRANE",
    config_model=CraneConfig,
    profile_defaults=PROFILE_DEFAULTS,
    variants=(
        Variant(
            "model",
            "SmolLM2-135M-Instruct as it is (few-shot prompts, no fine-tuning; tiny model at smoke)",
            metrics=("parameters",),
        ),
        Variant(
            "crane",
            "CRANE: unconstrained until <<, then sample, check with lark, mask (llguidance) only on failure",
            is_method=True,
            reuses="model",
            metrics=DECODER_METRICS,
        ),
        Variant(
            "unconstrained_direct",
            "direct answer, sampled without a grammar",
            reuses="model",
            metrics=DECODER_METRICS,
        ),
        Variant(
            "constrained_direct",
            "direct answer, every token constrained to the grammar",
            reuses="model",
            metrics=DECODER_METRICS,
        ),
        Variant(
            "unconstrained_cot",
            "chain of thought then the answer, sampled without a grammar",
            reuses="model",
            metrics=DECODER_METRICS,
        ),
    ),
    claims=CLAIMS,
    quantization=lm.quantization(),
    metrics=(*DECODER_METRICS, "parameters"),
    assets=("smollm2",),
    test_overrides={
        "families": ["leg_counting"],
        "n_calibration": 1,
        "n_problems": 1,
        "shots": 1,
        "max_tokens_direct": 3,
        "max_tokens_cot": 3,
        "max_tokens_cot_gsm": 3,
    },
)
