"""cot_order's claims as data.

The paper (Liu et al. 2025) fine-tunes 7B-33B code LLMs on ~51k teacher-written
(problem, chain of thought, code) triples and reports that putting the code first and
the reasoning after it beats the classic reasoning-first order: average EvalPlus pass@1
65.43 -> 71.88, "a 9.86% relative performance improvement". Here each (arm, seed) unit is
one LoRA SFT of SmolLM2-135M-Instruct; differences are paired by seed (the same
examples, batch order and adapter initialisation for every arm of a seed).

The ``effect`` of the code-first vs reasoning-first claims is the paper's gain on the
pass@1 scale: 71.88 - 65.43 = 6.45 points. Intervals are read at the look of the
sequential plan (``core.claims.Level``), alpha 0.05 two-sided overall.
``code_first_gt_cot_first`` is the central claim. The HumanEval claims are out of reach
here (pass@1 is 0 for every arm at 135M); they stay listed with what would test them.
"""

from reprolab.core.claims import NOT_IN_TEXT, Claim, OutOfReach, PairedDifference

_SETTING = (
    "7B-33B code LLMs fully fine-tuned on ~51k teacher-generated (problem, CoT, code) "
    "triples filtered by self-consistency; EvalPlus (HumanEval+, MBPP+) pass@1, greedy"
)
_EFFECT = 0.0645  # 71.88 - 65.43 pass@1 points, as a fraction
_EFFECT_BASIS = (
    "paper: 71.88 - 65.43 = 6.45 pass@1 points (card) = 9.86% relative (abstract); 0.0645 "
    "on the 0-1 pass@1 scale"
)
_CODE_ONLY = (
    "not stated in the abstract or card: the abstract compares code-first with CoT-first "
    "only; the card lists code-only as a baseline"
)
_CODE_ONLY_BASIS = (
    "margin: one pass@1 point (0.01); no code-first vs code-only number in the abstract or card"
)
_HUMANEVAL = OutOfReach(
    reason=(
        "HumanEval pass@1 of SmolLM2-135M-Instruct after a small LoRA SFT is 0 for every "
        "arm (the project's known 0 of 8), so no difference between SFT orders can show; "
        "the paper's effect lives at 7B-33B."
    ),
    would_test=(
        "A 1.5B-7B code model (e.g. Qwen2.5-Coder-1.5B/7B or DeepSeek-Coder-6.7B) "
        "fine-tuned per arm on tens of thousands of (problem, CoT, code) triples (the "
        "paper: ~51k), scored greedily on HumanEval(+) and MBPP(+) (all 164 + ~378 "
        "problems). For 7B full SFT, ~51k examples x ~1k tokens x 3 epochs ~= 6e18 FLOPs, "
        "about 5-10 H100-hours per arm; 3 arms x 2-3 seeds ~= 30-90 H100-hours (LoRA on "
        "1.5B: ~1-2 GPU-hours per arm)."
    ),
)

CLAIMS = (
    Claim(
        id="code_first_gt_cot_first",
        statement=(
            "SFT with code first, then the reasoning, gives a higher pass@1 than SFT with "
            "the reasoning first (own held-out templates)"
        ),
        paper_value="+9.86% relative pass@1 (average EvalPlus 65.43 -> 71.88)",
        paper_setting=_SETTING,
        metric="pass_at_1",
        check=PairedDifference(method="code_first", baseline="cot_first"),
        effect=_EFFECT,
        effect_basis=_EFFECT_BASIS,
        source="abstract",
        central=True,
    ),
    Claim(
        id="code_first_gt_cot_first_humaneval",
        statement="code-first SFT beats reasoning-first SFT on HumanEval pass@1",
        paper_value="+9.86% relative pass@1 (average EvalPlus 65.43 -> 71.88)",
        paper_setting=_SETTING,
        metric="humaneval_pass_at_1",
        check=PairedDifference(method="code_first", baseline="cot_first"),
        effect=_EFFECT,
        effect_basis=_EFFECT_BASIS,
        source="abstract",
        out_of_reach=_HUMANEVAL,
    ),
    Claim(
        id="code_first_gt_code_only",
        statement=(
            "the reasoning placed after the code still helps: code-first SFT beats "
            "code-only SFT (own held-out templates)"
        ),
        paper_value=_CODE_ONLY,
        paper_setting=_SETTING,
        metric="pass_at_1",
        check=PairedDifference(method="code_first", baseline="code_only"),
        effect=0.01,
        effect_basis=_CODE_ONLY_BASIS,
        source=NOT_IN_TEXT,
    ),
    Claim(
        id="code_first_gt_code_only_humaneval",
        statement="code-first SFT beats code-only SFT on HumanEval pass@1",
        paper_value=_CODE_ONLY,
        paper_setting=_SETTING,
        metric="humaneval_pass_at_1",
        check=PairedDifference(method="code_first", baseline="code_only"),
        effect=0.01,
        effect_basis=_CODE_ONLY_BASIS,
        source=NOT_IN_TEXT,
        out_of_reach=_HUMANEVAL,
    ),
    Claim(
        id="cot_first_no_gain_over_code_only",
        statement=(
            "classic reasoning-first SFT brings no benefit over code-only SFT larger than "
            "the paper's code-first effect (6.45 points): pass@1(cot_first) - "
            "pass@1(code_only) < 0.0645 (own held-out templates)"
        ),
        paper_value=(
            '"the traditional training paradigm may not yield benefits for code '
            'generation" (abstract)'
        ),
        paper_setting=_SETTING,
        metric="pass_at_1",
        # code_only - cot_first > -0.0645, i.e. cot_first gains less than 6.45 points
        check=PairedDifference(method="code_only", baseline="cot_first", margin=_EFFECT),
        effect=_EFFECT,
        effect_basis=(
            "margin: the paper's code-first gain, 6.45 pass@1 points (card), used as the "
            "non-inferiority margin of code_only vs cot_first"
        ),
        source="abstract",
    ),
)
