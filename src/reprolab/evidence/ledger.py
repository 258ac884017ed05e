"""The preregistration ledger: what each claim *is*, recorded before its result counts.

A claim's definition is its statement, metric, check (with its bound and margin), paper
value and source, smallest effect, central flag, precision and "out of reach" note
(:meth:`reprolab.evidence.judging.claims.Claim.definition`), plus the paper-profile config of its
method (code defaults, params.yaml's paper section, the paper seeds of the first look
and the evidence plan; not the seeds later rounds add). When a claim first gets a
paper-profile result, the hash of its definition goes into
``docs/results/ledger/<slug>.jsonl`` with the commit and date (``registered``). A later
change to a definition that already has a result is an amendment: ``make paper``
refuses to run until it is given a reason (``--amend "why"``), which goes into the
ledger with the old and new values (``amended``), and the report marks the claim
"changed after results".

One JSON object per line:

- ``{"event": "config", "method", "config_hash", "config", "commit", "date", ...}``: the
  method's paper-profile config, recorded when it first appears or changes;
- ``{"event": "registered" | "amended", "method", "claim", "hash", "definition",
  "config_hash", "commit", "date", "reason", "changed": {field: {"old", "new"}}}``.

Entries backfilled from the git history carry ``"backfilled": true`` and the commit
whose results or claims they describe.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

LEDGER_DIR = Path("docs") / "results" / "ledger"


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def digest(obj: Any) -> str:
    return hashlib.sha256(canonical(obj).encode()).hexdigest()


def paper_config(raw: dict, slug: str) -> dict[str, Any]:
    """The method's resolved paper-profile config from a params.yaml mapping, as the
    ledger records it: seeds of the first look, the evidence plan, every other key;
    the seeds the rounds added are results, not the definition, and are left out."""
    from reprolab import config

    project = config.validate({**raw, "profile": "paper"})
    cfg = project.method(slug).model_dump(mode="json")
    cfg["evidence"] = {k: v for k, v in cfg["evidence"].items() if k != "added"}
    base = project.method(slug).evidence.base_seeds(project.seeds)
    return {"seeds": base, "method": cfg}


def claim_hash(definition: dict[str, Any], config_hash: str) -> str:
    return digest({"definition": definition, "config_hash": config_hash})


def path_for(root: Path, slug: str) -> Path:
    return root / LEDGER_DIR / f"{slug}.jsonl"


def read(root: Path, slug: str) -> list[dict[str, Any]]:
    path = path_for(root, slug)
    if not path.is_file():
        return []
    out = []
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{i}: not a JSON line ({exc})") from None
    return out


def append(root: Path, slug: str, entries: list[dict[str, Any]]) -> None:
    """Append ``entries`` (one line each); the file is rewritten atomically."""
    from reprolab.core import io

    if not entries:
        return
    path = path_for(root, slug)
    path.parent.mkdir(parents=True, exist_ok=True)
    old = path.read_text() if path.is_file() else ""
    text = old + "".join(canonical(e) + "\n" for e in entries)
    with io.atomic_path(path) as tmp:
        tmp.write_text(text)


def latest(entries: list[dict[str, Any]]) -> tuple[dict[str, dict], dict | None]:
    """The latest entry per claim (registered or amended) and the latest config entry."""
    claims: dict[str, dict] = {}
    config = None
    for e in entries:
        if e.get("event") == "config":
            config = e
        elif e.get("event") in ("registered", "amended"):
            claims[e["claim"]] = e
    return claims, config


@dataclass(frozen=True)
class Change:
    """A claim whose definition differs from its ledger entry (or has none)."""

    slug: str
    claim: str
    kind: str  # "new" (never registered) or "changed" (registered with other values)
    definition: dict[str, Any]
    config_hash: str
    changed: dict[str, dict[str, Any]]

    def describe(self) -> str:
        if self.kind == "new":
            return f"{self.slug}.{self.claim}: not in the ledger yet"
        fields = ", ".join(sorted(self.changed))
        return f"{self.slug}.{self.claim}: changed after results ({fields})"


def compare(root: Path, slug: str, raw_params: dict) -> tuple[list[Change], dict, str]:
    """The claims of ``slug`` whose current definition is not the ledger's latest, the
    current paper-profile config and its hash."""
    from reprolab import registry

    spec = registry.get(slug)
    cfg = paper_config(raw_params, slug)
    cfg_hash = digest(cfg)
    claims, last_config = latest(read(root, slug))
    old_config = (last_config or {}).get("config")
    changes = []
    for claim in spec.claims:
        definition = claim.definition()
        entry = claims.get(claim.id)
        if entry is None:
            changes.append(Change(slug, claim.id, "new", definition, cfg_hash, {}))
            continue
        if entry["hash"] == claim_hash(definition, cfg_hash):
            continue
        changed = {
            k: {"old": entry["definition"].get(k), "new": v}
            for k, v in definition.items()
            if entry["definition"].get(k) != v
        }
        if entry.get("config_hash") != cfg_hash:
            changed["config"] = {"old": _diff(old_config, cfg)[0], "new": _diff(old_config, cfg)[1]}
        changes.append(Change(slug, claim.id, "changed", definition, cfg_hash, changed))
    return changes, cfg, cfg_hash


def _diff(old: Any, new: Any, prefix: str = "") -> tuple[dict, dict]:
    """The keys of two nested mappings that differ, flattened (``method.epochs``)."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return ({prefix or "config": old}, {prefix or "config": new}) if old != new else ({}, {})
    a: dict = {}
    b: dict = {}
    for key in sorted(set(old) | set(new)):
        name = f"{prefix}.{key}" if prefix else str(key)
        if key not in old or key not in new:
            if old.get(key) != new.get(key):
                a[name], b[name] = old.get(key), new.get(key)
            continue
        da, db = _diff(old[key], new[key], name)
        a.update(da)
        b.update(db)
    return a, b


def record(
    root: Path,
    slug: str,
    changes: list[Change],
    cfg: dict,
    cfg_hash: str,
    commit: str,
    reason: str = "",
    date: str | None = None,
) -> list[dict]:
    """Ledger entries for ``changes`` (a new claim is registered; a changed one is an
    amendment with ``reason``), and a config entry when the config is new; appended.
    With none of these, a ``reason`` is recorded as a ``note`` (a decision that changed
    nothing, e.g. a setting searched for and not found)."""
    date = date or datetime.now(UTC).isoformat(timespec="seconds")
    _, last_config = latest(read(root, slug))
    entries: list[dict] = []
    if last_config is None or last_config.get("config_hash") != cfg_hash:
        entries.append(
            {
                "event": "config",
                "method": slug,
                "config_hash": cfg_hash,
                "config": cfg,
                "commit": commit,
                "date": date,
                **({"reason": reason} if reason and last_config is not None else {}),
            }
        )
    for change in changes:
        entry = {
            "event": "registered" if change.kind == "new" else "amended",
            "method": slug,
            "claim": change.claim,
            "hash": claim_hash(change.definition, change.config_hash),
            "definition": change.definition,
            "config_hash": change.config_hash,
            "commit": commit,
            "date": date,
        }
        if change.kind == "changed":
            entry["reason"] = reason
            entry["changed"] = change.changed
        entries.append(entry)
    if not entries and reason:
        # a decision that changed no definition or setting (a probe that chose nothing,
        # a setting searched for and not found): on the record all the same
        entries.append(
            {"event": "note", "method": slug, "reason": reason, "commit": commit, "date": date}
        )
    append(root, slug, entries)
    return entries


def amendments(root: Path, slug: str) -> dict[str, list[dict]]:
    """Per claim, its amendments (oldest first): what the report marks 'changed after
    results'."""
    out: dict[str, list[dict]] = {}
    for e in read(root, slug):
        if e.get("event") == "amended":
            out.setdefault(e["claim"], []).append(e)
    return out
