"""Claims as data, and the code that turns measured metrics into verdicts.

A :class:`Claim` states what a paper says (its number and setting, verbatim where we
have it) and how we test it on the long metrics table the evaluate stage writes
(columns ``task, variant, seed, precision, metric, value``). Verdicts are
``reproduced`` / ``not_reproduced`` / ``inconclusive``; they are never edited by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from reprolab.core.stats import classify, t_interval

VERDICTS = ("reproduced", "not_reproduced", "inconclusive")


@dataclass(frozen=True)
class PairedMajority:
    """Per task, compare ``method`` with a baseline by a paired t-interval over seeds.

    ``baseline`` is a variant name, or ``"best"``: per task, the baseline with the best
    mean ``select_metric`` (a validation metric, so test data never picks the opponent).
    Per task the difference (method - baseline, sign-flipped when lower is better) is
    'better' if its interval lies above ``margin``, 'worse' if below ``-margin``, else
    'tie'. Verdict: reproduced when the method is better on more tasks than it is worse
    and not worse on a majority; not reproduced when it is worse at least as often as
    better (and worse somewhere); otherwise inconclusive.
    """

    method: str
    baseline: str
    baselines: tuple[str, ...] = ()
    select_metric: str = ""
    higher_is_better: bool = True
    margin: float = 0.0
    confidence: float = 0.95

    def evaluate(self, table: pd.DataFrame, metric: str) -> tuple[str, dict[str, Any]]:
        wide = table[table.metric == metric].pivot_table(
            index=["task", "seed"], columns="variant", values="value"
        )
        sign = 1.0 if self.higher_is_better else -1.0
        per_task = []
        for task, rows in wide.groupby(level="task"):
            opponent = self._opponent(table, task)
            diffs = sign * (rows[self.method] - rows[opponent]).dropna()
            if diffs.empty:
                continue
            interval = t_interval(diffs.to_numpy(), self.confidence)
            per_task.append(
                {
                    "task": task,
                    "baseline": opponent,
                    **interval.as_dict(),
                    "outcome": classify(interval, self.margin),
                }
            )
        if not per_task:
            raise ValueError(f"no paired measurements of {self.method} for metric {metric!r}")
        counts = {k: sum(p["outcome"] == k for p in per_task) for k in ("better", "tie", "worse")}
        n = len(per_task)
        overall = t_interval([p["mean"] for p in per_task], self.confidence)
        if counts["better"] > counts["worse"] and counts["better"] + counts["tie"] > n / 2:
            verdict = "reproduced"
        elif counts["worse"] > 0 and counts["worse"] >= counts["better"]:
            verdict = "not_reproduced"
        else:
            verdict = "inconclusive"
        measured = {
            "value": overall.mean,
            "ci_low": overall.low,
            "ci_high": overall.high,
            "n_tasks": n,
            "n_seeds": int(wide.index.get_level_values("seed").nunique()),
            **counts,
            "summary": f"{counts['better']} better / {counts['tie']} tie / {counts['worse']} worse",
            "per_task": per_task,
        }
        return verdict, measured

    def variants(self) -> tuple[str, ...]:
        """Every variant the check reads."""
        return (self.method, *(self.baselines if self.baseline == "best" else (self.baseline,)))

    def _opponent(self, table: pd.DataFrame, task: str) -> str:
        if self.baseline != "best":
            return self.baseline
        val = table[(table.task == task) & (table.metric == self.select_metric)]
        means = val[val.variant.isin(self.baselines)].groupby("variant").value.mean()
        if means.empty:
            raise ValueError(
                f"no {self.select_metric!r} values to pick the best baseline on {task}"
            )
        return str(means.idxmax() if self.higher_is_better else means.idxmin())


@dataclass(frozen=True)
class Claim:
    id: str
    statement: str
    paper_value: str
    paper_setting: str
    metric: str
    check: PairedMajority

    def evaluate(self, table: pd.DataFrame, precision: str, profile: str) -> dict[str, Any]:
        rows = table[table.precision == precision]
        missing = sorted(set(self.check.variants()) - set(rows.variant))
        if missing:  # e.g. a baseline left out of `variants` in params.yaml
            verdict = "inconclusive"
            nan = float("nan")
            measured = {
                "value": nan,
                "ci_low": nan,
                "ci_high": nan,
                "summary": f"not tested: variant(s) {', '.join(missing)} were not trained",
            }
        else:
            verdict, measured = self.check.evaluate(rows, self.metric)
        return {
            "id": self.id,
            "statement": self.statement,
            "paper_value": self.paper_value,
            "paper_setting": self.paper_setting,
            "metric": self.metric,
            "precision": precision,
            "measured": measured,
            "verdict": verdict,
            "profile": profile,
            "level": "smoke-level (machinery check, not evidence)"
            if profile == "smoke"
            else "paper profile",
        }
