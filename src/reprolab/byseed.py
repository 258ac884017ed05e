"""The seed as the replicate: a robustness reading of the committed paired verdicts.

A paired-difference claim (``core.claims.PairedDifference``) pools its (task, seed) pairs
into one t-interval, as if every pair were an independent replicate. Where one seed gives
several pairs (tasks, settings, pairs of models) those pairs can share the seed's
randomness, and the pooled interval is then narrower than the seeds warrant. This module
reads every committed paper-profile result (``docs/results/<slug>/`` and its held-out
blocks ``seeds-*/``), evaluates each such claim again with the seed as the replicate
(:meth:`PairedDifference.by_seed`, at the level the verdict on file used) and says whether
the verdict on file *holds* by seed (the interval over seeds lies on the same side of the
bound as the pooled one), *does not hold* (the pooled interval decided, the one over seeds
does not, or decides the other way), or *decides* (the pooled interval did not decide and
the one over seeds does).

It changes no verdict: the verdict on file is the one its registered rule gave. The
scoreboard shows the reading for each central claim and writes every reading to
``docs/results/by-seed.md``; a verdict that does not hold by seed is one to read with
that in mind.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from reprolab import registry
from reprolab.core.claims import Level, PairedDifference, interval_text, measured_text, side
from reprolab.core.stats import Interval

PAGE = "by-seed.md"
#: a design effect above this is read as a seed's pairs moving together (the estimate
#: itself comes from few seeds, so values near 1 are not told apart from 1)
MOVE_TOGETHER = 1.2


@dataclass(frozen=True)
class Reading:
    result: str  # "<slug>" or "<slug>/seeds-50-51-52-53-54"
    claim: str
    precision: str
    central: bool
    verdict: str  # the verdict on file
    pooled: str  # its interval, as claims.json gives it
    pairs: int
    by_seed: Interval
    pooled_side: str
    seed_side: str
    #: Kish's design effect: the variance of the mean as the seeds give it, over the
    #: variance the pooled interval assumes (pairs independent)
    design_effect: float

    @property
    def reading(self) -> str:
        if self.seed_side == self.pooled_side:
            return "holds"
        return "decides" if self.pooled_side == "inconclusive" else "does not hold"

    @property
    def why(self) -> str:
        """What a reading that differs comes from."""
        if self.reading == "holds":
            return ""
        if self.reading == "decides":  # only a smaller variance can narrow it
            return "a seed's pairs vary more than the seeds do"
        n = self.by_seed.n
        why = f"{n} seeds leave {n - 1} degrees of freedom"
        if self.design_effect > MOVE_TOGETHER:
            return why + "; a seed's pairs move together"
        return why + "; no sign that a seed's pairs move together"


def interval_of(iv: Interval) -> str:
    return interval_text(iv.mean, iv.low, iv.high)


def _level(measured: dict) -> Level:
    """The level the verdict on file was read at: the sequential look's nominal level,
    or 95% for a fixed-n result."""
    nominal = (measured.get("sequential") or {}).get("nominal_level")
    return Level(confidence=1.0 - float(nominal)) if nominal else Level()


def pools_pairs(check) -> bool:
    """Whether ``check`` is a paired difference pooled over pairs (alone or under a
    ``Where``), the one kind this reading applies to."""
    inner = getattr(check, "check", check)
    return isinstance(inner, PairedDifference) and not inner.deterministic


def _bound(measured: dict, check) -> tuple[bool, float]:
    """Which side the claim wants and its bound: as the result on file records them, or
    (a result from before they were recorded) as the check defines them."""
    inner = getattr(check, "check", check)  # a Where wraps the paired difference
    higher = bool(inner.higher_is_better)
    if "bound" in measured:
        return measured.get("claimed", ">" if higher else "<") != "<", float(measured["bound"])
    return higher, -inner.margin if higher else inner.margin


def _seeds_of(folder: Path) -> set[int]:
    run = folder / "run.json"
    return set(json.loads(run.read_text()).get("seeds", [])) if run.is_file() else set()


def _folders(results: Path, slug: str) -> list[Path]:
    """The pooled results and the held-out blocks still held out (a block whose seeds
    the pooled run has taken in since is superseded by it)."""
    top = results / slug
    pooled = _seeds_of(top)
    blocks = sorted(p for p in top.glob("seeds-*") if p.is_dir())
    return [top, *(b for b in blocks if not _seeds_of(b) & pooled)]


def readings_of(folder: Path, slug: str, results: Path) -> list[Reading]:
    """The readings of one results folder (its ``claims.json`` and metrics table)."""
    from reprolab.compare import metrics_file

    claims_file = folder / "claims.json"
    table_file = metrics_file(folder)
    if not claims_file.is_file() or not table_file.is_file():
        return []
    defined = {c.id: c for c in registry.get(slug).claims}
    table = None
    out = []
    for entry in json.loads(claims_file.read_text()):
        claim = defined.get(entry["id"])
        m = entry.get("measured") or {}
        if claim is None or not pools_pairs(claim.check) or "ci_low" not in m:
            continue
        if table is None:
            try:
                table = pd.read_csv(table_file)
            except (OSError, ValueError, EOFError) as exc:  # a truncated .gz: EOFError
                raise ValueError(f"{table_file}: cannot read the metrics table ({exc})") from exc
        rows = table[(table.precision == entry["precision"]) & (table.metric == claim.metric)]
        if m.get("seeds"):  # the seeds the verdict was read on (later rounds may add more
            # for other claims that share its variants)
            rows = rows[rows.seed.isin(m["seeds"]) | rows.seed.isna()]
        both = claim.check.by_seed(rows, claim.metric, _level(m))
        if both is None:
            continue
        pooled, iv = both
        se_pairs, se_seeds = pooled.sd / math.sqrt(pooled.n), iv.sd / math.sqrt(iv.n)
        higher, bound = _bound(m, claim.check)
        out.append(
            Reading(
                result=str(folder.relative_to(results)),
                claim=entry["id"],
                precision=entry["precision"],
                central=claim.central,
                verdict=entry["verdict"],
                pooled=measured_text(m),
                pairs=int(m.get("n", 0)),
                by_seed=iv,
                pooled_side=side(m["ci_low"], m["ci_high"], bound, higher),
                seed_side=side(iv.low, iv.high, bound, higher),
                design_effect=(se_seeds / se_pairs) ** 2 if se_pairs > 0 else math.nan,
            )
        )
    return out


def readings(root: Path, results: Path | None = None) -> list[Reading]:
    results = results or root / "docs" / "results"
    out = []
    for slug in registry.slugs():
        for folder in _folders(results, slug):
            out += readings_of(folder, slug, results)
    return out


def cell(found: list[Reading], slug: str, claim, precision: str) -> str:
    """The scoreboard's cell for a central claim's (``claim``, a ``core.claims.Claim``)
    headline result."""
    if not pools_pairs(claim.check):
        return "not a pooled paired difference"
    mine = [
        r for r in found if r.result == slug and r.claim == claim.id and r.precision == precision
    ]
    if not mine:
        return "one pair per seed: the same"
    r = mine[0]
    text = f"{interval_of(r.by_seed)}, {r.by_seed.n} seeds"
    return f"{r.reading}: {text}" if r.reading == "holds" else f"**{r.reading}** ({r.why}): {text}"


HEADER = """# The seed as the replicate

Generated by `python -m reprolab scoreboard` from the committed results; do not edit by
hand. A paired-difference claim pools its (task, seed) pairs into one interval, as if
every pair were independent. Where a seed gives several pairs (tasks, settings, pairs of
models), they can share the seed's randomness, and the pooled interval is then narrower
than the seeds warrant. Here each such result is read again with the seed as the
replicate: each seed's pairs averaged into one difference, a t-interval over seeds, at the
level the verdict on file used (where seeds have different numbers of pairs, the two
means differ too). *Holds*: that interval lies on the same side of the bound as the
pooled one. *Does not hold*: the pooled interval decided and the one over seeds does not
(or decides the other way). *Decides*: the pooled interval did not decide and the one
over seeds does. No verdict on file changes here; it is the one its registered rule gave.
Claims with one pair per seed read the same both ways and are not listed.

*Design effect* (Kish's): the variance of the mean as the seeds give it over the variance
the pooled interval assumes (itself an estimate from few seeds; the notes read it as
"a seed's pairs move together" above 1.2). Above 1: a seed's pairs move together, and
the pooled interval is too narrow: a verdict that does not hold by seed then leans on an
assumption the data do not support. Near or below 1: no sign that they
do (below 1, a seed's pairs vary more than the seeds do), and a verdict that does not
hold by seed falls to the few degrees of freedom of a few seeds, which weigh most at an
early look of the sequential plan (its nominal level is small there): the pooled reading's
assumption is not contradicted, but the verdict rests on it.
"""


def render(found: list[Reading]) -> str:
    counts = {k: sum(r.reading == k for r in found) for k in ("holds", "does not hold", "decides")}
    lines = [
        HEADER,
        f"{len(found)} results with several pairs per seed: {counts['holds']} hold, "
        f"{counts['does not hold']} do not hold, {counts['decides']} decide by seed.",
        "",
        "## Central claims and readings that differ",
        "",
        "| result | claim | precision | verdict on file | pooled [interval] | pairs | by seed [interval] | seeds | design effect | reading |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    shown = [r for r in found if r.central or r.reading != "holds"]
    rest = [r for r in found if not (r.central or r.reading != "holds")]

    def row(r: Reading) -> str:
        reading = r.reading if r.reading == "holds" else f"**{r.reading}** ({r.why})"
        claim = f"`{r.claim}`" + (" (central)" if r.central else "")
        return (
            f"| {r.result} | {claim} | {r.precision} | {r.verdict.replace('_', ' ')} | "
            f"{r.pooled} | {r.pairs} | {interval_of(r.by_seed)} | {r.by_seed.n} | "
            f"{r.design_effect:.2f} | {reading} |"
        )

    lines += [row(r) for r in shown]
    lines += [
        "",
        "## The other results (all hold)",
        "",
        "| result | claim | precision | verdict on file | pooled [interval] | pairs | by seed [interval] | seeds | design effect | reading |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *(row(r) for r in rest),
    ]
    return "\n".join(lines) + "\n"
