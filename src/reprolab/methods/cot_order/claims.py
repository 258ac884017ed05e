"""cot_order's claims as data.

The paper (Liu et al. 2025) fine-tunes 7B-33B code LLMs on ~51k teacher-written
(problem, chain of thought, code) triples and reports that putting the code first and
the reasoning after it beats the classic reasoning-first order: average EvalPlus pass@1
65.43 -> 71.88, "a 9.86% relative performance improvement". Here each (arm, seed) unit is
one LoRA SFT of SmolLM2-135M-Instruct; differences are paired by seed (the same
examples, batch order and adapter initialisation for every arm of a seed).

The code-first vs reasoning-first claims are read as the paper states them, relative
(issue 46; before, an absolute 6.45 points, which at a 65% base is 9.86% but at our
~10% base is a 60% gain): :class:`RelativeGain`, pass@1(method) / pass@1(baseline) - 1,
a ratio of the means over the seeds (paired by seed) with a delta-method interval;
``effect`` 0.0986 is the abstract's "9.86% relative performance improvement". Intervals
are read at the look of the sequential plan (``judging.claims.Level``), alpha 0.05
two-sided overall. ``code_first_gt_cot_first`` is the central claim. The HumanEval
claims are out of reach here (pass@1 is 0 for every arm at 135M); they stay listed
with what would test them.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from reprolab.evidence.judging.claims import (
    NOT_IN_TEXT,
    Claim,
    IntervalCheck,
    OutOfReach,
    PairedDifference,
    Sample,
    is_seed_free,
    paired,
)
from reprolab.evidence.judging.stats import ratio_of_means


@dataclass(frozen=True)
class RelativeGain:
    """The relative gain of ``method`` over ``baseline`` on ``metric``: R - 1 with
    R = mean(method) / mean(baseline), the means over the seeds (each seed's value the
    mean of its rows; pairs with both arms only), and the delta-method standard error of
    a ratio of paired means, sd(method_i - R baseline_i) / (sqrt(n) mean(baseline)); an
    :class:`IntervalCheck` statistic (t interval with n - 1 degrees of freedom).
    Nothing to test when the baseline's mean is not positive (no relative gain of a 0
    pass@1)."""

    method: str
    baseline: str

    def variants(self) -> tuple[str, ...]:
        return (self.method, self.baseline)

    def __call__(self, table: pd.DataFrame, metric: str) -> Sample:
        wide = paired(table, metric)
        if any(v not in wide.columns for v in self.variants()):
            return Sample(untested=f"not tested: no {metric!r} of both {self.variants()}")
        rows = wide[list(self.variants())].dropna()
        if rows.empty:
            return Sample(untested=f"not tested: no paired {metric!r} values")
        pairs = len(rows)
        rows = rows.groupby(level="seed").mean()  # the seed is the replicate
        x, y = rows[self.method].to_numpy(float), rows[self.baseline].to_numpy(float)
        n, mx, my = x.size, float(x.mean()), float(y.mean())
        if my <= 0:
            return Sample(untested=f"not tested: {self.baseline} mean {metric} is {my:.3g}")
        ratio, se = ratio_of_means(x, y)
        if is_seed_free(table[table.variant.isin(self.variants())]):
            se = float("inf")
        return Sample(
            estimate=ratio - 1.0,
            se=se,
            n=n,
            summary=(
                f"{self.method} / {self.baseline} - 1 = {ratio - 1:+.4g} ({mx:.4g} vs {my:.4g}) "
                f"over {pairs} pairs in {n} seeds"
            ),
            extra={"method_mean": mx, "baseline_mean": my},
        )


_SETTING = (
    "7B-33B code LLMs fully fine-tuned on ~51k teacher-generated (problem, CoT, code) "
    "triples filtered by self-consistency; EvalPlus (HumanEval+, MBPP+) pass@1, greedy"
)
_EFFECT = 0.0986  # the abstract's "9.86% relative performance improvement"
_EFFECT_BASIS = (
    "paper: +9.86% relative pass@1 (abstract; average EvalPlus 65.43 -> 71.88, card), "
    "as a relative gain pass@1(code_first) / pass@1(cot_first) - 1 = 0.0986"
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
        check=IntervalCheck(RelativeGain(method="code_first", baseline="cot_first")),
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
        check=IntervalCheck(RelativeGain(method="code_first", baseline="cot_first")),
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
            "classic reasoning-first SFT brings no benefit over code-only SFT as large as "
            "the paper's code-first gain (9.86% relative): pass@1(cot_first) / "
            "pass@1(code_only) - 1 < 0.0986 (own held-out templates)"
        ),
        paper_value=(
            '"the traditional training paradigm may not yield benefits for code '
            'generation" (abstract)'
        ),
        paper_setting=_SETTING,
        metric="pass_at_1",
        # pass@1(cot_first) / pass@1(code_only) - 1 < 0.0986: a gain smaller than the paper's
        check=IntervalCheck(
            RelativeGain(method="cot_first", baseline="code_only"),
            bound=_EFFECT,
            higher_is_better=False,
        ),
        effect=_EFFECT,
        effect_basis=(
            "margin: the paper's code-first gain, 9.86% relative (abstract), used as the "
            "bound of cot_first's relative gain over code_only"
        ),
        source="abstract",
    ),
)
