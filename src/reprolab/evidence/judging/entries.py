"""claims.json, typed: the one way the project reads a claim's committed result.

A claims.json file is a list of *entries*, one per (claim, precision), written by the
evaluate stage from :meth:`reprolab.evidence.judging.claims.Claim.result` and re-read by the
results package (rounds, reread, scoreboard, trail, confirm, compare). Every reader goes
through :func:`load`: it checks each entry's fields and types once, names the file and
the key when one is wrong, and gives :class:`Entry` objects whose fields are typed.

``measured`` holds the fields every check writes (:class:`Measured`) and, in ``extra``,
what a method's own statistic adds (``per_task``, ``gain_occluded``, ...). An entry
keeps the dictionary it was read from (``raw``): what is written back is exactly what
was read, and :meth:`Entry.as_dict` is that dictionary.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: every verdict a claim can get. ``reproduced``: the interval clears the bound on the
#: claimed side and is compatible with the paper's effect (or, where the paper gives no
#: number, clears the smallest effect that matters); ``reproduced_smaller``: it clears the
#: bound but excludes that size (an effect on the claimed side, smaller than the
#: paper's); ``no_effect``: the interval holds the bound and lies within the equivalence
#: margin of it (a TOST at the look's level); ``not_reproduced``: it lies on the other
#: side; ``inconclusive``: none of these; ``premise_failed``: not tested, the claim's
#: registered premise (:class:`Premise`) does not hold on the run's seeds;
#: ``out_of_reach``: not testable here
VERDICTS = (
    "reproduced",
    "reproduced_smaller",
    "no_effect",
    "not_reproduced",
    "inconclusive",
    "premise_failed",
    "out_of_reach",
)
#: the verdicts that decide a claim (its sequential rounds stop)
DECISIVE = ("reproduced", "reproduced_smaller", "no_effect", "not_reproduced")
#: the verdicts that find the claimed direction (whatever the size)
SUPPORTED = ("reproduced", "reproduced_smaller")


def opposite(a: str, b: str) -> bool:
    """Whether two verdicts decide opposite sides (the claimed side, at any size, against
    the other side)."""
    return {a in SUPPORTED, b in SUPPORTED} == {True, False} and "not_reproduced" in (a, b)


def is_headline(result: dict) -> bool:
    """Whether a claims.json entry is its claim's headline result (at fp32, or the
    scheme the claim is about; results written before the field existed: fp32)."""
    return bool(result.get("headline", result.get("precision") == "fp32"))


#: a verdict as the reports write it
VERDICT_TEXT = {
    "reproduced": "reproduced",
    "reproduced_smaller": "reproduced, smaller",
    "no_effect": "no effect that matters",
    "not_reproduced": "not reproduced",
    "inconclusive": "inconclusive",
    "premise_failed": "not tested: premise failed",
    "out_of_reach": "out of reach",
}


class EntryError(ValueError):
    """A claims.json entry that is not what the evaluate stage writes."""


def _need(raw: Mapping[str, Any], key: str, kinds: tuple[type, ...], where: str) -> Any:
    if key not in raw:
        raise EntryError(f"{where}: the key {key!r} is missing")
    value = raw[key]
    if not isinstance(value, kinds) or (bool in kinds) != isinstance(value, bool):
        names = " or ".join(k.__name__ for k in kinds)
        raise EntryError(f"{where}: {key!r} is {type(value).__name__}, expected {names}")
    return value


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


@dataclass(frozen=True)
class Measured:
    """What a check measured: the estimate, its interval at the look's level, the
    replicates it came from and how it was analysed."""

    value: float
    ci_low: float
    ci_high: float
    summary: str
    unit: str
    analysis: str
    seeds: tuple[int, ...]
    n: int | None = None
    sd: float | None = None
    bound: float | tuple[float, ...] | None = None
    claimed: str | None = None
    size: str = ""
    check_verdict: str | None = None
    sequential: Mapping[str, Any] | None = None
    family: Mapping[str, Any] | None = None
    premise: Mapping[str, Any] | None = None
    out_of_reach: Mapping[str, Any] | None = None
    not_tested: bool = False
    test: str | None = None
    seed_free: bool = False
    #: the check's own fields beyond these (per_task, gain_occluded, flags, ...)
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: the object as read (what the text helpers of :mod:`reprolab.evidence.judging.claims` take)
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    FIELDS = (
        "value",
        "ci_low",
        "ci_high",
        "summary",
        "unit",
        "analysis",
        "seeds",
        "n",
        "sd",
        "bound",
        "claimed",
        "size",
        "check_verdict",
        "sequential",
        "family",
        "premise",
        "out_of_reach",
        "not_tested",
        "test",
        "seed_free",
    )

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], where: str) -> Measured:
        where = f"{where}: measured"
        if not isinstance(raw, Mapping):
            raise EntryError(f"{where} is {type(raw).__name__}, expected an object")
        seeds = raw.get("seeds") or ()  # none: a seed-free check
        if not isinstance(seeds, list | tuple):
            raise EntryError(f"{where}: 'seeds' is {type(seeds).__name__}, expected list")
        bound = raw.get("bound")
        return cls(
            value=_number(_need(raw, "value", (int, float, type(None)), where)),
            ci_low=_number(_need(raw, "ci_low", (int, float, type(None)), where)),
            ci_high=_number(_need(raw, "ci_high", (int, float, type(None)), where)),
            summary=raw.get("summary", ""),
            # files written before units and rules were named: the seed, the mean
            unit=raw.get("unit", "seed"),
            analysis=raw.get("analysis", "t"),
            seeds=tuple(int(s) for s in seeds),
            n=None if raw.get("n") is None else int(raw["n"]),
            sd=None if raw.get("sd") is None else float(raw["sd"]),
            bound=tuple(bound) if isinstance(bound, list) else bound,
            claimed=raw.get("claimed"),
            size=raw.get("size", ""),
            check_verdict=raw.get("check_verdict"),
            sequential=raw.get("sequential"),
            family=raw.get("family"),
            premise=raw.get("premise"),
            out_of_reach=raw.get("out_of_reach"),
            not_tested=bool(raw.get("not_tested", False)),
            test=raw.get("test"),
            seed_free=bool(raw.get("seed_free", False)),
            extra={k: v for k, v in raw.items() if k not in cls.FIELDS},
            raw=raw,
        )

    @property
    def has_interval(self) -> bool:
        """Whether the interval is finite at both ends."""
        return math.isfinite(self.ci_low) and math.isfinite(self.ci_high)

    @property
    def family_alpha(self) -> float | None:
        """The alpha the claim was read at within its method's family, if any."""
        return None if self.family is None else self.family.get("alpha")


@dataclass(frozen=True)
class Evidence:
    """How the sequential rounds got to the verdict: the seeds, the rounds run, the
    round that decided it (0: none) and, when undecided, what more would need."""

    seeds: tuple[int, ...]
    rounds: int
    decided_round: int
    rule: str
    why: str = ""
    needs_seeds: int | None = None
    needs_minutes: float | None = None

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], where: str) -> Evidence:
        where = f"{where}: evidence"
        if not isinstance(raw, Mapping):
            raise EntryError(f"{where} is {type(raw).__name__}, expected an object")
        return cls(
            seeds=tuple(int(s) for s in raw.get("seeds") or ()),
            rounds=int(raw.get("rounds", 1)),
            decided_round=int(raw.get("decided_round") or 0),
            rule=raw.get("rule", ""),
            why=raw.get("why", ""),
            needs_seeds=raw.get("needs_seeds"),
            needs_minutes=raw.get("needs_minutes"),
        )


@dataclass(frozen=True)
class Entry:
    """One claim's result at one precision, as claims.json holds it."""

    id: str
    statement: str
    metric: str
    precision: str
    profile: str
    verdict: str
    central: bool
    headline: bool
    effect: float | None
    effect_basis: str
    paper_value: str
    paper_source: str
    paper_setting: str
    level: str
    measured: Measured
    evidence: Evidence | None = None
    verdict_on_file: str | None = None
    #: the registration id of the confirmatory run this came from
    confirmatory: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], where: str = "claims entry") -> Entry:
        if not isinstance(raw, Mapping):
            raise EntryError(f"{where} is {type(raw).__name__}, expected an object")
        where = f"{where} {raw.get('id', '?')!r}"
        verdict = _need(raw, "verdict", (str,), where)
        if verdict not in VERDICTS:
            raise EntryError(f"{where}: verdict {verdict!r} is none of {list(VERDICTS)}")
        evidence = raw.get("evidence")
        effect = raw.get("effect")
        return cls(
            id=_need(raw, "id", (str,), where),
            statement=raw.get("statement", ""),
            metric=raw.get("metric", ""),
            precision=_need(raw, "precision", (str,), where),
            profile=raw.get("profile", ""),
            verdict=verdict,
            central=bool(raw.get("central", False)),
            headline=is_headline(raw),
            effect=None if effect is None else float(effect),
            effect_basis=raw.get("effect_basis", ""),
            paper_value=raw.get("paper_value", ""),
            paper_source=raw.get("paper_source", ""),
            paper_setting=raw.get("paper_setting", ""),
            level=raw.get("level", ""),
            measured=Measured.from_dict(_need(raw, "measured", (dict,), where), where),
            evidence=None if evidence is None else Evidence.from_dict(evidence, where),
            verdict_on_file=raw.get("verdict_on_file"),
            confirmatory=raw.get("confirmatory"),
            raw=raw,
        )

    def as_dict(self) -> dict[str, Any]:
        """The entry as it was read (what a writer puts back)."""
        return dict(self.raw)

    @property
    def decided_round(self) -> int:
        """The round that decided the claim (0: undecided, or no rounds on file)."""
        return 0 if self.evidence is None else self.evidence.decided_round


def parse(items: Any, where: str) -> list[Entry]:
    """Entries from a claims.json document (a list of objects)."""
    if not isinstance(items, list):
        raise EntryError(f"{where}: expected a list of claim entries, got {type(items).__name__}")
    return [Entry.from_dict(item, f"{where}[{i}]") for i, item in enumerate(items)]


def load(path: Path | str) -> list[Entry]:
    """Every entry of one claims.json file; a clear :class:`EntryError` naming the file
    and the key when the file is not a claims file."""
    path = Path(path)
    try:
        items = json.loads(path.read_text())
    except FileNotFoundError:
        raise EntryError(f"{path}: no such claims file") from None
    except json.JSONDecodeError as err:
        raise EntryError(f"{path}: not JSON ({err})") from None
    return parse(items, str(path))


def headlines(entries: Iterable[Entry]) -> list[Entry]:
    """The headline entries (one per claim)."""
    return [e for e in entries if e.headline]


def central(entries: Iterable[Entry]) -> Entry | None:
    """The central claim's headline entry, if the file has one."""
    return next((e for e in entries if e.headline and e.central), None)
