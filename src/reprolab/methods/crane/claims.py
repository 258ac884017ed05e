"""crane's claims as data.

Rules, fixed before any run (t-intervals over (task, seed) pairs, pooled over the
evaluated tasks (the calibrated family; GSM-Symbolic too only with ``include_gsm``),
read at the look of the sequential plan, alpha 0.05 two-sided overall; every decoder
sees the same problems and sampling seeds in a pair):

- ``beats_best_baseline``: CRANE accuracy minus the best baseline's, where the best
  baseline of a task is the one (of unconstrained direct, constrained direct,
  unconstrained CoT) with the highest mean accuracy on that task at the precision
  evaluated. Picking the maximum on the evaluation data favours the baseline, never
  CRANE. Reproduced when the interval lies above 0, not reproduced when below, else
  inconclusive.
- ``beats_unconstrained_cot`` / ``beats_constrained_direct``: the same against each of
  the two baselines the card names.
- ``all_valid``: every CRANE output holds an answer span that parses (``validity`` = 1
  on every unit): an exact count over all units (one unit below 1 fails it).

``beats_best_baseline`` and ``beats_unconstrained_cot`` carry a measured gate
(:data:`RIGHT_BUT_INVALID`, issue 46): CRANE can only beat unconstrained chain of thought
on outputs whose reasoning is right but whose final expression breaks the grammar (the
only outputs its mask can repair), so the share of such outputs under unconstrained CoT
bounds its gain. Where that share, measured on the evaluation problems at this size,
stays below the claims' smallest effect (one accuracy point), the claims are not tested
(``premise_failed``, with the measured share): out of reach at 135M, shown, not assumed.
An earlier version marked them out of reach from a calibration check on numeric answers
(0 of 40 invalid spans); the tasks are now CRANE's symbolic-variable answers
(``symbolic``), where the paper's models break the grammar.

``beats_constrained_direct`` and ``all_valid`` are tested as they are. The paper's +10
points at 1.5B-8B is ``ten_points_at_scale``, out of reach here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from reprolab.evidence.judging import claims
from reprolab.evidence.judging.claims import Claim, IntervalCheck, PairedDifference, Sample, wide

BASELINES = ("unconstrained_direct", "constrained_direct", "unconstrained_cot")


@dataclass(frozen=True)
class ShareGate:
    """A premise on a share measured per seed: it holds when the mean over seeds of
    ``metric`` of ``variant`` (fp32 rows; a seed's value is its mean over tasks) is at
    least ``at_least``. The measured share (per seed and its mean) is always reported;
    ``below`` says what a failed gate means. Same interface as ``claims.Premise``."""

    statement: str
    variant: str
    metric: str
    at_least: float
    below: str = ""

    def evaluate(self, table: pd.DataFrame) -> dict:
        rows = table[
            (table.variant == self.variant)
            & (table.precision == "fp32")
            & (table.metric == self.metric)
        ]
        if rows.empty or not rows.value.notna().any():
            return {
                "statement": self.statement,
                "holds": False,
                "summary": f"premise not measured: no {self.metric!r} of {self.variant}",
            }
        per_seed = rows.groupby("seed").value.mean()
        mean = float(per_seed.mean())
        holds = mean >= self.at_least
        return {
            "statement": self.statement,
            "holds": bool(holds),
            "per_seed": {int(k): round(float(v), 6) for k, v in per_seed.items()},
            "mean": round(mean, 6),
            "summary": f"{self.metric} of {self.variant} = {mean:.4g} (mean of "
            f"{len(per_seed)} seeds) {'>=' if holds else '<'} {self.at_least:g}"
            + ("" if holds or not self.below else f": {self.below}"),
        }


#: the gate of the claims against unconstrained CoT (issue 46): CRANE's mask changes an
#: answer only where the span breaks the grammar, so its gain over unconstrained CoT is
#: at most the share of outputs whose reasoning is right but whose span breaks it
#: (method.span_judgements); below one accuracy point (the claims' smallest effect) no
#: gain that matters can show
RIGHT_BUT_INVALID = ShareGate(
    statement=(
        "unconstrained chain of thought writes right reasoning with an ungrammatical final "
        "expression (the share CRANE's mask can repair, which bounds its gain) on at least "
        "one accuracy point of the evaluated problems, mean over seeds"
    ),
    variant="unconstrained_cot",
    metric="right_but_invalid",
    at_least=0.01,
    below=(
        "the model at this size almost never breaks the grammar with right reasoning, so "
        "CRANE cannot gain what the claim needs: out of reach at this size"
    ),
)


@dataclass(frozen=True)
class BestBaselineGap:
    """Per (task, seed): ``method`` - the best of ``baselines`` on that task (highest
    mean over seeds at the precision evaluated), pooled over tasks. Picking the maximum
    on the evaluation data favours the baseline, never the method."""

    method: str
    baselines: tuple[str, ...]

    def variants(self) -> tuple[str, ...]:
        return (self.method, *self.baselines)

    def __call__(self, table: pd.DataFrame, metric: str) -> Sample:
        pivot = wide(table, metric)
        diffs, seeds, best_of = [], [], {}
        for task, rows in pivot.groupby(level="task"):
            best = str(rows[list(self.baselines)].mean().idxmax())
            best_of[task] = best
            d = (rows[self.method] - rows[best]).dropna()
            diffs += d.tolist()
            seeds += list(d.index.get_level_values("seed"))
        best = ", ".join(f"{t}: {b}" for t, b in best_of.items())
        mean = float(np.mean(diffs)) if diffs else float("nan")
        return Sample(
            values=tuple(diffs),
            seeds=tuple(seeds),
            summary=f"{self.method} - best baseline ({best}) = {mean:.4g} over {len(diffs)} pairs",
        )


@dataclass(frozen=True)
class EveryUnit:
    """``metric`` of ``variant`` equals ``target`` on every unit (an exact count: one
    unit off fails it)."""

    variant: str
    target: float

    def variants(self) -> tuple[str, ...]:
        return (self.variant,)

    def evaluate(
        self, table: pd.DataFrame, metric: str, level: claims.Level = claims.FIXED
    ) -> claims.Verdict:
        values = table[(table.variant == self.variant) & (table.metric == metric)].value
        if values.empty:
            raise ValueError(f"no {metric!r} values for {self.variant}")
        hits = int((values == self.target).sum())
        return claims.Verdict.exhaustive(
            len(values) - hits,
            int(len(values)),
            float(values.mean()),
            f"{self.variant}: {metric} = {self.target:g} on {hits} of {len(values)} units "
            f"(mean {values.mean():.4g}, min {values.min():.4g})",
        )


_SETTING = (
    "GSM-Symbolic (answers are expressions over the problem's symbolic variables) and "
    "FOLIO; Qwen2.5 1.5B-7B, Llama-3.1-8B, DeepSeek-R1-Distill; 2 few-shot examples; "
    "grammar for the final expression"
)

_AT_SCALE = claims.OutOfReach(
    reason=(
        "the +10 points are measured with Qwen2.5 1.5B-7B, Llama-3.1-8B and "
        "DeepSeek-R1-Distill models on GSM-Symbolic and FOLIO; SmolLM2-135M scored 0 to "
        "0.08 on reasoning-gym's numeric GSM-Symbolic with every decoder (paper run at "
        "commit 8b2180c); the claims here read a miniature of GSM-Symbolic's "
        "symbolic-variable answers (the symbolic family); a gain of that size on the "
        "paper's benchmarks cannot show at 135M on this machine's CPU"
    ),
    would_test=(
        "Qwen2.5-1.5B-Instruct (or larger) with the paper's 2 few-shot examples and "
        "grammars on the full GSM-Symbolic (5,000 problems) and FOLIO test sets, each "
        "decoder at a 512-token budget: ~1-2 GPU-hours per decoder and seed on one H100 "
        "for 1.5B, ~5-10 for 7B; 4 decoders x 3 seeds"
    ),
)

CLAIMS = (
    Claim(
        id="beats_best_baseline",
        statement=(
            "CRANE's accuracy is at least the best of unconstrained direct, constrained "
            "direct and unconstrained chain-of-thought decoding"
        ),
        paper_value="up to 10% points accuracy improvement over baselines (GSM-Symbolic, FOLIO)",
        paper_setting=_SETTING,
        metric="accuracy",
        check=IntervalCheck(BestBaselineGap("crane", BASELINES), bound=0.0),
        effect=0.01,
        effect_basis="margin: one accuracy point; the abstract's +10 points is an 'up to' "
        "maximum over baselines, not a typical effect",
        source="abstract",
        central=True,
        premise=RIGHT_BUT_INVALID,
    ),
    Claim(
        id="ten_points_at_scale",
        statement=(
            "CRANE gains up to 10 accuracy points over the best baseline with models of "
            "1.5B parameters or more"
        ),
        paper_value="up to 10% points accuracy improvement over baselines (GSM-Symbolic, FOLIO)",
        paper_setting=_SETTING,
        metric="accuracy",
        check=IntervalCheck(BestBaselineGap("crane", BASELINES), bound=0.0),
        effect=0.10,
        effect_basis="paper: up to +10 accuracy points (abstract)",
        source="abstract",
        out_of_reach=_AT_SCALE,
    ),
    Claim(
        id="beats_unconstrained_cot",
        statement="CRANE is more accurate than unconstrained chain of thought",
        paper_value="higher accuracy than unconstrained CoT in the paper's tables",
        paper_setting=_SETTING,
        metric="accuracy",
        check=PairedDifference(method="crane", baseline="unconstrained_cot"),
        effect=0.01,
        effect_basis="margin: one accuracy point (the abstract's +10 points is an 'up to' maximum)",
        source="abstract",
        premise=RIGHT_BUT_INVALID,
    ),
    Claim(
        id="beats_constrained_direct",
        statement="CRANE is more accurate than constrained decoding without reasoning",
        paper_value="higher accuracy than constrained direct answers in the paper's tables",
        paper_setting=_SETTING,
        metric="accuracy",
        check=PairedDifference(method="crane", baseline="constrained_direct"),
        effect=0.01,
        effect_basis="margin: one accuracy point (the abstract's +10 points is an 'up to' maximum)",
        source="abstract",
    ),
    Claim(
        id="all_valid",
        statement="every CRANE answer is syntactically valid (parses in the grammar)",
        paper_value="100% syntactically valid final answers (the constrained span)",
        paper_setting=_SETTING,
        metric="validity",
        check=EveryUnit("crane", 1.0),
        effect=0.0,
        effect_basis="exhaustive: validity must be 1 on every unit (an exact count)",
        source="card",
    ),
)
