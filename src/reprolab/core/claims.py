"""Claims as data, and the code that turns measured metrics into verdicts.

A :class:`Claim` states what a paper says (its number and setting, verbatim where we
have it) and how we test it on the long metrics table the evaluate stage writes
(columns ``task, variant, seed, precision, metric, value``). Verdicts are
``reproduced`` / ``not_reproduced`` / ``inconclusive``; they are never edited by hand.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

from reprolab.core.stats import classify, interval, sign_test, t_interval

VERDICTS = ("reproduced", "not_reproduced", "inconclusive")
#: the columns of the long metrics table that are not unit parameters
BASE_COLUMNS = ("task", "variant", "seed", "precision", "metric", "value")
NO_SEED = -1  # stands for a seed-free unit's missing seed while pivoting


def param_columns(table: pd.DataFrame) -> list[str]:
    """The unit-parameter columns of a metrics table (beta, k, homophily, ...)."""
    return [c for c in table.columns if c not in BASE_COLUMNS]


def is_seed_free(rows: pd.DataFrame) -> bool:
    """Whether every row comes from a seed-free (deterministic) unit."""
    return bool(len(rows)) and bool(rows.seed.isna().all())


def wide(table: pd.DataFrame, metric: str, columns: str = "variant") -> pd.DataFrame:
    """``metric`` pivoted to one row per unit key (task, seed and the unit parameters)
    and one column per ``columns`` value. Seed-free rows keep their place (their seed
    is missing, not dropped)."""
    rows = table[table.metric == metric].copy()
    rows["seed"] = rows.seed.fillna(NO_SEED)
    keys = ["task", "seed", *param_columns(rows)]
    for key in keys:  # pivot drops missing keys; a parameter a unit lacks is ""
        if rows[key].isna().any():
            rows[key] = rows[key].astype(object).where(rows[key].notna(), "")
    clash = rows.duplicated([*keys, columns], keep=False)
    if clash.any():
        first = rows[clash].iloc[0]
        raise ValueError(
            f"several {metric!r} values for one unit key ({', '.join(keys)} = "
            f"{[first[k] for k in keys]}, {columns} = {first[columns]!r}): units that differ "
            "only in a parameter must carry it in Unit.params"
        )
    return rows.pivot_table(index=keys, columns=columns, values="value", aggfunc="first")


def paired(table: pd.DataFrame, metric: str, columns: str = "variant") -> pd.DataFrame:
    """:func:`wide`, with seed-free values paired against seeded ones: where a unit key
    (task and parameters) has both seeded rows (a method started from a random point)
    and a seed-free row (a closed-form baseline), the seed-free value fills its column
    on every seeded row of that key and the seed-free row goes. The differences then vary
    only through the seeded side, which is what they are. Keys with seed-free rows only,
    or seeded rows only, are as in :func:`wide`."""
    pivot = wide(table, metric, columns)
    free_rows = pivot.index.get_level_values("seed") == NO_SEED
    if not free_rows.any() or free_rows.all():
        return pivot
    free = pivot[free_rows].droplevel("seed")
    seeded = pivot[~free_rows]
    seeded_keys = seeded.index.droplevel("seed")
    fill = free.reindex(seeded_keys)
    fill.index = seeded.index
    seeded = seeded.fillna(fill)
    alone = pivot[free_rows & ~pivot.index.droplevel("seed").isin(seeded_keys)]
    return pd.concat([seeded, alone]).sort_index()


class Check(Protocol):
    """How a claim is tested. A method may define its own checks next to its claims;
    those used by several methods live here."""

    def variants(self) -> tuple[str, ...]:
        """Every variant the check reads (a claim on a missing variant is not tested)."""

    def evaluate(self, table: pd.DataFrame, metric: str) -> tuple[str, dict[str, Any]]:
        """(verdict, measured) from the rows of one precision. ``measured`` holds at least
        ``value``, ``ci_low``, ``ci_high`` and a one-line ``summary``."""


def _exact_per_key(values: pd.Series, what: str) -> np.ndarray:
    """One value per unit key (task and parameters; ``values`` indexed by them plus
    ``seed``) for a quantity declared deterministic: every seed must give the same
    value, or the declaration is wrong and this raises."""
    levels = [n for n in values.index.names if n != "seed"]
    groups = values.groupby(level=levels, dropna=False) if levels else values.groupby(lambda _: 0)
    spread = groups.max() - groups.min()
    scale = max(1.0, float(values.abs().max()))
    if (spread > 1e-9 * scale).any():
        key = spread.idxmax()
        raise ValueError(
            f"{what} is declared deterministic but differs between seeds at {key} "
            f"(spread {float(spread.max()):.6g})"
        )
    return groups.first().to_numpy(dtype=float)


def _exact_verdict(values: np.ndarray, bound: float, higher_is_better: bool, what: str):
    """Deterministic values compared exactly with ``bound``: reproduced when every one is
    on the claimed side, not reproduced when every one is on the other, else
    inconclusive (mixed). No interval: [min, max] is shown as the range."""
    good = values > bound if higher_is_better else values < bound
    bad = values < bound if higher_is_better else values > bound
    verdict = "reproduced" if good.all() else "not_reproduced" if bad.all() else "inconclusive"
    return verdict, {
        "value": float(values.mean()),
        "ci_low": float(values.min()),
        "ci_high": float(values.max()),
        "n": len(values),
        "seed_free": True,
        "test": "exact",
        "summary": f"{what}: {len(values)} exact value(s), range "
        f"[{values.min():.4g}, {values.max():.4g}] (deterministic: every seed agrees)",
    }


def _side(low: float, high: float, bound: float, higher_is_better: bool) -> str:
    """Verdict of an interval against a bound the claim says it beats."""
    good, bad = (low > bound, high < bound) if higher_is_better else (high < bound, low > bound)
    return "reproduced" if good else "not_reproduced" if bad else "inconclusive"


@dataclass(frozen=True)
class Threshold:
    """The mean of ``metric`` for ``variant`` (over every task and seed) beats ``bound``:
    reproduced when its whole interval is on the claimed side, not reproduced when it is
    wholly on the other side, else inconclusive."""

    variant: str
    bound: float
    higher_is_better: bool = True
    confidence: float = 0.95
    #: the quantity does not depend on the seed by construction (a model's byte count):
    #: when every replicate agrees it is compared exactly, as a seed-free value; when
    #: they differ, the declaration is wrong and the check raises
    deterministic: bool = False

    def variants(self) -> tuple[str, ...]:
        return (self.variant,)

    def evaluate(self, table: pd.DataFrame, metric: str) -> tuple[str, dict[str, Any]]:
        rows = table[(table.metric == metric) & (table.variant == self.variant)]
        if rows.empty:
            raise ValueError(f"no {metric!r} values for {self.variant}")
        seed_free = is_seed_free(rows)
        if self.deterministic:
            keyed = rows.assign(seed=rows.seed.fillna(NO_SEED)).set_index(
                ["task", *param_columns(rows), "seed"]
            )
            values = _exact_per_key(keyed.value, f"{metric!r} of {self.variant}")
            op = ">" if self.higher_is_better else "<"
            return _exact_verdict(
                values, self.bound, self.higher_is_better, f"{self.variant} {op} {self.bound:g}"
            )
        iv = interval(rows.value.to_numpy(), seed_free, self.confidence)
        op = ">" if self.higher_is_better else "<"
        how = "seed-free, exact" if seed_free and iv.n == 1 else f"n={iv.n}"
        return _side(iv.low, iv.high, self.bound, self.higher_is_better), {
            "value": iv.mean,
            "ci_low": iv.low,
            "ci_high": iv.high,
            "n": iv.n,
            "seed_free": seed_free,
            "summary": f"{self.variant} mean {iv.mean:.4g} (claim: {op} {self.bound:g}, {how})",
        }


@dataclass(frozen=True)
class PairedDifference:
    """``method`` beats ``baseline`` on ``metric``, paired by (task, seed) and pooled:
    the interval of the mean difference (method - baseline) against ``-margin``
    (or ``+margin`` when lower is better)."""

    method: str
    baseline: str
    higher_is_better: bool = True
    margin: float = 0.0
    confidence: float = 0.95
    #: the difference cannot depend on the seed (bytes held for backward depend only on
    #: tensor shapes): compared exactly when every pair agrees; the check raises if not
    deterministic: bool = False

    def variants(self) -> tuple[str, ...]:
        return (self.method, self.baseline)

    def evaluate(self, table: pd.DataFrame, metric: str) -> tuple[str, dict[str, Any]]:
        pivot = paired(table, metric)
        series = (pivot[self.method] - pivot[self.baseline]).dropna()
        diffs = series.to_numpy()
        if diffs.size == 0:
            raise ValueError(f"no paired {metric!r} values of {self.method} and {self.baseline}")
        seed_free = is_seed_free(table[table.variant.isin(self.variants())])
        if self.deterministic:
            what = f"{self.method} - {self.baseline}"
            values = _exact_per_key(series, f"{metric!r}: {what}")
            bound = -self.margin if self.higher_is_better else self.margin
            return _exact_verdict(values, bound, self.higher_is_better, what)
        iv = interval(diffs, seed_free, self.confidence)
        bound = -self.margin if self.higher_is_better else self.margin
        what = "one seed-free pair (exact)" if seed_free and iv.n == 1 else f"{iv.n} pairs"
        return _side(iv.low, iv.high, bound, self.higher_is_better), {
            "value": iv.mean,
            "ci_low": iv.low,
            "ci_high": iv.high,
            "n": iv.n,
            "seed_free": seed_free,
            "summary": f"{self.method} - {self.baseline} = {iv.mean:.4g} over {what}",
        }


@dataclass(frozen=True)
class PairedMajority:
    """Per task, compare ``method`` with a baseline by a paired t-interval over seeds.

    ``baseline`` is a variant name, or ``"best"``: per task, the baseline with the best
    mean ``select_metric`` (a validation metric, so test data never picks the opponent).
    Per task the difference (method - baseline, sign-flipped when lower is better) is
    'better' if its interval lies above ``margin``, 'worse' if below ``-margin``, else
    'tie'. Verdict over tasks: a one-sided sign test of 'better' against 'worse' (ties
    carry no sign; :func:`reprolab.core.stats.sign_test`). Reproduced when 'better'
    outnumbers 'worse' at level ``alpha`` *and* the pooled mean difference over tasks is
    positive; not reproduced when 'worse' outnumbers 'better' at that level and the
    pooled mean is negative; otherwise inconclusive. So 3 better / 12 tie / 2 worse is
    inconclusive, and the verdict never disagrees in sign with the pooled mean.
    """

    method: str
    baseline: str
    baselines: tuple[str, ...] = ()
    select_metric: str = ""
    higher_is_better: bool = True
    margin: float = 0.0
    confidence: float = 0.95
    alpha: float = 0.05

    def evaluate(self, table: pd.DataFrame, metric: str) -> tuple[str, dict[str, Any]]:
        pivot = paired(table, metric)
        sign = 1.0 if self.higher_is_better else -1.0
        per_task = []
        for task, rows in pivot.groupby(level="task"):
            opponent = self._opponent(table, task)
            diffs = sign * (rows[self.method] - rows[opponent]).dropna()
            if diffs.empty:
                continue
            task_iv = t_interval(diffs.to_numpy(), self.confidence)
            per_task.append(
                {
                    "task": task,
                    "baseline": opponent,
                    **task_iv.as_dict(),
                    "outcome": classify(task_iv, self.margin),
                }
            )
        if not per_task:
            raise ValueError(f"no paired measurements of {self.method} for metric {metric!r}")
        counts = {k: sum(p["outcome"] == k for p in per_task) for k in ("better", "tie", "worse")}
        n = len(per_task)
        overall = t_interval([p["mean"] for p in per_task], self.confidence)
        p_better = sign_test(counts["better"], counts["worse"])
        p_worse = sign_test(counts["worse"], counts["better"])
        if p_better <= self.alpha and overall.mean > 0:
            verdict = "reproduced"
        elif p_worse <= self.alpha and overall.mean < 0:
            verdict = "not_reproduced"
        else:
            verdict = "inconclusive"
        measured = {
            "value": overall.mean,
            "ci_low": overall.low,
            "ci_high": overall.high,
            "n": n,
            "n_tasks": n,
            "n_seeds": int(pivot.index.get_level_values("seed").nunique()),
            **counts,
            "test": "sign",
            "sign_test_p": p_better if overall.mean >= 0 else p_worse,
            "summary": (
                f"{counts['better']} better / {counts['tie']} tie / {counts['worse']} worse "
                f"over {n} tasks (sign test p = {min(p_better, p_worse):.3g}); pooled mean "
                f"difference {overall.mean:+.4g}"
            ),
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
class PrecisionGap:
    """A quantization scheme ``closer`` stays nearer the ``reference`` precision than
    ``farther`` does: per (task, seed) of ``variant``, the difference
    ``|closer - reference| - |farther - reference|`` of ``metric``, pooled into an
    interval; reproduced when it lies below ``-margin``, not reproduced when above 0.

    Unlike the other checks it reads several precisions, so it is evaluated once, on
    the whole table, under the precision ``closer``.
    """

    closer: str
    farther: str
    variant: str
    reference: str = "fp32"
    tasks: tuple[str, ...] = ()
    margin: float = 0.0
    confidence: float = 0.95

    def variants(self) -> tuple[str, ...]:
        return (self.variant,)

    def precisions(self) -> tuple[str, ...]:
        return (self.closer, self.farther, self.reference)

    def evaluate(self, table: pd.DataFrame, metric: str) -> tuple[str, dict[str, Any]]:
        rows = table[(table.metric == metric) & (table.variant == self.variant)]
        if self.tasks:
            rows = rows[rows.task.isin(self.tasks)]
        pivot = wide(rows, metric, columns="precision")
        missing = [p for p in self.precisions() if p not in pivot.columns]
        if missing:
            raise ValueError(f"no {metric!r} values at precision(s) {', '.join(missing)}")
        near = (pivot[self.closer] - pivot[self.reference]).abs()
        far = (pivot[self.farther] - pivot[self.reference]).abs()
        diffs = (near - far).dropna().to_numpy()
        if diffs.size == 0:
            raise ValueError(f"no paired {metric!r} values of {self.closer} and {self.farther}")
        iv = t_interval(diffs, self.confidence)
        if iv.high < -self.margin:
            verdict = "reproduced"
        elif iv.low > 0:
            verdict = "not_reproduced"
        else:
            verdict = "inconclusive"
        return verdict, {
            "value": iv.mean,
            "ci_low": iv.low,
            "ci_high": iv.high,
            "n": iv.n,
            "gap_closer": float(near.mean()),
            "gap_farther": float(far.mean()),
            "summary": (
                f"|{self.closer} - {self.reference}| = {near.mean():.4g} vs "
                f"|{self.farther} - {self.reference}| = {far.mean():.4g} over {iv.n} pairs"
            ),
        }


def _not_tested(summary: str) -> tuple[str, dict[str, Any]]:
    nan = float("nan")
    return "inconclusive", {"value": nan, "ci_low": nan, "ci_high": nan, "summary": summary}


@dataclass(frozen=True)
class Where:
    """``check`` on the rows whose unit parameters match ``params`` (a value, or a tuple
    of allowed values): one task family of a sweep, one (sigma, k) setting. No matching
    row: inconclusive, 'not tested'. Wraps checks read at one precision (not
    :class:`PrecisionGap`)."""

    check: Any
    params: tuple[tuple[str, Any], ...]

    def __init__(self, check: Any, **params: Any):
        object.__setattr__(self, "check", check)
        object.__setattr__(self, "params", tuple(sorted(params.items())))

    def variants(self) -> tuple[str, ...]:
        return self.check.variants()

    def label(self) -> str:
        def show(v: Any) -> str:
            return (
                "|".join(map(str, v))
                if isinstance(v, tuple)
                else f"{v:g}"
                if isinstance(v, float)
                else str(v)
            )

        return ", ".join(f"{k}={show(v)}" for k, v in self.params)

    def select(self, table: pd.DataFrame) -> pd.DataFrame:
        keep = pd.Series(True, index=table.index)
        for key, value in self.params:
            if key not in table.columns:
                return table.iloc[:0]
            allowed = list(value) if isinstance(value, tuple) else [value]
            keep &= table[key].isin(allowed)
        return table[keep]

    def evaluate(self, table: pd.DataFrame, metric: str) -> tuple[str, dict[str, Any]]:
        rows = self.select(table)
        if rows.empty:
            return _not_tested(f"not tested: no units with {self.label()} in this profile")
        verdict, measured = self.check.evaluate(rows, metric)
        measured["summary"] = f"[{self.label()}] {measured['summary']}"
        return verdict, measured


@dataclass(frozen=True)
class Trend:
    """``metric`` of ``variant`` rises (``increasing``) or falls with the unit parameter
    ``param`` within every setting of the other parameters: per group (seed and every
    other parameter column), the Spearman correlation of the metric with ``param``.
    Groups with one
    value of ``param``, or a constant metric (no rank correlation), do not count. One
    seed-free group is compared exactly.

    Verdict: a one-sided sign test of the groups' signs at ``alpha`` that must agree
    with the mean rho (reproduced on the claimed side, not reproduced on the other,
    else inconclusive). Rank correlations saturate (every group can give exactly
    rho = 1, a zero-width interval), so the interval of the mean rho is reported, not
    used."""

    variant: str
    param: str
    increasing: bool = True
    confidence: float = 0.95
    alpha: float = 0.05

    def variants(self) -> tuple[str, ...]:
        return (self.variant,)

    def evaluate(self, table: pd.DataFrame, metric: str) -> tuple[str, dict[str, Any]]:
        rows = table[(table.variant == self.variant) & (table.metric == metric)]
        if rows.empty or self.param not in rows.columns:
            return _not_tested(f"not tested: no {self.variant} units with a {self.param}")
        if rows[self.param].nunique() < 2:
            return _not_tested(f"one {self.param} only: no trend to test")
        seed_free = is_seed_free(rows)
        rows = rows.assign(seed=rows.seed.fillna(NO_SEED))
        others = ["seed", *(c for c in param_columns(rows) if c != self.param)]
        rows[others] = rows[others].astype(object).where(rows[others].notna(), "")
        rhos, gaps = [], []
        for _, group in rows.groupby(others):
            group = group.sort_values(self.param)
            if group[self.param].nunique() < 2:
                continue
            rho = float(group[self.param].astype(float).corr(group.value, method="spearman"))
            if rho == rho:
                rhos.append(rho)
                gaps.append(float(group.value.iloc[-1] - group.value.iloc[0]))
        if not rhos:
            return _not_tested(f"{metric} constant within every setting: no trend to test")
        iv = interval(rhos, seed_free, self.confidence)
        gap = sum(gaps) / len(gaps)
        sign = 1.0 if self.increasing else -1.0
        agree = sum(sign * r > 0 for r in rhos)
        disagree = sum(sign * r < 0 for r in rhos)
        if seed_free and iv.n == 1:  # one deterministic group: its rho decides exactly
            verdict = "reproduced" if agree else "not_reproduced" if disagree else "inconclusive"
            p = math.nan
        else:  # rank correlations saturate at +-1: decide by their signs, not their spread
            p_agree, p_disagree = sign_test(agree, disagree), sign_test(disagree, agree)
            p = p_agree if agree >= disagree else p_disagree
            if p_agree <= self.alpha and sign * iv.mean > 0:
                verdict = "reproduced"
            elif p_disagree <= self.alpha and sign * iv.mean < 0:
                verdict = "not_reproduced"
            else:
                verdict = "inconclusive"
        return verdict, {
            "value": iv.mean,
            "ci_low": iv.low,
            "ci_high": iv.high,
            "n": iv.n,
            "seed_free": seed_free and iv.n == 1,
            "test": "sign",
            "sign_test_p": p,
            "mean_gap_largest_minus_smallest": gap,
            "summary": (
                f"Spearman({self.param}, {self.variant} {metric}) = {iv.mean:.3g} over "
                f"{iv.n} groups, {agree} with the claimed sign / {disagree} against (sign "
                f"test p = {p:.3g}; claim: {'>' if self.increasing else '<'} 0); largest - "
                f"smallest {self.param}: {gap:.3g}"
            ),
        }


#: the fewest independent replicates a decisive verdict may rest on
MIN_REPLICATES = 3
EVIDENCE_RULES = (
    f"A decisive verdict (reproduced / not reproduced) needs at least {MIN_REPLICATES} "
    "independent replicates of the quantity the check tests (seeds, or tasks for a check "
    "over tasks) and a bounded interval of non-zero width; otherwise it is inconclusive, "
    "with the reason. Seed-free (deterministic) quantities are compared exactly. Checks "
    "over tasks (and trends over groups) decide by a one-sided sign test of better "
    "against worse tasks (ties carry no sign, alpha 0.05) that must agree in sign with "
    "the pooled mean; exhaustive checks (a property every unit must show) count exactly; "
    "quantities declared deterministic (every seed agrees) are compared value by value. "
    "'detectable' is the interval's half-width: the smallest effect the test could have "
    "seen; a miss where it exceeds the paper's effect is marked underpowered."
)


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and math.isfinite(x)


def apply_evidence_rules(
    verdict: str, measured: dict[str, Any], paper_effect: float | None = None
) -> tuple[str, dict[str, Any]]:
    """The evidence rules every check's verdict passes through (one place for every
    method, core checks and method-specific ones alike; see :data:`EVIDENCE_RULES`).

    Adds to ``measured``: ``detectable`` (the interval's half-width), ``check_verdict``
    (what the check alone said, when a rule overrides it), ``rule`` (why), ``flags``
    (``identical_replicates`` for a zero-width interval over several seeded values,
    ``underpowered``)."""
    measured = dict(measured)
    low, high = measured.get("ci_low"), measured.get("ci_high")
    n = measured.get("n", measured.get("n_tasks"))
    seed_free = bool(measured.get("seed_free", False))
    bounded = _finite(low) and _finite(high)
    measured["detectable"] = (high - low) / 2 if bounded else math.inf
    flags: list[str] = []
    reason = ""
    if (seed_free and n in (None, 1)) or measured.get("test") == "exact":
        pass  # deterministic values (every seed agrees by construction), compared exactly
    elif not isinstance(n, int):
        reason = "the check reports no replicate count n"
    elif n < MIN_REPLICATES:
        reason = f"n < {MIN_REPLICATES} (n = {n})"
    elif measured.get("test") in ("sign", "exhaustive"):
        # decided by the signs of n replicates, or by an exact count over every unit
        # (a property that must hold on each: one failure fails it); no interval used
        pass
    elif not bounded:
        reason = "unbounded interval"
    elif high - low <= 1e-12 * max(1.0, abs(low), abs(high)):
        reason = f"zero-width interval: all {n} replicates identical"
        if not seed_free:  # seeded replicates that agree exactly: look at the seed
            flags.append("identical_replicates")
    if reason and verdict in ("reproduced", "not_reproduced"):
        measured["check_verdict"] = verdict
        measured["rule"] = reason
        verdict = "inconclusive"
    if (
        verdict != "reproduced"
        and paper_effect is not None
        and measured["detectable"] > abs(paper_effect)
    ):
        flags.append("underpowered")
    if paper_effect is not None:
        measured["paper_effect"] = paper_effect
    if flags:
        measured["flags"] = flags
    return verdict, measured


@dataclass(frozen=True)
class Claim:
    """A paper's claim as data. ``paper_effect``: the paper's effect as a number on the
    scale of the check's value (e.g. +0.012 accuracy), when the paper states one; the
    report sets it next to the smallest effect our test could detect."""

    id: str
    statement: str
    paper_value: str
    paper_setting: str
    metric: str
    check: Check
    paper_effect: float | None = None
    #: the quantization scheme the claim is about (e.g. "bitdgdm_w4a4" for a memory
    #: claim): its verdict is read there only, not at every precision
    precision: str | None = None

    @property
    def cross_precision(self) -> bool:
        """Whether the check compares precisions (evaluated once, not per precision)."""
        return hasattr(self.check, "precisions")

    def precisions_to_evaluate(self, precisions: Sequence[str]) -> list[str]:
        """The precisions this claim gets a verdict at: every one for an ordinary claim;
        the scheme it is about for a cross-precision claim or one that names its scheme."""
        if self.cross_precision:
            return [self.check.precisions()[0]]
        if self.precision is not None:
            return [self.precision]
        return list(precisions)

    @property
    def about_a_scheme(self) -> bool:
        """Whether the claim's one verdict is read at a quantization scheme (then that is
        its headline verdict; an ordinary claim's headline verdict is the one at fp32)."""
        return self.cross_precision or self.precision is not None

    def evaluate(self, table: pd.DataFrame, precision: str, profile: str) -> dict[str, Any]:
        if self.cross_precision:
            rows = table
            absent = sorted(set(self.check.precisions()) - set(table.precision))
        else:
            rows = table[table.precision == precision]
            absent = [precision] if self.precision is not None and rows.empty else []
        missing = sorted(set(self.check.variants()) - set(rows.variant))
        if missing or absent:  # e.g. a baseline or a scheme left out in params.yaml
            verdict = "inconclusive"
            nan = float("nan")
            what = (
                f"precision(s) {', '.join(absent)} were not quantized"
                if absent
                else f"variant(s) {', '.join(missing)} were not trained"
            )
            measured = {
                "value": nan,
                "ci_low": nan,
                "ci_high": nan,
                "summary": f"not tested: {what}",
            }
        else:
            verdict, measured = self.check.evaluate(rows, self.metric)
            verdict, measured = apply_evidence_rules(verdict, measured, self.paper_effect)
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
            "headline": self.about_a_scheme or precision == "fp32",
            "level": "smoke-level (machinery check, not evidence)"
            if profile == "smoke"
            else "paper profile",
        }
