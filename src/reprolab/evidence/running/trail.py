"""The trail: every earlier verdict of each method's central claim, from git and the ledger.

The scoreboard's "changed after results" counts the ledger amendments dated after the
*current* results; a claim amended after its first result and rerun since reads "no"
there. The trail keeps the whole story: every commit that changed
``docs/results/<slug>/claims.json`` (or, before each method had its folder,
``docs/results/<slug>_paper_claims.json``), with the central claim's headline verdict
and interval at that commit, consecutive commits with the same verdict and interval
collapsed into one step, and what the ledger (``docs/results/ledger/<slug>.jsonl``)
records between one step and the next: amendments of the claim, and changes of its
method's paper-profile config.

``python -m reprolab trail`` writes ``docs/results/trail.json`` (committed, so that the
scoreboard renders without the git history: CI may clone shallowly); ``--check`` exits
1 when it is out of date. A commit that changes results cannot contain its own trail
(its hash is not known before it is made): commit the results, then the trail.
"""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path("docs") / "results"
TRAIL_PATH = RESULTS / "trail.json"
#: a ledger reason as a change line quotes it, and as a scoreboard cell does
REASON_CHARS = 100
CELL_REASON_CHARS = 40
#: the measured fields each step keeps
MEASURED = ("value", "ci_low", "ci_high", "n")


# --------------------------------------------------------------------------- git


def _git(root: Path, *args: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", "-c", "core.quotePath=false", *args],
        cwd=root,
        input=stdin,
        capture_output=True,
        check=True,
    ).stdout


def paths(slug: str) -> list[str]:
    """Where a method's committed results have lived, the current place first: the
    results were ``docs/results/<slug>_paper_claims.json`` before each method had its
    folder (git does not see every one of those moves as a rename, so the old name is
    asked for by name rather than followed)."""
    return [
        (RESULTS / slug / "claims.json").as_posix(),
        f"{RESULTS.as_posix()}/{slug}_paper_claims.json",
    ]


def _commits(root: Path, names: list[str]) -> list[tuple[str, str, str]]:
    """(sha, committer date, subject) of every commit that changed one of ``names``,
    oldest first."""
    out = _git(root, "log", "--format=%x00%H%x09%cI%x09%s", "--", *names)
    found = []
    for chunk in out.decode("utf-8", "replace").split("\x00")[1:]:
        sha, date, subject = (chunk.strip("\n").split("\t", 2) + ["", ""])[:3]
        found.append((sha, date, subject))
    return found[::-1]


def _blobs(root: Path, specs: list[str]) -> list[bytes | None]:
    """The contents of ``<sha>:<path>`` for every spec (None where missing), read by one
    ``git cat-file --batch``."""
    if not specs:
        return []
    raw = _git(root, "cat-file", "--batch", stdin="".join(s + "\n" for s in specs).encode())
    out: list[bytes | None] = []
    pos = 0
    for _ in specs:
        end = raw.index(b"\n", pos)
        header = raw[pos:end].split()
        pos = end + 1
        if len(header) < 3 or header[-1] == b"missing":
            out.append(None)
            continue
        size = int(header[2])
        out.append(raw[pos : pos + size])
        pos += size + 1  # the content is followed by a newline
    return out


def _utc(date: str) -> str:
    """An ISO date as UTC, to the second (git and the ledger may write other offsets)."""
    parsed = datetime.fromisoformat(date)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).isoformat(timespec="seconds")


# --------------------------------------------------------------------------- history


def _headline(claims: Any, claim_id: str) -> dict | None:
    """The headline result of ``claim_id`` in a claims.json: the entry marked so; in a
    file written before the field existed, the fp32 one, or the claim's only result
    (a claim then run at one scheme only)."""
    from reprolab.evidence.judging.claims import is_headline

    if not isinstance(claims, list):
        return None
    mine = [c for c in claims if isinstance(c, dict) and c.get("id") == claim_id]
    head = next((c for c in mine if is_headline(c)), None)
    if head is None and len(mine) == 1 and "headline" not in mine[0]:
        head = mine[0]
    return head


def _same(a: dict, b: dict) -> bool:
    """Whether two steps have the same verdict and interval (floats to 10 digits)."""

    def key(s: dict) -> tuple:
        return (
            s["verdict"],
            *(
                float(f"{s[k]:.10g}") if isinstance(s[k], float) else s[k]
                for k in ("value", "ci_low", "ci_high", "n")
            ),
        )

    return key(a) == key(b)


def history(root: Path, slug: str, claim_id: str) -> list[dict]:
    """The headline verdict of ``claim_id`` at every commit that changed
    ``docs/results/<slug>/claims.json`` (or its earlier name, :func:`paths`), oldest
    first: ``{date, commit, subject, verdict, value, ci_low, ci_high, n}``. Consecutive
    commits with the same verdict and interval are one step (the first); commits where
    the claim has no headline result are left out. One ``git log`` and one ``git
    cat-file --batch``."""
    names = paths(slug)
    commits = _commits(root, names)
    # every commit's file at each name, read at once; the current name where it exists
    blobs = iter(_blobs(root, [f"{sha}:{name}" for sha, _, _ in commits for name in names]))
    steps: list[dict] = []
    for sha, date, subject in commits:
        blob = next((b for b in [next(blobs) for _ in names] if b is not None), None)
        if blob is None:  # deleted there
            continue
        try:
            head = _headline(json.loads(blob), claim_id)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if head is None or "verdict" not in head:
            continue
        measured = head.get("measured") or {}
        step = {
            "date": _utc(date),
            "commit": sha[:7],
            "subject": subject,
            "verdict": head["verdict"],
            **{k: measured.get(k) for k in MEASURED},
        }
        if steps and _same(steps[-1], step):
            continue
        steps.append(step)
    return steps


# --------------------------------------------------------------------------- ledger


def _shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut at a word boundary to at most ``limit`` characters."""
    text = " ".join(str(text).split()).replace("|", "/")
    if len(text) <= limit:
        return text
    cut = text[: limit - 3]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:(") + "..."


def _changes(
    entries: list[dict], claim_id: str, since: str | None, until: str | None
) -> list[dict]:
    """The changes of ``claim_id`` (its amendments) or of its method's config (a config
    entry after the first) dated in (``since``, ``until``], one per ledger record (a
    config change and the claim's amendment it caused, same date and commit, are one):
    ``{date, fields, reason, amended}``, oldest first. A registration of the claim
    (new, or under this id again) is listed too, as the field "registered"."""
    from reprolab.evidence.ledger import _diff

    since = _utc(since) if since else None
    until = _utc(until) if until else None
    grouped: dict[tuple[str, str], dict] = {}
    previous_config = None
    for e in entries:
        event = e.get("event")
        is_config = event == "config"
        old_config = previous_config
        if is_config:
            previous_config = e.get("config")
            if old_config is None:
                continue  # the method's first config: its registration, not a change
        elif e.get("claim") != claim_id or event not in ("registered", "amended", "registration"):
            continue
        if not e.get("date"):
            continue
        date = _utc(e["date"])
        if (since and date <= since) or (until and date > until):
            continue
        change = grouped.setdefault(
            (date, e.get("commit", "")),
            {"date": date, "fields": [], "config": [], "reason": "", "amended": False},
        )
        if is_config:
            change["config"] = sorted(_diff(old_config, e.get("config"))[0])
        elif event == "amended":
            change["amended"] = True
            change["fields"] += [f for f in sorted(e.get("changed") or {}) if f != "config"]
            if "config" in (e.get("changed") or {}):
                change["config"] = change["config"] or ["config"]
        else:
            change["fields"].append("registered")
        change["reason"] = change["reason"] or str(e.get("reason") or "")
    return sorted(grouped.values(), key=lambda c: c["date"])


def _describe(change: dict, reason_chars: int = REASON_CHARS) -> str:
    fields = list(dict.fromkeys(change["fields"]))
    if change["config"]:
        named = [k for k in change["config"] if k != "config"]
        shown = ", ".join(named[:3]) + (f", +{len(named) - 3}" if len(named) > 3 else "")
        fields.append(f"config ({shown})" if named else "config")
    text = f"{change['date'][:10]}: {', '.join(fields) or 'amended'}"
    if change["reason"]:
        text += f" (reason: {_shorten(change['reason'], reason_chars)})"
    return text


def changes_between(
    root: Path, slug: str, claim_id: str, since_date: str | None, until_date: str | None
) -> list[str]:
    """What the ledger records for ``claim_id`` or its method's config after
    ``since_date`` up to and including ``until_date`` (None: open), oldest first, as
    short lines: ``"2026-12-05: effect, config (method.epochs) (reason: ...)"``."""
    from reprolab.evidence import ledger

    return [
        _describe(c) for c in _changes(ledger.read(root, slug), claim_id, since_date, until_date)
    ]


# --------------------------------------------------------------------------- the trail


def entry(root: Path, slug: str, claim_id: str) -> dict:
    """The trail of one claim: its steps, each with the ledger's changes since the step
    before, and how many changes (amendments of the claim, config changes; one per
    ledger record) came after its first result."""
    from reprolab.evidence import ledger

    entries = ledger.read(root, slug)
    steps = history(root, slug, claim_id)
    for i, step in enumerate(steps):
        before = _changes(entries, claim_id, steps[i - 1]["date"], step["date"]) if i else []
        step["changed_before"] = [_describe(c) for c in before]
        step["reasons"] = [_gist(c["reason"]) for c in before]
    after = _changes(entries, claim_id, steps[0]["date"], None) if steps else []
    return {
        "claim": claim_id,
        "steps": steps,
        "amendments_since_first_result": sum(1 for c in after if c["amended"] or c["config"]),
    }


def build(root: Path) -> dict:
    """The trail of every registered method's central claim, by slug."""
    from reprolab import registry

    out = {}
    for slug in registry.slugs():
        central = next(c for c in registry.get(slug).claims if c.central)
        out[slug] = entry(root, slug, central.id)
    return out


def text(trail: dict) -> str:
    """The trail as ``docs/results/trail.json`` holds it (sorted keys, indent 2)."""
    return json.dumps(trail, indent=2, sort_keys=True) + "\n"


def write(root: Path) -> Path:
    from reprolab.core import io

    path = root / TRAIL_PATH
    io.write_text(path, text(build(root)))
    return path


def load(root: Path) -> dict:
    """The committed trail ({} when there is none)."""
    path = root / TRAIL_PATH
    return json.loads(path.read_text()) if path.is_file() else {}


# --------------------------------------------------------------------------- rendering


def _verdict(verdict: str) -> str:
    from reprolab.evidence.judging.claims import VERDICT_TEXT

    if verdict == "did_not_replicate":
        return "did not replicate"
    return VERDICT_TEXT.get(verdict, str(verdict).replace("_", " "))


def _gist(reason: str, limit: int = CELL_REASON_CHARS) -> str:
    """A reason's gist for a cell: its first clause (up to ": ", " (", "; " or ". ")
    when that says something (12 characters or more), else its start cut at a word."""
    reason = " ".join(str(reason).split())
    cuts = [i for i in (reason.find(s) for s in (": ", " (", "; ", ". ")) if i >= 12]
    if cuts and min(cuts) <= limit:
        return _shorten(reason[: min(cuts)], limit)
    return _shorten(reason, limit)


def cell(entry: dict, current_verdict: str | None = None) -> str:
    """One line for a scoreboard cell: each verdict the claim had, in order, with the
    date (MM-DD) it first had it and the gist of the ledger's change just before (the
    last one, cut to ~40 characters; "k changes" when there were more), reruns that kept
    the verdict counted; ending with ``current_verdict`` (appended when it differs from
    the last step, e.g. a held-out block that did not replicate).

    ``"inconclusive (12-03) -> reproduced (12-05: Sequential replication; 2 changes, 1
    rerun to 12-07)"``"""
    steps = entry.get("steps", [])
    runs: list[list[dict]] = []
    for step in steps:
        if runs and runs[-1][0]["verdict"] == step["verdict"]:
            runs[-1].append(step)
        else:
            runs.append([step])
    parts = []
    for i, run in enumerate(runs):
        first = run[0]
        note = first["date"][5:10]
        changes = first.get("changed_before", [])
        reasons = [r for r in first.get("reasons", []) if r]
        if i and (reasons or changes):
            note += f": {reasons[-1]}" if reasons else ": amended"
            if len(changes) > 1:
                note += f"; {len(changes)} changes"
        if len(run) > 1:
            sep = ", " if note == first["date"][5:10] else "; "
            reruns = len(run) - 1
            note += f"{sep}{reruns} rerun{'s' if reruns > 1 else ''} to {run[-1]['date'][5:10]}"
        parts.append(f"{_verdict(first['verdict'])} ({note})")
    if current_verdict and (not steps or steps[-1]["verdict"] != current_verdict):
        parts.append(f"{_verdict(current_verdict)} (now)")
    return " -> ".join(parts) or "no results in the history"


def _number(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.4g}"
    return "?" if x is None else str(x)


def details(entry: dict) -> list[str]:
    """One full line per step (for a method README): date, commit, verdict, value
    [interval], n, the commit's subject and the ledger's changes before it."""
    lines = []
    for step in entry.get("steps", []):
        line = (
            f"{step['date'][:10]} `{step['commit']}`: **{_verdict(step['verdict'])}**, "
            f"{_number(step.get('value'))} [{_number(step.get('ci_low'))}, "
            f"{_number(step.get('ci_high'))}], n = {_number(step.get('n'))} "
            f"({_shorten(step.get('subject', ''), 100)})"
        )
        if step.get("changed_before"):
            line += "; changed before it: " + "; ".join(step["changed_before"])
        lines.append(line)
    return lines


def main(argv: list[str], root: Path) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="reprolab trail", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check", action="store_true", help=f"exit 1 when {TRAIL_PATH} is out of date"
    )
    args = parser.parse_args(argv)
    if args.check:
        shallow = _git(root, "rev-parse", "--is-shallow-repository").decode().strip()
        if shallow == "true":
            print(f"{TRAIL_PATH}: not checked (a shallow clone has not the history it needs)")
            return 0
        path = root / TRAIL_PATH
        if not path.is_file() or path.read_text() != text(build(root)):
            print(f"{TRAIL_PATH}: OUT OF DATE (run: python -m reprolab trail)")
            return 1
        print(f"{TRAIL_PATH}: up to date")
        return 0
    path = write(root)
    trail = load(root)
    steps = sum(len(e["steps"]) for e in trail.values())
    print(f"{path.relative_to(root)}: {len(trail)} methods, {steps} steps")
    return 0
