"""cot_order's claims as data.

The paper (Liu et al. 2025) fine-tunes 7B-33B code LLMs on ~51k teacher-written
(problem, chain of thought, code) triples and reports that putting the code first and
the reasoning after it beats the classic reasoning-first order: average EvalPlus pass@1
65.43 -> 71.88, "a 9.86% relative performance improvement". Here each (arm, seed) unit is
one LoRA SFT of SmolLM2-135M-Instruct; differences are paired by seed (the same
examples, batch order and adapter initialisation for every arm of a seed).

``paper_effect`` is the paper's gain on the pass@1 scale: 71.88 - 65.43 = 6.45 points.
"""

from reprolab.core.claims import Claim, PairedDifference

_SETTING = (
    "7B-33B code LLMs fully fine-tuned on ~51k teacher-generated (problem, CoT, code) "
    "triples filtered by self-consistency; EvalPlus (HumanEval+, MBPP+) pass@1, greedy"
)
_EFFECT = 0.0645  # 71.88 - 65.43 pass@1 points, as a fraction

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
        paper_effect=_EFFECT,
    ),
    Claim(
        id="code_first_gt_cot_first_humaneval",
        statement="code-first SFT beats reasoning-first SFT on HumanEval pass@1",
        paper_value="+9.86% relative pass@1 (average EvalPlus 65.43 -> 71.88)",
        paper_setting=_SETTING,
        metric="humaneval_pass_at_1",
        check=PairedDifference(method="code_first", baseline="cot_first"),
        paper_effect=_EFFECT,
    ),
    Claim(
        id="code_first_gt_code_only",
        statement=(
            "the reasoning placed after the code still helps: code-first SFT beats "
            "code-only SFT (own held-out templates)"
        ),
        paper_value="code-first above the code-only baseline (the paper's best order)",
        paper_setting=_SETTING,
        metric="pass_at_1",
        check=PairedDifference(method="code_first", baseline="code_only"),
    ),
    Claim(
        id="code_first_gt_code_only_humaneval",
        statement="code-first SFT beats code-only SFT on HumanEval pass@1",
        paper_value="code-first above the code-only baseline (the paper's best order)",
        paper_setting=_SETTING,
        metric="humaneval_pass_at_1",
        check=PairedDifference(method="code_first", baseline="code_only"),
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
    ),
)
