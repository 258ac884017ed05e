"""Sequential replication: after each round of a paper run, which claims are decided,
which seeds the undecided ones get next, and what that would cost.

A round is one ``dvc repro``. Its claims.json says, per claim, the verdict at the look
of the method's plan (``judging.sequential``) and the seeds it was read on. A claim whose
headline verdict is inconclusive, that more seeds can decide (seeded replicates, not a
fixed set of points) and whose plan has a next look, gets the seeds of that look: a rule
of ``evidence.added`` (``contract.AddedSeeds``) for the variants, tasks and unit
parameters it reads, and for it alone, so a claim decided earlier keeps the seeds it was
decided on. Finished units are reused (train's unit fingerprints, evaluate's memo).
The rounds stop when every claim is decided, or when the method's plan or its evidence
budget (``evidence.budget_minutes`` of measured compute) is spent; a claim left
undecided says why, with the seeds it would need at the spread observed and how long
those would take here.

Pure logic on the claims and timings of a round; :mod:`reprolab.evidence.running.paper` runs the rounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reprolab.contract import MethodSpec, Unit


def headline(claims: list[dict]) -> dict[str, dict]:
    """Each claim's headline result, by claim id (``judging.claims.is_headline``)."""
    from reprolab.evidence.judging.claims import is_headline

    return {c["id"]: c for c in claims if is_headline(c)}


def why_not_more(result: dict, plan: Any) -> str:
    """Why more seeds would not change an undecided claim ('' when they could)."""
    m = result.get("measured", {})
    if result["verdict"] == "premise_failed":
        return "not tested: its premise failed on seeds already run (more cannot undo that)"
    if result["verdict"] != "inconclusive":
        return "decided" if result["verdict"] != "out_of_reach" else "out of reach here"
    if m.get("not_tested"):
        return "not tested in this profile"
    if m.get("fixed_n"):
        return f"fixed n: {m['fixed_n']}"
    if m.get("test") in ("exact", "exhaustive") or (m.get("seed_free") and m.get("n") in (None, 1)):
        return "no seeded replicates: more seeds cannot change it"
    if "identical_replicates" in m.get("flags", []):
        return "every replicate identical: more seeds would repeat it"
    if not m.get("seeds"):
        return "no seeded replicates: more seeds cannot change it"
    if plan.next_seeds(len(m["seeds"])) is None:
        return f"the plan's last look ({plan.max_seeds} seeds) is reached"
    return ""


@dataclass(frozen=True)
class Scope:
    """The units a claim reads: variants (with the trained variants they evaluate),
    tasks (None: all), unit parameters (None: any)."""

    variants: tuple[str, ...]
    tasks: tuple[str, ...] | None = None
    params: tuple[tuple[str, tuple], ...] | None = None

    def as_rule(self, claims: list[str], seeds: list[int]) -> dict:
        rule: dict[str, Any] = {
            "claims": sorted(claims),
            "seeds": sorted(seeds),
            "variants": list(self.variants),
        }
        if self.tasks is not None:
            rule["tasks"] = list(self.tasks)
        if self.params is not None:
            rule["params"] = {k: list(v) for k, v in self.params}
        return rule

    def matches(self, unit: Unit) -> bool:
        if unit.variant not in self.variants:
            return False
        if self.tasks is not None and unit.task not in self.tasks:
            return False
        return all(unit.param.get(k) in allowed for k, allowed in (self.params or ()))


def scope(spec: MethodSpec, claim: Any) -> Scope:
    """What ``claim`` reads, from its check: the variants, the tasks of a check that
    names them (``PrecisionGap(tasks=...)``), the unit parameters of a wrapper that
    selects them (``Where``, or any check with a ``scope()``)."""
    check = claim.check
    variants = list(check.variants())
    for v in list(variants):
        source = spec.trained_variant(v)
        if source not in variants:
            variants.append(source)
    tasks = tuple(getattr(check, "tasks", ()) or ()) or None
    params = check.scope() if hasattr(check, "scope") else None
    return Scope(
        variants=tuple(variants),
        tasks=tasks,
        params=tuple(sorted(params.items())) if params else None,
    )


@dataclass
class Decision:
    """What a round decides for one method."""

    added: list[dict] = field(default_factory=list)  # new AddedSeeds rules
    grow: dict[str, int] = field(default_factory=dict)  # claim -> seeds at its next look
    stop: str = ""  # why no seeds are added ('' when some are)
    estimate_minutes: float = 0.0


def next_seeds(used: list[int], count: int, avoid: set[int]) -> list[int]:
    """``count`` new seeds after the largest of ``used``, skipping ``avoid`` (seeds
    held out for a stability block)."""
    out, s = [], max(used) + 1 if used else 0
    while len(out) < count:
        if s not in avoid and s not in used:
            out.append(s)
        s += 1
    return out


def plan_round(
    spec: MethodSpec,
    cfg: Any,
    profile_seeds: list[int],
    claims: list[dict],
    avoid: set[int] = frozenset(),
) -> tuple[Decision, dict[str, str]]:
    """The seeds the next round adds, and per claim why it gets none."""
    from reprolab.evidence.judging.sequential import plan_for

    plan = plan_for(cfg.evidence, profile_seeds)
    results = headline(claims)
    by_id = {c.id: c for c in spec.claims}
    reasons: dict[str, str] = {}
    groups: dict[tuple, dict] = {}
    decision = Decision()
    for cid, result in results.items():
        reason = why_not_more(result, plan)
        if reason:
            reasons[cid] = reason
            continue
        have = result["measured"]["seeds"]
        target = plan.next_seeds(len(have))
        decision.grow[cid] = target
        seeds = next_seeds(have, target - len(have), avoid)
        key = (scope(spec, by_id[cid]), tuple(seeds))
        groups.setdefault(key, {"claims": [], "scope": key[0], "seeds": seeds})["claims"].append(
            cid
        )
    for group in groups.values():
        decision.added.append(group["scope"].as_rule(group["claims"], group["seeds"]))
    if not decision.added:
        decision.stop = "every claim decided, or no more seeds can decide it"
    return decision, reasons


def unit_seconds(runtime: Path) -> dict[str, float]:
    """Per trained unit id: the machine seconds its training took (from
    data/runtime/<slug>/): its wall over the units trained side by side with it, the
    share of the machine that a round's compute counts (stages.runtime)."""
    from reprolab.core import io

    path = runtime / "train.json"
    if not path.is_file():
        return {}
    out = {}
    for uid, t in io.read_json(path).get("units", {}).items():
        if isinstance(t, dict) and isinstance(t.get("train_seconds"), int | float):
            share = max(1.0, float(t.get("units_side_by_side", 1.0)))
            out[uid] = float(t["train_seconds"]) / share
    return out


def evaluate_seconds_per_unit(runtime: Path, n_units: int) -> float:
    from reprolab.core import io

    path = runtime / "evaluate.json"
    if not path.is_file() or n_units <= 0:
        return 0.0
    return float(io.read_json(path).get("evaluate_seconds", 0.0)) / n_units


def seconds_per_seed(units: list[Unit], seconds: dict[str, float], scope_: Scope) -> float:
    """The training seconds one more seed of ``scope_`` costs: the mean, over the seeds
    already run, of the seconds of the trained units in scope (0 when none is known)."""
    per_seed: dict[int, float] = {}
    for u in units:
        if u.seed is not None and scope_.matches(u) and u.id in seconds:
            per_seed[u.seed] = per_seed.get(u.seed, 0.0) + seconds[u.id]
    return sum(per_seed.values()) / len(per_seed) if per_seed else 0.0


def needs_minutes(needed_seeds: int | None, have: int, per_seed_seconds: float) -> float | None:
    if needed_seeds is None or per_seed_seconds <= 0:
        return None
    return max(0, needed_seeds - have) * per_seed_seconds / 60.0


def _rule_scope(rule: dict) -> Scope:
    return Scope(
        tuple(rule["variants"]),
        tuple(rule["tasks"]) if "tasks" in rule else None,
        tuple((k, tuple(v)) for k, v in rule["params"].items()) if "params" in rule else None,
    )


def new_units(rules: list[dict], units: list[Unit]) -> set[tuple]:
    """The units a round's rules add, each once however many rules ask for it: a
    (task, variant, params) of the units in a rule's scope at each of its seeds."""
    out = set()
    for rule in rules:
        sc = _rule_scope(rule)
        keys = {(u.task, u.variant, u.params) for u in units if sc.matches(u)}
        out |= {(*key, seed) for key in keys for seed in rule["seeds"]}
    return out


def round_minutes(rules: list[dict], units: list[Unit], seconds: dict[str, float]) -> float:
    """Training minutes the rules of a round would cost, from the units run so far: each
    new unit (:func:`new_units`) at the mean seconds of its (task, variant, params)
    over the seeds run."""
    by_key: dict[tuple, list[float]] = {}
    for u in units:
        if u.seed is not None and u.id in seconds:
            by_key.setdefault((u.task, u.variant, u.params), []).append(seconds[u.id])
    total = 0.0
    for *key, _seed in new_units(rules, units):
        known = by_key.get(tuple(key))
        total += sum(known) / len(known) if known else 0.0
    return total / 60.0


def fmt_minutes(minutes: float | None) -> str:
    if minutes is None or not math.isfinite(minutes):
        return "unknown"
    return f"{minutes:.0f} min" if minutes < 120 else f"{minutes / 60:.1f} h"
