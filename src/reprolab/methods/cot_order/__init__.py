"""Order of reasoning and code in code-generation SFT data (Liu et al.; ICML 2025).

Paper: Ren-Biao Liu, Anqi Li, Chaoding Yang, Hui Sun, Ming Li, "Revisiting
Chain-of-Thought in Code Generation: Do Language Models Need to Learn Reasoning before
Coding?" (ICML 2025, OpenReview wSZeQoJ1Vk; no arXiv version found). No official code
found.
"""

from reprolab.contract import MethodSpec, Variant
from reprolab.core import lm
from reprolab.methods.cot_order.claims import CLAIMS
from reprolab.methods.cot_order.config import PROFILE_DEFAULTS, CotOrderConfig

SPEC = MethodSpec(
    slug="cot_order",
    title="Code first, then chain of thought: the order of reasoning and code in SFT",
    paper=(
        "Ren-Biao Liu, Anqi Li, Chaoding Yang, Hui Sun, Ming Li, Revisiting "
        "Chain-of-Thought in Code Generation: Do Language Models Need to Learn Reasoning "
        "before Coding? (ICML 2025, OpenReview wSZeQoJ1Vk; no arXiv version found)"
    ),
    code="no official code found",
    config_model=CotOrderConfig,
    profile_defaults=PROFILE_DEFAULTS,
    variants=(
        Variant("code_only", "SFT target: the code block alone"),
        Variant("cot_first", "SFT target: the reasoning, then the code (classic CoT order)"),
        Variant(
            "code_first",
            "SFT target: the code, then the reasoning that explains it (the paper's order)",
            is_method=True,
        ),
    ),
    claims=CLAIMS,
    quantization=lm.quantization(),
    metrics=(
        "pass_at_1",
        "humaneval_pass_at_1",
        "code_found",
        "humaneval_code_found",
        "finished",
        "humaneval_finished",
        "syntax_errors",
        "humaneval_syntax_errors",
        "new_tokens",
        "humaneval_new_tokens",
    ),
    assets=("smollm2",),
    test_overrides={
        "n_train": 4,
        "n_test": 2,
        "n_tests": 2,
        "n_humaneval": 2,
        "evidence": {"first": 1},
        "batch_size": 4,
        "max_new_tokens": 8,
    },
)
