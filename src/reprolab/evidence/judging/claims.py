"""Claims as data, and the code that turns measured metrics into verdicts.

A :class:`Claim` states what a paper says (its number, where the number comes from, its
setting), the smallest effect that matters, and how we test it on the long metrics
table the evaluate stage writes (columns ``task, variant, seed, precision, metric,
value``). A check returns a typed :class:`Verdict`: ``reproduced``, ``not_reproduced``,
``inconclusive``, or ``out_of_reach`` (a claim this code cannot test on this machine at
any affordable size, with what would test it). Verdicts are never edited by hand.

Intervals and tests are read at the *look* of a sequential plan
(:mod:`reprolab.evidence.judging.sequential`): a check gets a :class:`Level` (the confidence of its
intervals and the level of its tests at this look), so a paper run can add seeds round
by round and stop when a claim is decided, at its stated error rate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pandas as pd

# the verdicts' vocabulary is defined once, in judging.entries; claims re-exports it
from reprolab.evidence.judging.entries import (  # noqa: F401
    DECISIVE,
    SUPPORTED,
    VERDICT_TEXT,
    VERDICTS,
    is_headline,
    opposite,
)
from reprolab.evidence.judging.stats import (
    RULES,
    Interval,
    classify,
    interval,
    rule_interval,
    sign_test,
    unit_means,
)

#: where a claim's paper value may come from: the abstract, the method's card, or a named
#: place in the paper (a table, figure, section, theorem); "not in the paper text here"
#: when neither the abstract nor the card has it
SOURCES = ("abstract", "card", "Table", "Fig.", "Sec.", "Theorem", "Appendix")
NOT_IN_TEXT = "not in the paper text here"
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


#: what a claim's replicate is (the independent unit its interval counts): the seed by
#: default, whose values (several tasks, pairs, configurations of one seed) are averaged
#: into one before the interval; ``task``, ``group`` or ``pair`` only where the claim
#: says why those are independent (``Claim.unit_reason``), and then every value counts
UNITS = ("seed", "task", "group", "pair")


@dataclass(frozen=True)
class Level:
    """What a check's intervals and tests use: the two-sided ``confidence`` of its
    intervals (and ``1 - confidence`` as the two-sided level of its tests, half per
    direction), set by the look of the sequential plan (``look``; None: a fixed-n
    analysis at 95%); the claim's replicate ``unit`` (:data:`UNITS`) and ``rule``
    (:data:`reprolab.evidence.judging.stats.RULES`: ``t`` for the mean, ``sign`` for the median)."""

    confidence: float = 0.95
    look: Any = None  # reprolab.evidence.judging.sequential.Look
    unit: str = "seed"
    rule: str = "t"

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise ValueError(f"unknown replicate unit {self.unit!r}; units: {', '.join(UNITS)}")
        if self.rule not in RULES:
            raise ValueError(f"unknown rule {self.rule!r}; rules: {', '.join(RULES)}")

    @classmethod
    def at(cls, look: Any, unit: str = "seed", rule: str = "t") -> Level:
        return cls(confidence=look.confidence, look=look, unit=unit, rule=rule)

    @property
    def alpha(self) -> float:
        """Two-sided level of a test at this look."""
        return 1.0 - self.confidence

    def t_interval(self, values: Sequence[float], seeds: Sequence[Any] | None = None) -> Interval:
        """The interval of the claim's rule over ``values``, each value's seed in
        ``seeds`` (averaged per seed first when the unit is the seed)."""
        return rule_interval(self.units(values, seeds), self.rule, self.confidence)

    def interval(
        self, values: Sequence[float], seed_free: bool, seeds: Sequence[Any] | None = None
    ) -> Interval:
        """:meth:`t_interval`, or for one seed-free value the value itself (exact)."""
        x = self.units(values, seeds)
        if seed_free and x.size == 1:
            return interval(x, True, self.confidence)
        return rule_interval(x, self.rule, self.confidence)

    def units(self, values: Sequence[float], seeds: Sequence[Any] | None) -> np.ndarray:
        """The replicates the interval counts: one mean per seed when the unit is the
        seed and the values' seeds are known, else the values as they are."""
        x = np.asarray(values, dtype=float)
        if self.unit != "seed" or seeds is None:
            return x
        labels = [None if pd.isna(s) or s == NO_SEED else s for s in seeds]
        return unit_means(x, labels)

    def estimate(self, estimate: float, se: float, n: int) -> Interval:
        """The interval of an estimate with standard error ``se`` from ``n`` replicates
        (a delta-method ratio, say): estimate +- t_{n-1} se."""
        from scipy import stats

        if n < 2 or not math.isfinite(se):
            return Interval(estimate, -math.inf, math.inf, n, self.confidence)
        half = float(stats.t.isf(self.alpha / 2.0, n - 1)) * se
        return Interval(estimate, estimate - half, estimate + half, n, self.confidence, se * n**0.5)


FIXED = Level()


def _nan_measured(summary: str) -> dict[str, Any]:
    nan = float("nan")
    return {"value": nan, "ci_low": nan, "ci_high": nan, "summary": summary}


def side(low: float, high: float, bound: float, higher_is_better: bool) -> str:
    """The verdict of an interval against a bound the claim says it beats."""
    good, bad = (low > bound, high < bound) if higher_is_better else (high < bound, low > bound)
    return "reproduced" if good else "not_reproduced" if bad else "inconclusive"


@dataclass(frozen=True)
class Verdict:
    """A check's verdict and what it measured (``value``, ``ci_low``, ``ci_high``,
    ``n``, a one-line ``summary``, and whatever the check adds). Build one with a
    constructor, which decides the verdict from the evidence; never by hand."""

    verdict: str
    measured: dict[str, Any]

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}; verdicts: {', '.join(VERDICTS)}")
        for key in ("value", "ci_low", "ci_high", "summary"):
            if key not in self.measured:
                raise ValueError(f"a verdict's measured values need {key!r}")

    @property
    def decisive(self) -> bool:
        return self.verdict in DECISIVE

    def with_summary(self, summary: str) -> Verdict:
        return Verdict(self.verdict, {**self.measured, "summary": summary})

    @classmethod
    def interval(
        cls,
        iv: Interval,
        bound: float,
        higher_is_better: bool = True,
        summary: str = "",
        *,
        seed_free: bool = False,
        **extra: Any,
    ) -> Verdict:
        """An interval against ``bound``: reproduced when it lies wholly on the claimed
        side, not reproduced when wholly on the other, else inconclusive."""
        return cls(
            side(iv.low, iv.high, bound, higher_is_better),
            {
                "value": iv.mean,
                "ci_low": iv.low,
                "ci_high": iv.high,
                "n": iv.n,
                "sd": iv.sd,
                "seed_free": seed_free,
                "bound": bound,
                "claimed": ">" if higher_is_better else "<",
                "summary": summary,
                **extra,
            },
        )

    @classmethod
    def within(cls, iv: Interval, low: float, high: float, summary: str, **extra: Any) -> Verdict:
        """An interval that the claim says lies inside [low, high]: reproduced when it
        does, not reproduced when it lies wholly outside, else inconclusive."""
        if low <= iv.low and iv.high <= high:
            verdict = "reproduced"
        elif iv.high < low or iv.low > high:
            verdict = "not_reproduced"
        else:
            verdict = "inconclusive"
        return cls(
            verdict,
            {
                "value": iv.mean,
                "ci_low": iv.low,
                "ci_high": iv.high,
                "n": iv.n,
                "sd": iv.sd,
                "bound": [low, high],
                "summary": summary,
                **extra,
            },
        )

    @classmethod
    def exact(
        cls, values: Sequence[float], bound: float, higher_is_better: bool, what: str, **extra: Any
    ) -> Verdict:
        """Deterministic values compared exactly with ``bound``: reproduced when every
        one is on the claimed side, not reproduced when every one is on the other, else
        inconclusive (mixed). No interval: [min, max] is shown as the range."""
        values = np.asarray(values, dtype=float)
        good = values > bound if higher_is_better else values < bound
        bad = values < bound if higher_is_better else values > bound
        verdict = "reproduced" if good.all() else "not_reproduced" if bad.all() else "inconclusive"
        return cls(
            verdict,
            {
                "value": float(values.mean()),
                "ci_low": float(values.min()),
                "ci_high": float(values.max()),
                "n": len(values),
                "seed_free": True,
                "test": "exact",
                "bound": bound,
                "claimed": ">" if higher_is_better else "<",
                "summary": f"{what}: {len(values)} exact value(s), range "
                f"[{values.min():.4g}, {values.max():.4g}] (deterministic: every seed agrees)",
                **extra,
            },
        )

    @classmethod
    def exact_property(
        cls, holds: bool | None, value: float, summary: str, **extra: Any
    ) -> Verdict:
        """A property of deterministic quantities (one family's exact value is the
        largest; a complete enumeration finds an instance): reproduced when it holds, not
        reproduced when it fails, inconclusive when it could not be checked (None)."""
        verdict = "inconclusive" if holds is None else "reproduced" if holds else "not_reproduced"
        return cls(
            verdict,
            {
                "value": value,
                "ci_low": value,
                "ci_high": value,
                "n": 1,
                "seed_free": True,
                "test": "exact",
                "summary": summary,
                **extra,
            },
        )

    @classmethod
    def exhaustive(cls, failing: int, n: int, value: float, summary: str, **extra: Any) -> Verdict:
        """A property every unit must show, counted over all ``n`` units (an exact count,
        not an estimate): reproduced when none fails, not reproduced when any does."""
        return cls(
            "reproduced" if failing == 0 else "not_reproduced",
            {
                "value": value,
                "ci_low": value,
                "ci_high": value,
                "n": n,
                "test": "exhaustive",
                "units_failing": failing,
                "summary": summary,
                **extra,
            },
        )

    @classmethod
    def signs(
        cls,
        agree: int,
        disagree: int,
        mean: float,
        level: Level,
        summary: str,
        *,
        iv: Interval | None = None,
        n: int | None = None,
        **extra: Any,
    ) -> Verdict:
        """A one-sided sign test of ``agree`` replicates with the claimed sign against
        ``disagree`` with the other (ties carry no sign) at half the level's two-sided
        alpha per direction, which must agree in sign with the pooled ``mean`` (on the
        claimed scale: positive is the claim's side)."""
        p_agree, p_disagree = sign_test(agree, disagree), sign_test(disagree, agree)
        if p_agree <= level.alpha / 2 and mean > 0:
            verdict = "reproduced"
        elif p_disagree <= level.alpha / 2 and mean < 0:
            verdict = "not_reproduced"
        else:
            verdict = "inconclusive"
        nan = float("nan")
        return cls(
            verdict,
            {
                "value": iv.mean if iv is not None else mean,
                "ci_low": iv.low if iv is not None else nan,
                "ci_high": iv.high if iv is not None else nan,
                "n": n if n is not None else agree + disagree,
                "test": "sign",
                "sign_test_p": p_agree if mean >= 0 else p_disagree,
                "summary": summary,
                **extra,
            },
        )

    @classmethod
    def test(
        cls,
        p_value: float,
        direction: float,
        level: Level,
        value: float,
        summary: str,
        *,
        ci: tuple[float, float] = (math.nan, math.nan),
        n: int | None = None,
        **extra: Any,
    ) -> Verdict:
        """A two-sided test (a permutation test, say) with ``p_value``; ``direction`` is
        the statistic on the claimed scale (positive: the claim's side). Decided at the
        level's alpha."""
        if p_value <= level.alpha and direction > 0:
            verdict = "reproduced"
        elif p_value <= level.alpha and direction < 0:
            verdict = "not_reproduced"
        else:
            verdict = "inconclusive"
        return cls(
            verdict,
            {
                "value": value,
                "ci_low": ci[0],
                "ci_high": ci[1],
                "n": n,
                "test": "permutation",
                "p_value": p_value,
                "summary": summary,
                **extra,
            },
        )

    @classmethod
    def all_of(
        cls,
        parts: Sequence[Verdict],
        value: float,
        summary: str,
        *,
        iv: Interval | None = None,
        **extra: Any,
    ) -> Verdict:
        """A claim that needs every part: reproduced when each part is, not reproduced
        when any part is not, else inconclusive. ``iv``: a pooled interval to report."""
        if not parts:
            raise ValueError("all_of needs at least one part")
        # each part under the evidence rules first (a part from two seeds decides nothing)
        parts = [apply_evidence_rules(p) for p in parts]
        verdicts = [p.verdict for p in parts]
        if all(v == "reproduced" for v in verdicts):
            verdict = "reproduced"
        elif "not_reproduced" in verdicts:
            verdict = "not_reproduced"
        else:
            verdict = "inconclusive"
        nan = float("nan")
        exact = [p.measured.get("test") in ("exact", "exhaustive") for p in parts]
        # the replicates behind the verdict: those of the parts that are estimates (an
        # exact part has none to count); every part exact: the whole is exact
        ns = [
            p.measured.get("n")
            for p, e in zip(parts, exact, strict=True)
            if not e and isinstance(p.measured.get("n"), int)
        ]
        measured = {
            "value": value,
            "ci_low": iv.low if iv is not None else nan,
            "ci_high": iv.high if iv is not None else nan,
            "n": min(ns) if ns else (iv.n if iv is not None else None),
            "parts": [{"verdict": p.verdict, **_short(p.measured)} for p in parts],
            "summary": summary,
            **extra,
        }
        if all(exact):
            measured.update(test="exact", seed_free=True, n=len(parts))
        else:  # decided by its parts, each already under the rules (n still counts)
            measured["test"] = "all_of"
        return cls(verdict, measured)

    @classmethod
    def not_tested(cls, summary: str) -> Verdict:
        """Nothing to test in this run (a variant or setting left out): inconclusive."""
        return cls("inconclusive", {**_nan_measured(summary), "not_tested": True})

    @classmethod
    def out_of_reach(cls, reach: OutOfReach, measured: dict[str, Any] | None = None) -> Verdict:
        """A claim this code cannot test at any affordable size here; what was measured
        (if anything ran) stays for information."""
        shown = dict(measured) if measured else _nan_measured("")
        shown["summary"] = f"out of reach here: {reach.reason}; would test it: {reach.would_test}"
        return cls("out_of_reach", shown)


def _short(measured: dict[str, Any]) -> dict[str, Any]:
    keys = ("value", "ci_low", "ci_high", "n", "summary")
    return {k: measured[k] for k in keys if k in measured}


class Check(Protocol):
    """How a claim is tested. A method may define its own checks next to its claims;
    those used by several methods live here. A check whose replicates are not seeds
    (a correlation over a fixed set of points) sets ``fixed_n`` to why more seeds would
    not decide it: the sequential rounds then leave it at the first look."""

    def variants(self) -> tuple[str, ...]:
        """Every variant the check reads (a claim on a missing variant is not tested)."""

    def evaluate(self, table: pd.DataFrame, metric: str, level: Level = FIXED) -> Verdict:
        """The verdict from the rows of one precision, with intervals and tests at
        ``level``."""


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


@dataclass(frozen=True)
class Sample:
    """What an :class:`IntervalCheck`'s statistic measured: replicate ``values`` (the
    interval is over their mean), or a ratio-like ``estimate`` with its standard error
    ``se`` from ``n`` replicates (a delta-method interval). ``summary`` and ``extra`` go
    into the verdict's measured values."""

    values: tuple[float, ...] = ()
    seed_free: bool = False
    summary: str = ""
    estimate: float | None = None
    se: float | None = None
    n: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: each value's seed (the replicate unit averages the values of one seed); empty
    #: when every value is its own replicate already (one per seed)
    seeds: tuple = ()
    #: why there is nothing to test (the check then says 'not tested')
    untested: str = ""


class Statistic(Protocol):
    """The quantity an :class:`IntervalCheck` tests, read off the metrics table."""

    def variants(self) -> tuple[str, ...]: ...

    def __call__(self, table: pd.DataFrame, metric: str) -> Sample | None:
        """The replicates, or None when the table holds nothing to test (then the
        check says 'not tested', with :attr:`untested`)."""


@dataclass(frozen=True)
class IntervalCheck:
    """The interval of a method-specific ``statistic`` against ``bound``: reproduced when
    it lies wholly on the claimed side, not reproduced when wholly on the other. The one
    place a method's own quantity becomes a verdict, so no method writes the ladder."""

    statistic: Any  # a Statistic
    bound: float = 0.0
    higher_is_better: bool = True

    def variants(self) -> tuple[str, ...]:
        return self.statistic.variants()

    def evaluate(self, table: pd.DataFrame, metric: str, level: Level = FIXED) -> Verdict:
        sample = self.statistic(table, metric)
        if sample is None or sample.untested:
            return Verdict.not_tested(
                sample.untested
                if sample is not None
                else getattr(self.statistic, "untested", f"not tested: no {metric!r} to compare")
            )
        if sample.estimate is not None:
            iv = level.estimate(sample.estimate, sample.se or math.nan, sample.n or 0)
        else:
            if not sample.values:
                return Verdict.not_tested(f"not tested: no {metric!r} replicates")
            iv = level.interval(sample.values, sample.seed_free, sample.seeds or None)
        return Verdict.interval(
            iv,
            self.bound,
            self.higher_is_better,
            sample.summary,
            seed_free=sample.seed_free,
            **sample.extra,
        )


@dataclass(frozen=True)
class Threshold:
    """The mean of ``metric`` for ``variant`` (over every task and seed) beats ``bound``:
    reproduced when its whole interval is on the claimed side, not reproduced when it is
    wholly on the other side, else inconclusive."""

    variant: str
    bound: float
    higher_is_better: bool = True
    #: the quantity does not depend on the seed by construction (a model's byte count):
    #: when every replicate agrees it is compared exactly, as a seed-free value; when
    #: they differ, the declaration is wrong and the check raises
    deterministic: bool = False

    def variants(self) -> tuple[str, ...]:
        return (self.variant,)

    def evaluate(self, table: pd.DataFrame, metric: str, level: Level = FIXED) -> Verdict:
        rows = table[(table.metric == metric) & (table.variant == self.variant)]
        if rows.empty:
            raise ValueError(f"no {metric!r} values for {self.variant}")
        seed_free = is_seed_free(rows)
        op = ">" if self.higher_is_better else "<"
        if self.deterministic:
            keyed = rows.assign(seed=rows.seed.fillna(NO_SEED)).set_index(
                ["task", *param_columns(rows), "seed"]
            )
            values = _exact_per_key(keyed.value, f"{metric!r} of {self.variant}")
            return Verdict.exact(
                values, self.bound, self.higher_is_better, f"{self.variant} {op} {self.bound:g}"
            )
        iv = level.interval(rows.value.to_numpy(), seed_free, rows.seed.tolist())
        how = "seed-free, exact" if seed_free and iv.n == 1 else f"n={iv.n} {level.unit}s"
        return Verdict.interval(
            iv,
            self.bound,
            self.higher_is_better,
            f"{self.variant} mean {iv.mean:.4g} (claim: {op} {self.bound:g}, {how})",
            seed_free=seed_free,
        )


@dataclass(frozen=True)
class PairedDifference:
    """``method`` beats ``baseline`` on ``metric``, paired by (task, seed) and pooled:
    the interval of the mean difference (method - baseline) against ``-margin``
    (or ``+margin`` when lower is better)."""

    method: str
    baseline: str
    higher_is_better: bool = True
    margin: float = 0.0
    #: the difference cannot depend on the seed (bytes held for backward depend only on
    #: tensor shapes): compared exactly when every pair agrees; the check raises if not
    deterministic: bool = False

    def variants(self) -> tuple[str, ...]:
        return (self.method, self.baseline)

    def evaluate(self, table: pd.DataFrame, metric: str, level: Level = FIXED) -> Verdict:
        pivot = paired(table, metric)
        series = (pivot[self.method] - pivot[self.baseline]).dropna()
        diffs = series.to_numpy()
        if diffs.size == 0:
            raise ValueError(f"no paired {metric!r} values of {self.method} and {self.baseline}")
        seed_free = is_seed_free(table[table.variant.isin(self.variants())])
        bound = -self.margin if self.higher_is_better else self.margin
        what = f"{self.method} - {self.baseline}"
        if self.deterministic:
            values = _exact_per_key(series, f"{metric!r}: {what}")
            return Verdict.exact(values, bound, self.higher_is_better, what)
        iv = level.interval(diffs, seed_free, series.index.get_level_values("seed").tolist())
        pairs = (
            "one seed-free pair (exact)"
            if seed_free and iv.n == 1
            else f"{diffs.size} pairs in {iv.n} {level.unit}s"
            if diffs.size != iv.n
            else f"{iv.n} pairs"
        )
        return Verdict.interval(
            iv,
            bound,
            self.higher_is_better,
            f"{what} = {iv.mean:.4g} over {pairs}",
            seed_free=seed_free,
        )


@dataclass(frozen=True)
class PairedMajority:
    """Per task, compare ``method`` with a baseline by a paired t-interval over seeds.

    ``baseline`` is a variant name, or ``"best"``: per task, the baseline with the best
    mean ``select_metric`` (a validation metric, so test data never picks the opponent).
    Per task the difference (method - baseline, sign-flipped when lower is better) is
    'better' if its interval lies above ``margin``, 'worse' if below ``-margin``, else
    'tie'. Verdict over tasks: a one-sided sign test of 'better' against 'worse' (ties
    carry no sign; :meth:`Verdict.signs`, half the level's alpha per direction) that
    must agree in sign with the pooled mean difference over tasks. So 3 better / 12 tie
    / 2 worse is inconclusive, and the verdict never disagrees in sign with the pooled
    mean. More seeds narrow each task's interval, so fewer tasks stay tied.
    """

    #: the replicate of the sign test: the task (the claim is about this set of tasks)
    unit = "task"
    unit_reason = (
        "the claim is about this fixed set of tasks ('better on most tasks'): each task's "
        "interval is over seeds at the look's level, and the sign test counts tasks"
    )

    method: str
    baseline: str
    baselines: tuple[str, ...] = ()
    select_metric: str = ""
    higher_is_better: bool = True
    margin: float = 0.0

    def evaluate(self, table: pd.DataFrame, metric: str, level: Level = FIXED) -> Verdict:
        pivot = paired(table, metric)
        sign = 1.0 if self.higher_is_better else -1.0
        per_task = []
        for task, rows in pivot.groupby(level="task"):
            opponent = self._opponent(table, task)
            diffs = sign * (rows[self.method] - rows[opponent]).dropna()
            if diffs.empty:
                continue
            task_iv = level.t_interval(diffs.to_numpy())
            per_task.append(
                {
                    "task": task,
                    "baseline": opponent,
                    **task_iv.as_dict(),
                    "sd": task_iv.sd,
                    "outcome": classify(task_iv, self.margin),
                }
            )
        if not per_task:
            raise ValueError(f"no paired measurements of {self.method} for metric {metric!r}")
        counts = {k: sum(p["outcome"] == k for p in per_task) for k in ("better", "tie", "worse")}
        n = len(per_task)
        overall = level.t_interval([p["mean"] for p in per_task])
        sds = [p["sd"] for p in per_task if math.isfinite(p["sd"])]
        p_min = min(
            sign_test(counts["better"], counts["worse"]),
            sign_test(counts["worse"], counts["better"]),
        )
        return Verdict.signs(
            counts["better"],
            counts["worse"],
            overall.mean,
            level,
            (
                f"{counts['better']} better / {counts['tie']} tie / {counts['worse']} worse "
                f"over {n} tasks (sign test p = {p_min:.3g}); pooled mean "
                f"difference {overall.mean:+.4g}"
            ),
            iv=overall,
            n=n,
            n_tasks=n,
            n_seeds=int(pivot.index.get_level_values("seed").nunique()),
            # the per-task spread over seeds: what more seeds would narrow
            sd=float(np.sqrt(np.mean(np.square(sds)))) if sds else math.nan,
            **counts,
            per_task=per_task,
        )

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

    def variants(self) -> tuple[str, ...]:
        return (self.variant,)

    def precisions(self) -> tuple[str, ...]:
        return (self.closer, self.farther, self.reference)

    def evaluate(self, table: pd.DataFrame, metric: str, level: Level = FIXED) -> Verdict:
        rows = table[(table.metric == metric) & (table.variant == self.variant)]
        if self.tasks:
            rows = rows[rows.task.isin(self.tasks)]
        pivot = wide(rows, metric, columns="precision")
        missing = [p for p in self.precisions() if p not in pivot.columns]
        if missing:
            raise ValueError(f"no {metric!r} values at precision(s) {', '.join(missing)}")
        near = (pivot[self.closer] - pivot[self.reference]).abs()
        far = (pivot[self.farther] - pivot[self.reference]).abs()
        gaps = (near - far).dropna()
        diffs = gaps.to_numpy()
        if diffs.size == 0:
            raise ValueError(f"no paired {metric!r} values of {self.closer} and {self.farther}")
        iv = level.t_interval(diffs, gaps.index.get_level_values("seed").tolist())
        verdict = Verdict.interval(
            iv,
            -self.margin,
            False,
            f"|{self.closer} - {self.reference}| = {near.mean():.4g} vs "
            f"|{self.farther} - {self.reference}| = {far.mean():.4g} over {diffs.size} pairs in "
            f"{iv.n} {level.unit}s",
            gap_closer=float(near.mean()),
            gap_farther=float(far.mean()),
        )
        if verdict.verdict == "not_reproduced" and not iv.low > 0:
            # between -margin and 0: closer, by less than the margin; not the other side
            return Verdict("inconclusive", verdict.measured)
        return verdict


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

    @property
    def fixed_n(self) -> str:
        return getattr(self.check, "fixed_n", "")

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

    def scope(self) -> dict[str, tuple]:
        """The unit parameters the check reads (for the rounds that add seeds)."""
        return {k: v if isinstance(v, tuple) else (v,) for k, v in self.params}

    def evaluate(self, table: pd.DataFrame, metric: str, level: Level = FIXED) -> Verdict:
        rows = self.select(table)
        if rows.empty:
            return Verdict.not_tested(f"not tested: no units with {self.label()} in this profile")
        verdict = self.check.evaluate(rows, metric, level)
        return verdict.with_summary(f"[{self.label()}] {verdict.measured['summary']}")


@dataclass(frozen=True)
class Trend:
    """``metric`` of ``variant`` rises (``increasing``) or falls with the unit parameter
    ``param`` within every setting of the other parameters: per group (seed and every
    other parameter column), the Spearman correlation of the metric with ``param``.
    Groups with one
    value of ``param``, or a constant metric (no rank correlation), do not count. One
    seed-free group is compared exactly.

    Verdict: a one-sided sign test of the groups' signs (:meth:`Verdict.signs`) that
    must agree with the mean rho (reproduced on the claimed side, not reproduced on the
    other, else inconclusive). Rank correlations saturate (every group can give exactly
    rho = 1, a zero-width interval), so the interval of the mean rho is reported, not
    used."""

    variant: str
    param: str
    increasing: bool = True

    def variants(self) -> tuple[str, ...]:
        return (self.variant,)

    def evaluate(self, table: pd.DataFrame, metric: str, level: Level = FIXED) -> Verdict:
        rows = table[(table.variant == self.variant) & (table.metric == metric)]
        if rows.empty or self.param not in rows.columns:
            return Verdict.not_tested(f"not tested: no {self.variant} units with a {self.param}")
        if rows[self.param].nunique() < 2:
            return Verdict.not_tested(f"one {self.param} only: no trend to test")
        seed_free = is_seed_free(rows)
        rows = rows.assign(seed=rows.seed.fillna(NO_SEED))
        others = ["seed", *(c for c in param_columns(rows) if c != self.param)]
        rows[others] = rows[others].astype(object).where(rows[others].notna(), "")
        rhos, gaps, seeds = [], [], []
        for key, group in rows.groupby(others):
            group = group.sort_values(self.param)
            if group[self.param].nunique() < 2:
                continue
            rho = float(group[self.param].astype(float).corr(group.value, method="spearman"))
            if rho == rho:
                rhos.append(rho)
                gaps.append(float(group.value.iloc[-1] - group.value.iloc[0]))
                seeds.append(key[0] if isinstance(key, tuple) else key)
        if not rhos:
            return Verdict.not_tested(f"{metric} constant within every setting: no trend to test")
        iv = level.interval(rhos, seed_free, seeds)
        gap = sum(gaps) / len(gaps)
        sign = 1.0 if self.increasing else -1.0
        units = level.units(rhos, seeds)  # the signs of independent units (seeds)
        agree = int(sum(sign * r > 0 for r in units))
        disagree = int(sum(sign * r < 0 for r in units))
        what = (
            f"Spearman({self.param}, {self.variant} {metric}) = {iv.mean:.3g} over "
            f"{len(rhos)} groups in {iv.n} {level.unit}s, {agree} with the claimed sign / {disagree} against (claim: "
            f"{'>' if self.increasing else '<'} 0); largest - smallest {self.param}: {gap:.3g}"
        )
        if seed_free and iv.n == 1:  # one deterministic group: its rho decides exactly
            holds = True if agree else False if disagree else None
            return Verdict.exact_property(holds, iv.mean, what, mean_gap_largest_minus_smallest=gap)
        return Verdict.signs(
            agree,
            disagree,
            sign * iv.mean,
            level,
            what,
            iv=iv,
            n=iv.n,
            mean_gap_largest_minus_smallest=gap,
        )


#: the fewest independent replicates a decisive verdict may rest on
MIN_REPLICATES = 3
EVIDENCE_RULES = (
    f"A decisive verdict (reproduced / not reproduced) needs at least {MIN_REPLICATES} "
    "independent replicates of the quantity the check tests (seeds, or tasks for a check "
    "over tasks) and a bounded interval of non-zero width; otherwise it is inconclusive, "
    "with the reason. Paper runs add seeds in rounds until each claim is decided or the "
    "method's evidence budget is spent, and every interval and test is read at the "
    "round's look of a group-sequential plan with O'Brien-Fleming alpha spending "
    "(two-sided alpha 0.05 over all looks), so stopping when decided keeps the error "
    "rate. Seed-free (deterministic) quantities are compared exactly. Checks over tasks "
    "(and trends over groups) decide by a one-sided sign test of better against worse "
    "tasks (ties carry no sign, half the look's alpha per direction) that must agree in "
    "sign with the pooled mean; exhaustive checks (a property every unit must show) count "
    "exactly. 'detectable' is the interval's half-width: the smallest effect the test "
    "could have seen; a miss where it exceeds the claim's smallest effect that matters is "
    "marked underpowered, with the seeds it would need. 'out of reach here' marks a claim "
    "this code cannot test at any affordable size on this machine, with what would."
)


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and math.isfinite(x)


def apply_evidence_rules(verdict: Verdict, effect: float | None = None) -> Verdict:
    """The evidence rules every check's verdict passes through (one place for every
    method, core checks and method-specific ones alike; see :data:`EVIDENCE_RULES`).

    Adds to ``measured``: ``detectable`` (the interval's half-width), ``check_verdict``
    (what the check alone said, when a rule overrides it), ``rule`` (why), ``flags``
    (``identical_replicates`` for a zero-width interval over several seeded values,
    ``underpowered``)."""
    measured = dict(verdict.measured)
    result = verdict.verdict
    low, high = measured.get("ci_low"), measured.get("ci_high")
    n = measured.get("n", measured.get("n_tasks"))
    seed_free = bool(measured.get("seed_free", False))
    bounded = _finite(low) and _finite(high)
    measured["detectable"] = (high - low) / 2 if bounded else math.inf
    if _finite(measured.get("critical_rho")):  # a fixed-n test: the effect it can declare
        measured["detectable"] = measured["critical_rho"]
    flags: list[str] = []
    reason = ""
    if (seed_free and n in (None, 1)) or measured.get("test") == "exact":
        pass  # deterministic values (every seed agrees by construction), compared exactly
    elif not isinstance(n, int):
        reason = "the check reports no replicate count n"
    elif n < MIN_REPLICATES:
        reason = f"n < {MIN_REPLICATES} (n = {n})"
    elif measured.get("test") in ("sign", "exhaustive", "permutation", "all_of"):
        # decided by the signs of n replicates, a test's p-value, or an exact count over
        # every unit (a property that must hold on each: one failure fails it)
        pass
    elif not bounded:
        reason = "unbounded interval"
    elif high - low <= 1e-12 * max(1.0, abs(low), abs(high)):
        reason = f"zero-width interval: all {n} replicates identical"
        if not seed_free:  # seeded replicates that agree exactly: look at the seed
            flags.append("identical_replicates")
    if reason and result in DECISIVE:
        measured["check_verdict"] = result
        measured["rule"] = reason
        result = "inconclusive"
    if result == "inconclusive" and effect and measured["detectable"] > abs(effect):
        flags.append("underpowered")
    if flags:
        measured["flags"] = flags
    return Verdict(result, measured)


def read_size(
    result: str, measured: dict[str, Any], effect: float | None, from_paper: bool
) -> tuple[str, str]:
    """The verdict with its size: ``(verdict, reading)``.

    Applies to a comparison (an interval against the bound 0, with a claimed side); a
    claim against another bound (a threshold, a non-inferiority or tolerance margin)
    states a bound, not an effect, and keeps its verdict. ``effect`` is the smallest
    effect that matters, which is the paper's own effect where ``from_paper``.

    - The interval clears 0 on the claimed side: ``reproduced`` where it is compatible
      with the paper's effect (its far end reaches it) or, without a paper number, its
      near end clears the smallest effect that matters; ``reproduced_smaller`` where it
      lies wholly below that size; without a paper number, an interval that clears 0
      and straddles the smallest effect is ``inconclusive`` (the size is unresolved).
    - The interval holds 0 and lies within +-effect: ``no_effect`` (two one-sided tests
      at the look's level, half its alpha each side: the interval is the TOST's).
    """
    lo, hi, bound, claimed = (measured.get(k) for k in ("ci_low", "ci_high", "bound", "claimed"))
    if not (
        _finite(lo)
        and _finite(hi)
        and isinstance(bound, int | float)
        and bound == 0
        and claimed in (">", "<")
        and _finite(effect)
        and effect > 0
        and measured.get("test") not in ("exact", "exhaustive", "sign", "permutation", "all_of")
    ):
        return result, ""
    sign = 1.0 if claimed == ">" else -1.0
    near, far = sorted((sign * lo, sign * hi))  # on the claimed scale: positive is the claim's
    whose = "the paper's effect" if from_paper else "the smallest effect that matters"
    size = f"{whose} {effect:g}"
    if result == "reproduced":
        if far < effect:
            return (
                "reproduced_smaller",
                f"smaller than {size}: the interval ends at {sign * far:+.3g}",
            )
        if near > effect:
            return "reproduced", f"larger than {size}" if from_paper else f"clears {size}"
        if from_paper:
            return "reproduced", f"compatible with {size}"
        return "inconclusive", f"claimed side, size unresolved: the interval straddles {size}"
    if result == "inconclusive" and -effect < near and far < effect:
        return "no_effect", f"within +-{effect:g} of 0, {whose}"
    return result, ""


@dataclass(frozen=True)
class Premise:
    """What must hold before a claim is tested (a premise check, registered with the
    claim): per seed, ``metric`` of ``variant`` (minus ``minus``, another metric of the
    same variant, where given) is at least ``at_least``, in every seed. Read on the
    claim's own rows at fp32; a premise that fails makes the claim ``premise_failed``
    (what its check said stays in ``check_verdict``)."""

    statement: str
    variant: str
    metric: str
    at_least: float
    minus: str = ""

    def evaluate(self, table: pd.DataFrame) -> dict[str, Any]:
        rows = table[(table.variant == self.variant) & (table.precision == "fp32")]
        wide = rows.pivot_table(index="seed", columns="metric", values="value", aggfunc="mean")
        if self.metric not in wide or (self.minus and self.minus not in wide):
            return {
                "statement": self.statement,
                "holds": False,
                "summary": f"premise not measured: no {self.metric!r} of {self.variant}",
            }
        values = wide[self.metric] - (wide[self.minus] if self.minus else 0.0)
        failing = sorted(int(s) for s, v in values.items() if not v >= self.at_least)
        per_seed = {int(s): round(float(v), 6) for s, v in values.items()}
        what = f"{self.metric}{' - ' + self.minus if self.minus else ''} of {self.variant}"
        return {
            "statement": self.statement,
            "holds": not failing and bool(per_seed),
            "per_seed": per_seed,
            "failing_seeds": failing,
            "summary": f"{what} >= {self.at_least:g} in every seed: "
            + ("holds" if not failing else f"fails in seeds {failing}")
            + f" ({len(per_seed) - len(failing)} of {len(per_seed)} hold)",
        }


@dataclass(frozen=True)
class OutOfReach:
    """Why a claim cannot be tested by this code on this machine at any affordable size,
    and what would test it (the model, the data, the GPU hours)."""

    reason: str
    would_test: str


@dataclass(frozen=True)
class Claim:
    """A paper's claim as data.

    ``effect`` is the smallest effect that matters, on the scale of the check's value
    (e.g. 0.0095 accuracy): the paper's effect where the paper states one, else a
    declared margin; ``effect_basis`` says which (and from what). It sets the power the
    sequential rounds aim for and the seeds an undecided claim would need. ``source``
    says where ``paper_value`` comes from (``abstract``, ``card``, ``Table 2``, ...).
    ``central`` marks the abstract's main empirical claim (one per method)."""

    id: str
    statement: str
    paper_value: str
    paper_setting: str
    metric: str
    check: Check
    effect: float
    effect_basis: str
    source: str
    central: bool = False
    #: the quantization scheme the claim is about (e.g. "bitdgdm_w4a4" for a memory
    #: claim): its verdict is read there only, not at every precision
    precision: str | None = None
    out_of_reach: OutOfReach | None = None
    #: the independent replicate (:data:`UNITS`): the seed unless the claim (or its
    #: check, as ``unit`` / ``unit_reason`` attributes) says why its tasks, groups or
    #: pairs are the replicates (``unit_reason``); '' takes the check's, else the seed
    unit: str = ""
    unit_reason: str = ""
    #: how the replicates become an interval (:data:`reprolab.evidence.judging.stats.RULES`): ``t``
    #: for the mean, ``sign`` for the median of a skewed, bimodal or bounded metric
    rule: str = "t"
    #: what must hold before the claim is tested (None: nothing)
    premise: Premise | None = None

    def __post_init__(self) -> None:
        if not self.unit:
            inner = self.check
            while hasattr(inner, "check"):  # through Where and other wrappers
                inner = inner.check
            object.__setattr__(self, "unit", getattr(inner, "unit", "seed"))
            object.__setattr__(self, "unit_reason", getattr(inner, "unit_reason", ""))
        if self.unit not in UNITS:
            raise ValueError(f"{self.id}: unknown unit {self.unit!r}; units: {', '.join(UNITS)}")
        if self.unit != "seed" and not self.unit_reason:
            raise ValueError(
                f"{self.id}: unit {self.unit!r} needs unit_reason (why those replicates are "
                "independent, or why the claim is about that fixed set)"
            )
        if self.rule not in RULES:
            raise ValueError(f"{self.id}: unknown rule {self.rule!r}; rules: {', '.join(RULES)}")

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

    @property
    def effect_from_paper(self) -> bool:
        """Whether ``effect`` is the paper's own number (else a declared margin)."""
        return self.effect_basis.startswith(("paper", "card"))

    @property
    def fixed_n(self) -> str:
        """Why more seeds would not decide this claim ('' when they would)."""
        return getattr(self.check, "fixed_n", "")

    def definition(self) -> dict[str, Any]:
        """What the claim *is*, for the preregistration ledger: everything but the data."""
        return {
            "statement": self.statement,
            "metric": self.metric,
            "check": repr(self.check),
            "paper_value": self.paper_value,
            "source": self.source,
            "effect": self.effect,
            "effect_basis": self.effect_basis,
            "central": self.central,
            "precision": self.precision,
            "unit": self.unit,
            "unit_reason": self.unit_reason,
            "rule": self.rule,
            **({"premise": repr(self.premise)} if self.premise is not None else {}),
            "out_of_reach": None
            if self.out_of_reach is None
            else {"reason": self.out_of_reach.reason, "would_test": self.out_of_reach.would_test},
        }

    def sized(self, verdict: Verdict) -> Verdict:
        """The check's verdict with its size (:func:`read_size`), before the evidence
        rules (which hold a size verdict to the same replicates as any other)."""
        if self.out_of_reach is not None or verdict.verdict not in ("reproduced", "inconclusive"):
            return verdict
        sized, reading = read_size(
            verdict.verdict, verdict.measured, self.effect, self.effect_from_paper
        )
        measured = dict(verdict.measured)
        if reading:
            measured["size"] = reading
        if sized != verdict.verdict:
            measured["size_of"] = verdict.verdict  # what the interval said of the side
        return Verdict(sized, measured)

    def evaluate(
        self, table: pd.DataFrame, precision: str, profile: str, plan: Any = None
    ) -> dict[str, Any]:
        """The claim's result at ``precision`` (its claims.json entry). ``plan``: the
        sequential plan (:class:`reprolab.evidence.judging.sequential.Plan`); the look is the number
        of seeds in the rows the claim reads. Without a plan: a fixed-n analysis."""
        if self.cross_precision:
            rows = table
            absent = sorted(set(self.check.precisions()) - set(table.precision))
        else:
            rows = table[table.precision == precision]
            absent = [precision] if self.precision is not None and rows.empty else []
        missing = sorted(set(self.check.variants()) - set(rows.variant))
        seeds = sorted(
            int(s) for s in rows[rows.variant.isin(self.check.variants())].seed.dropna().unique()
        )
        level = Level(unit=self.unit, rule=self.rule)
        if plan is not None and seeds:
            level = Level.at(plan.look(len(seeds)), self.unit, self.rule)
        if missing or absent:  # e.g. a baseline or a scheme left out in params.yaml
            what = (
                f"precision(s) {', '.join(absent)} were not quantized"
                if absent
                else f"variant(s) {', '.join(missing)} were not trained"
            )
            verdict = Verdict.not_tested(f"not tested: {what}")
        elif not rows[rows.metric == self.metric].value.notna().any():
            # e.g. a benchmark a profile leaves out (cot_order's HumanEval at n_humaneval 0)
            verdict = Verdict.not_tested(f"not tested: no {self.metric} value was measured")
        else:
            verdict = apply_evidence_rules(
                self.sized(self.check.evaluate(rows, self.metric, level)), self.effect
            )
        measured = dict(verdict.measured)
        measured["seeds"] = seeds
        measured["unit"] = self.unit
        measured["analysis"] = self.rule  # ("rule" is the evidence rule that overrode a check)
        if level.look is not None:
            measured["sequential"] = level.look.as_dict()
        if self.fixed_n:
            measured["fixed_n"] = self.fixed_n
        result = verdict.verdict
        if self.premise is not None and self.out_of_reach is None:
            premise = self.premise.evaluate(table)
            measured["premise"] = premise
            if not premise["holds"]:
                measured["check_verdict"] = measured.get("check_verdict", result)
                measured["summary"] = (
                    f"not tested: premise failed ({premise['summary']}); "
                    f"the check alone: {measured.get('summary', '')}"
                )
                result = "premise_failed"
        if self.out_of_reach is not None:
            if result != "inconclusive" or "check_verdict" not in measured:
                measured["check_verdict"] = result
            result = Verdict.out_of_reach(self.out_of_reach, measured).verdict
            measured["out_of_reach"] = {
                "reason": self.out_of_reach.reason,
                "would_test": self.out_of_reach.would_test,
            }
        elif result == "inconclusive" and plan is not None and level.look is not None:
            measured.update(_needs(measured, self.effect, plan, len(seeds)))
        return {
            "id": self.id,
            "statement": self.statement,
            "paper_value": self.paper_value,
            "paper_source": self.source,
            "paper_setting": self.paper_setting,
            "metric": self.metric,
            "precision": precision,
            "measured": measured,
            "verdict": result,
            "central": self.central,
            "effect": self.effect,
            "effect_basis": self.effect_basis,
            "profile": profile,
            "headline": self.about_a_scheme or precision == "fp32",
            "level": "smoke-level (machinery check, not evidence)"
            if profile == "smoke"
            else "paper profile",
        }


#: how a method's claims share the error rate (the reports quote it)
FAMILY_RULE = (
    "central first, then Holm: the central claim is tested at the full alpha; only when "
    "it is decided are the method's other claims tested, Holm-adjusted among themselves "
    "(step-down: each look's boundaries recomputed at alpha / k for the k claims still "
    "open). Exact and exhaustive comparisons spend no alpha and are not adjusted"
)


def _in_family(result: dict[str, Any]) -> bool:
    """Whether a headline result is a statistical test that spends alpha."""
    m = result.get("measured", {})
    return (
        result.get("verdict") not in ("out_of_reach", "premise_failed")
        and not m.get("not_tested")
        and m.get("test") not in ("exact", "exhaustive")
    )


def adjust_family(
    results: list[dict[str, Any]],
    reevaluate: Any,
    alpha: float,
) -> list[dict[str, Any]]:
    """The method's headline results under :data:`FAMILY_RULE`. ``reevaluate(result,
    level_alpha)`` gives the result again with the plan's boundaries at
    ``level_alpha``. Results at other precisions are returned as they are."""
    out = [dict(r) for r in results]
    heads = [i for i, r in enumerate(out) if r.get("headline") and _in_family(r)]
    central = [i for i in heads if out[i].get("central")]
    others = [i for i in heads if i not in central]

    def mark(i: int, verdict: str, result: dict[str, Any], note: str, level: float) -> None:
        measured = dict(result["measured"])
        if verdict != results[i]["verdict"]:  # what the claim said at the full alpha
            measured["check_verdict"] = measured.get("check_verdict", results[i]["verdict"])
        # verdict_alone: the claim read by itself at the full alpha, what the same claim
        # at another precision (outside the family) is compared with
        family = {
            "rule": "central first, then Holm",
            "alpha": level,
            "note": note,
            "verdict_alone": results[i]["verdict"],
        }
        if "sequential" in measured:  # the look at the family's level; the plan's stays
            family["look"] = measured["sequential"]
            plan_look = results[i]["measured"].get("sequential")
            if plan_look is None:  # a fixed-n result, read at the family's level
                del measured["sequential"]
            else:
                measured["sequential"] = plan_look
        measured["family"] = family
        out[i] = {**result, "verdict": verdict, "measured": measured}

    for i in central:
        mark(i, out[i]["verdict"], out[i], "the central claim: tested first", alpha)
    gate_open = not central or all(out[i]["verdict"] in DECISIVE for i in central)
    if not gate_open:
        for i in others:
            verdict = out[i]["verdict"] if out[i]["verdict"] not in DECISIVE else "inconclusive"
            mark(i, verdict, out[i], "not tested: the central claim is undecided", alpha)
        return out
    open_ = list(others)
    adjusted: dict[int, dict[str, Any]] = {}
    while open_:
        level = alpha / len(open_)
        decided = []
        for i in open_:
            if results[i]["verdict"] not in DECISIVE:
                continue  # undecided at the full alpha: undecided at any smaller one
            again = reevaluate(results[i], level)
            adjusted[i] = again
            if again["verdict"] in DECISIVE:
                decided.append(i)
        if not decided:
            break
        for i in decided:
            mark(
                i, adjusted[i]["verdict"], adjusted[i], f"Holm: decided at alpha {level:.3g}", level
            )
        open_ = [i for i in open_ if i not in decided]
    if open_:
        level = alpha / len(open_)
        for i in open_:
            result = adjusted.get(i, out[i])
            mark(i, result["verdict"], result, f"Holm: open at alpha {level:.3g}", level)
    return out


def rules_out_effect(measured: dict[str, Any], effect: float | None) -> bool:
    """Whether an undecided claim's interval lies within ``effect`` (the smallest effect
    that matters) of its bound on both sides: an effect of that size is excluded in
    either direction, and more seeds can decide only a smaller one."""
    lo, hi, bound = (measured.get(k) for k in ("ci_low", "ci_high", "bound"))
    if not all(_finite(v) for v in (lo, hi, bound)) or not (_finite(effect) and effect > 0):
        return False
    return bound - effect < lo <= hi < bound + effect


def equivalence_text(effect: float) -> str:
    """The reading of an undecided claim for which :func:`rules_out_effect` holds."""
    return (
        f"the interval lies within +-{effect:g} (the smallest effect that matters) of the "
        "bound: an effect of that size is ruled out either way; more seeds could decide "
        "only a smaller one"
    )


def signed(x: Any) -> str:
    """A measured number as the reports write it: signed, 4 significant digits."""
    if not isinstance(x, int | float) or isinstance(x, bool) or math.isnan(x):
        return "n/a"
    if math.isinf(x):
        return "+inf" if x > 0 else "-inf"
    return f"{x:+.4g}"


def interval_text(value: Any, low: Any, high: Any) -> str:
    """'+0.045 [+0.023, +0.068]'."""
    return f"{signed(value)} [{signed(low)}, {signed(high)}]"


def measured_text(m: dict[str, Any]) -> str:
    """A claims.json entry's ``measured`` as one line: the value and its interval, or
    the kind of test that has none (exact, exhaustive)."""
    low, high = m.get("ci_low"), m.get("ci_high")
    if m.get("test") in ("exact", "exhaustive"):
        return f"{signed(m.get('value'))} ({m['test']})"
    interval = (
        interval_text(m.get("value"), low, high)
        if all(isinstance(v, int | float) and math.isfinite(v) for v in (low, high))
        else f"{signed(m.get('value'))} (no interval)"
    )
    if m.get("test") == "sign":
        # the sign test over tasks (or groups) decides; the mean's interval is reported
        # beside it, not used, so it can cross the bound under a decisive verdict
        return f"{sign_counts_text(m)}; mean {interval}"
    return interval


def sign_counts_text(m: dict[str, Any]) -> str:
    """What a sign-test verdict counted: '16 of 16 tasks better, 0 worse (sign test p =
    1.5e-05)' for a check over tasks, 'signs of 5 seeds (sign test p = 0.031)' for a trend."""
    p = m.get("sign_test_p")
    p_text = f"p = {p:.2g}" if _finite(p) else "p n/a"
    if all(isinstance(m.get(k), int) for k in ("better", "worse")):
        n = m.get("n_tasks", m.get("n"))
        return f"{m['better']} of {n} tasks better, {m['worse']} worse (sign test {p_text})"
    return f"signs of {m.get('n')} {m.get('unit') or 'unit'}s (sign test {p_text})"


def rules_out_claimed_effect(measured: dict[str, Any], effect: float | None) -> bool:
    """Whether an undecided claim's interval excludes an effect of ``effect`` (the
    smallest effect that matters) on the claimed side of its bound: the claimed effect
    is not seen at that size, though the interval still crosses the bound."""
    lo, hi, bound = (measured.get(k) for k in ("ci_low", "ci_high", "bound"))
    if not all(_finite(v) for v in (lo, hi, bound)) or not (_finite(effect) and effect > 0):
        return False
    claimed = measured.get("claimed")
    if claimed == ">":
        return hi < bound + effect
    if claimed == "<":
        return lo > bound - effect
    return False


def claimed_effect_text(measured: dict[str, Any], effect: float) -> str:
    """The reading of an undecided claim for which :func:`rules_out_claimed_effect`
    holds."""
    end = measured["ci_high"] if measured["claimed"] == ">" else measured["ci_low"]
    return (
        f"an effect of {effect:g} (the smallest that matters) or more on the claimed side "
        f"is ruled out: the interval ends at {end:+.3g}; more seeds could decide only a "
        "smaller effect, or the other side"
    )


def undecided_reading(measured: dict[str, Any], effect: float | None) -> str:
    """What an undecided claim's interval already excludes: an effect of the size that
    matters either way, or on the claimed side; '' when neither."""
    if rules_out_effect(measured, effect):
        return equivalence_text(effect)
    if rules_out_claimed_effect(measured, effect):
        return claimed_effect_text(measured, effect)
    return ""


def _needs(measured: dict[str, Any], effect: float, plan: Any, seeds: int) -> dict[str, Any]:
    """For an undecided claim: the seeds at which the plan's last look would decide an
    effect of ``effect`` with 80% power, at the spread observed (per replicate), or why
    there is no such estimate."""
    if measured.get("not_tested"):
        return {}
    if measured.get("test") in ("exact", "exhaustive") or measured.get("seed_free"):
        return {"needs": "more seeds cannot decide it (no seeded replicates)"}
    sd, n = measured.get("sd"), measured.get("n")
    if not (_finite(sd) and sd > 0 and isinstance(n, int) and n > 0 and effect > 0):
        return {"needs": "no estimate (no spread or no effect to aim for)"}
    per_seed = n / seeds if measured.get("test") != "sign" else 1.0
    needed = plan.seeds_needed(float(sd), float(effect), per_seed)
    if needed is None:
        return {}
    return {"needs_seeds": needed}
