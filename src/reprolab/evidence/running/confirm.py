"""Confirmatory runs: registered and committed before their data, run exactly as
registered, never amended.

    python -m reprolab confirm register desk_reject   # append the registration to the ledger
    git add docs/results/ledger/desk_reject.jsonl && git commit -m "Register ..."
    make paper METHODS=desk_reject CONFIRM=1          # refuses unless the above holds
    python -m reprolab confirm status desk_reject     # the registrations and their runs
    python -m reprolab confirm status                 # every method's latest: run or not
    python -m reprolab confirm failed desk_reject --reason "..."  # a registered run that
                                                      # a defect stopped: on the record

Every verdict the sequential rounds give on seeds the method's settings were chosen with
is *exploratory*: settings, rules and definitions may have changed after results were
seen (the ledger records how). A *confirmatory* verdict comes from a run whose every
registered item was fixed and committed before its data existed. The registration, one
``{"event": "registration"}`` line in ``docs/results/ledger/<slug>.jsonl``, holds:

- for every claim of the method, its definition (statement, metric, check with its
  bound, the smallest effect that matters, which is also its equivalence margin, the
  replicate unit with its reason, the rule, central or not, out of reach or not);
- the method's paper-profile config (``ledger.paper_config``: every setting, the premise
  thresholds a config holds, the evidence plan and budget) and its hash;
- the code: the commit, a digest of every file of ``src/`` (which holds the analysis:
  the rules, the family rule, the sequential plan) but the methods' READMEs
  (:data:`NOT_FIXED`), and the git objects of ``params.yaml`` and ``dvc.yaml``;
- the seeds: a block of the plan's ``max_seeds`` seeds from 1000 up that no committed
  result of the method (pooled run, held-out block, replay, probe, earlier
  registration) has used.

``make paper ... CONFIRM=1`` (:func:`verify`) refuses to start unless the registration is
committed, the tree matches it (a clean ``src/``, ``params.yaml`` and ``dvc.yaml`` at the
registered trees, every claim's definition and the config as registered), its seeds are
still unused, and it has no result yet. The run then executes exactly the registration:
its seeds, its plan; a resumed run is the same run. Its results go to
``docs/results/<slug>/confirm-<id>/``, marked confirmatory in ``run.json`` and every
``claims.json`` entry. A registered item that changes afterwards voids it: the claim is
exploratory again, and a new registration (new seeds) is the only way back; both stay on
the record.

A registered run that a defect stops before it has results (a crash, a diverged model
that a stage cannot handle) is not rerun and not amended: ``confirm failed <slug>
--reason "..."`` appends ``{"event": "run_failed", "registration": <id>, "reason"}`` to
the ledger, ``make paper ... CONFIRM=1`` then refuses that registration, and ``confirm
status`` and the scoreboard show it beside whatever came after. The fix is an
exploratory amendment and a new registration (new seeds: the failed one's stay used).
"""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reprolab import registry
from reprolab.evidence import ledger
from reprolab.evidence.judging import entries

#: the first seed a confirmatory run may use (below it: the exploratory seeds)
FIRST_SEED = 1000
#: what a registration fixes in the tree besides the ledger
FIXED_PATHS = ("src", "params.yaml", "dvc.yaml")


class ConfirmError(RuntimeError):
    """A registration or a confirmatory run that cannot go ahead (the message says why
    and what to do)."""


def _git(root: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ConfirmError(f"git {' '.join(args)}: {proc.stderr.strip() or 'failed'}")
    return proc.stdout.strip()


#: what a registration does not fix inside :data:`FIXED_PATHS`: the methods' READMEs,
#: whose verdict blocks every run regenerates (prose and generated tables, not code), so
#: one run's results do not void the next registered run
NOT_FIXED = ("src/reprolab/methods/*/README.md",)


def _trees(root: Path, rev: str = "HEAD") -> dict[str, str]:
    """What a registration fixes: for ``src`` a digest of its files' blob ids at ``rev``
    but :data:`NOT_FIXED`; for the others their git object ids."""
    import fnmatch

    listing = _git(root, "ls-tree", "-r", rev, "--", "src").splitlines()
    code = [
        line
        for line in listing
        if not any(fnmatch.fnmatch(line.split("\t", 1)[-1], pat) for pat in NOT_FIXED)
    ]
    out = {"src": "files:" + ledger.digest(code)}
    out |= {p: _git(root, "rev-parse", f"{rev}:{p}") for p in FIXED_PATHS if p != "src"}
    return out


def _dirty(root: Path) -> str:
    excluded = [f":(exclude,glob){pat}" for pat in NOT_FIXED]
    return _git(root, "status", "--porcelain", "--", *FIXED_PATHS, *excluded)


def result_seeds(root: Path, slug: str) -> set[int]:
    """Every seed a committed result of ``slug`` used: its results folders' run.json and
    claims.json (pooled runs, held-out blocks, replays, confirmatory runs) and its
    probes."""
    out: set[int] = set()
    folder = root / "docs" / "results" / slug
    if not folder.is_dir():
        return out
    for path in folder.rglob("run.json"):
        out |= {int(s) for s in json.loads(path.read_text()).get("seeds", []) or []}
    for path in folder.rglob("claims.json"):
        for entry in entries.load(path):
            out |= set(entry.measured.seeds)
    for path in folder.glob("probes/*.json"):
        out |= {int(s) for s in json.loads(path.read_text()).get("seeds", []) or []}
    return out


def used_seeds(root: Path, slug: str) -> set[int]:
    """The seeds a new registration may not take: those of committed results, of
    earlier registrations, and the paper profile's own."""
    import yaml

    raw = yaml.safe_load((root / "params.yaml").read_text()) or {}
    paper = {int(s) for s in (raw.get("seeds") or {}).get("paper", [])}
    regs = {s for e in registrations(root, slug) for s in e["seeds"]}
    return result_seeds(root, slug) | regs | paper


def registrations(root: Path, slug: str) -> list[dict[str, Any]]:
    """The method's registrations in the ledger, oldest first."""
    return [e for e in ledger.read(root, slug) if e.get("event") == "registration"]


def failures(root: Path, slug: str) -> dict[str, dict[str, Any]]:
    """The method's registered runs recorded as failed (:func:`record_failure`), by
    registration id."""
    return {
        e["registration"]: e
        for e in ledger.read(root, slug)
        if e.get("event") == "run_failed" and e.get("registration")
    }


def record_failure(root: Path, slug: str, reason: str, date: str | None = None) -> dict[str, Any]:
    """Put on the record that the latest registration's run failed without results
    (``reason``: what stopped it), so that it is neither rerun nor forgotten; the entry."""
    entry = latest(root, slug)
    reason = " ".join(reason.split())
    if not reason:
        raise ConfirmError("--reason: say what stopped the run (the stage, the unit, the error)")
    if results_folder(root, slug, entry).exists():
        raise ConfirmError(
            f"{slug}: registration {entry['id']} has its result "
            f"({results_folder(root, slug, entry).relative_to(root)}): a run with results "
            "stands as it is; its verdicts say what it found"
        )
    if entry["id"] in failures(root, slug):
        raise ConfirmError(f"{slug}: the failure of registration {entry['id']} is on record")
    event = {
        "event": "run_failed",
        "method": slug,
        "registration": entry["id"],
        "date": date or datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": _git(root, "rev-parse", "HEAD"),
        "reason": reason,
    }
    ledger.append(root, slug, [event])
    return event


def _definitions(slug: str) -> dict[str, dict[str, Any]]:
    out = {}
    for claim in registry.get(slug).claims:
        d = claim.definition()
        d["equivalence_margin"] = claim.effect  # TOST's margin: the smallest effect
        out[claim.id] = d
    return out


def _config(root: Path, slug: str) -> tuple[dict[str, Any], str]:
    import yaml

    raw = yaml.safe_load((root / "params.yaml").read_text())
    cfg = ledger.paper_config(raw, slug)
    method = cfg["method"]  # the registration's own seeds replace the first look's
    return method, ledger.digest(method)


def plan_of(method_cfg: dict[str, Any], n_seeds: int) -> dict[str, Any]:
    """The sequential plan a config's evidence settings give for ``n_seeds`` seeds."""
    ev = method_cfg["evidence"]
    first = ev.get("first") or n_seeds
    return {
        "first": first,
        "step": ev["step"],
        "max_seeds": max(ev.get("max_seeds") or first, first),
        "alpha": ev["alpha"],
        "spending": ev["spending"],
        "budget_minutes": ev["budget_minutes"],
    }


def register(root: Path, slug: str, date: str | None = None) -> dict[str, Any]:
    """Append a registration of ``slug``'s confirmatory run to its ledger; the entry."""
    registry.check_slug(slug)
    dirty = _dirty(root)
    if dirty:
        raise ConfirmError(
            "a registration fixes the code at a commit: commit (or undo) these first:\n" + dirty
        )
    method, cfg_hash = _config(root, slug)
    # the plan's looks: the paper profile's first look and its steps up to max_seeds
    import yaml

    paper_seeds = (yaml.safe_load((root / "params.yaml").read_text())["seeds"] or {})["paper"]
    plan = plan_of(method, len(paper_seeds))
    used = used_seeds(root, slug)
    start = FIRST_SEED
    while any(s in used for s in range(start, start + plan["max_seeds"])):
        start += 1
    seeds = list(range(start, start + plan["max_seeds"]))
    date = date or datetime.now(UTC).isoformat(timespec="seconds")
    commit = _git(root, "rev-parse", "HEAD")
    definitions = _definitions(slug)
    entry = {
        "event": "registration",
        "method": slug,
        "id": f"{date[:10]}-{ledger.digest([commit, seeds, definitions])[:8]}",
        "date": date,
        "commit": commit,
        "trees": _trees(root),
        "seeds": seeds,
        "plan": plan,
        "config": method,
        "config_hash": cfg_hash,
        "claims": definitions,
        "central": next((c.id for c in registry.get(slug).claims if c.central), None),
    }
    ledger.append(root, slug, [entry])
    return entry


def latest(root: Path, slug: str) -> dict[str, Any]:
    found = registrations(root, slug)
    if not found:
        raise ConfirmError(
            f"{slug}: no registration in the ledger: python -m reprolab confirm register {slug}"
        )
    return found[-1]


def results_folder(root: Path, slug: str, entry: dict[str, Any]) -> Path:
    return root / "docs" / "results" / slug / f"confirm-{entry['id']}"


def verify(root: Path, slug: str, entry: dict[str, Any]) -> None:
    """Refuse a confirmatory run that is not exactly ``entry``'s registration (the
    message names what differs and what to do)."""
    failed = failures(root, slug).get(entry["id"])
    if failed:
        raise ConfirmError(
            f"{slug}: registration {entry['id']} failed ({failed['reason']}): a failed "
            "registered run is not rerun; fix the defect (an exploratory amendment) and "
            "register again (new seeds)"
        )
    path = ledger.path_for(root, slug)
    rel = path.relative_to(root).as_posix()
    committed = subprocess.run(
        ["git", "show", f"HEAD:{rel}"], cwd=root, capture_output=True, text=True
    ).stdout
    if ledger.canonical(entry) not in committed.splitlines():
        raise ConfirmError(
            f"{slug}: registration {entry['id']} is not committed: commit {rel} first, then run "
            "(the registration must precede its data in git)"
        )
    dirty = _dirty(root)
    trees = _trees(root)
    if dirty or trees != entry["trees"]:
        what = dirty or ", ".join(p for p in FIXED_PATHS if trees[p] != entry["trees"][p])
        raise ConfirmError(
            f"{slug}: the tree differs from registration {entry['id']} ({what}): a changed "
            "registered item voids it; undo the change, or register again (new seeds)"
        )
    now = _definitions(slug)
    if now != entry["claims"]:
        differ = sorted(
            set(now) ^ set(entry["claims"])
            | {c for c in now if c in entry["claims"] and now[c] != entry["claims"][c]}
        )
        raise ConfirmError(
            f"{slug}: claims changed since registration {entry['id']}: {', '.join(differ)}"
        )
    method, cfg_hash = _config(root, slug)
    if cfg_hash != entry["config_hash"]:
        raise ConfirmError(
            f"{slug}: the paper-profile config changed since registration {entry['id']}"
        )
    if results_folder(root, slug, entry).exists():
        raise ConfirmError(
            f"{slug}: registration {entry['id']} has its result already "
            f"({results_folder(root, slug, entry).relative_to(root)}): a registered run is "
            "run once; register again (new seeds) for another"
        )
    clash = sorted(set(entry["seeds"]) & result_seeds(root, slug))
    if clash:
        raise ConfirmError(
            f"{slug}: seeds {clash} of registration {entry['id']} were used by a committed "
            "result: register again (new seeds)"
        )


def why_not_counted(root: Path, slug: str, folder: Path) -> str:
    """Why the results in ``folder`` (a ``confirm-<id>/``) may not count as confirmatory,
    '' when they may: their run names a registration that is in the ledger, was committed
    at the commit the run started from (git order: the registration before its data),
    is unchanged since, and whose seeds the run used, on a clean tree."""
    try:
        run = json.loads((folder / "run.json").read_text())
    except (OSError, ValueError) as exc:
        return f"its run.json cannot be read ({exc})"
    rid = run.get("registration")
    if run.get("kind") != "confirmatory" or not rid:
        return "its run.json names no registration"
    if folder.name != f"confirm-{rid}":
        return f"the folder is not that of its registration {rid}"
    now = next((e for e in registrations(root, slug) if e.get("id") == rid), None)
    if now is None:
        return f"registration {rid} is not in the ledger"
    rel = ledger.path_for(root, slug).relative_to(root).as_posix()
    commit = str(run.get("commit") or "")
    proc = subprocess.run(
        ["git", "show", f"{commit}:{rel}"], cwd=root, capture_output=True, text=True
    )
    if not commit or proc.returncode != 0:
        return f"the commit it ran from ({commit[:8] or 'none'}) is not in this repository"
    then = [
        json.loads(line)
        for line in proc.stdout.splitlines()
        if line.strip() and '"registration"' in line
    ]
    then_entry = next((e for e in then if e.get("id") == rid), None)
    if then_entry is None:
        return f"registration {rid} was not committed when the run started ({commit[:8]})"
    if ledger.canonical(then_entry) != ledger.canonical(now):
        return f"registration {rid} changed in the ledger after its run"
    if run.get("dirty"):
        return "the run started from a tree with uncommitted changes"
    if not set(run.get("seeds") or []) <= set(now.get("seeds") or []):
        return f"the run used seeds registration {rid} does not hold"
    return ""


def params_for(raw: dict[str, Any], slug: str, entry: dict[str, Any]) -> dict[str, Any]:
    """params.yaml for the registered run: the paper profile's seeds are the registered
    ones (the first look takes the plan's first of them, later looks the next)."""
    return {**raw, "seeds": {**raw["seeds"], "paper": list(entry["seeds"])}}


def status(root: Path, slug: str) -> str:
    lines = []
    failed = failures(root, slug)
    for entry in registrations(root, slug):
        folder = results_folder(root, slug, entry)
        ran = "run: " + folder.relative_to(root).as_posix() if folder.exists() else "not run yet"
        if entry["id"] in failed:
            ran = f"failed: {failed[entry['id']]['reason']}"
        lines.append(
            f"{entry['id']}: seeds {entry['seeds'][0]}-{entry['seeds'][-1]}, plan "
            f"{entry['plan']['first']}+{entry['plan']['step']}..{entry['plan']['max_seeds']}, "
            f"commit {entry['commit'][:8]}; {ran}"
        )
    return "\n".join(lines) or f"{slug}: no registration"


def queue(root: Path) -> str:
    """Every method's latest registration in one table: run or not yet, what a
    confirmatory run of the suite still needs (``confirm status`` without a slug)."""
    rows, waiting = [], 0
    for slug in registry.slugs():
        entries = registrations(root, slug)
        if not entries:
            rows.append(f"{slug:<16} no registration")
            continue
        entry = entries[-1]
        ran = results_folder(root, slug, entry).exists()
        failed = entry["id"] in failures(root, slug)
        waiting += not (ran or failed)
        rows.append(
            f"{slug:<16} {entry['id']}  seeds {entry['seeds'][0]}-{entry['seeds'][-1]}  "
            f"commit {entry['commit'][:8]}  "
            + ("run" if ran else "FAILED: register again" if failed else "NOT RUN YET")
            + (f"  ({len(entries)} registrations)" if len(entries) > 1 else "")
            + ("" if ran or failed else f"  {_registered_in(root, slug, entry)}")
        )
    return "\n".join([*rows, f"{waiting} registered run(s) waiting"])


def _registered_in(root: Path, slug: str, entry: dict[str, Any]) -> str:
    """Where a waiting run starts from: the commit that added its registration to the
    ledger (the registered code commit itself predates the ledger line, so a checkout
    of it has no registration to run)."""
    rel = ledger.path_for(root, slug).relative_to(root).as_posix()
    proc = subprocess.run(
        ["git", "log", "--reverse", "--format=%h", "-S", entry["id"], "--", rel],
        cwd=root,
        capture_output=True,
        text=True,
    )
    first = proc.stdout.split()
    return f"registered in {first[0]}" if first else "registration not committed"


def main(argv: list[str], root: Path) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="reprolab confirm", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    for name, text in (
        ("register", "append a registration of the method's confirmatory run to its ledger"),
        (
            "status",
            "list the method's registrations and whether each has run (no slug: every "
            "method's latest)",
        ),
        ("check", "exit 1 unless `make paper ... CONFIRM=1` would accept the latest one"),
        (
            "failed",
            "record that the latest registration's run failed without results (--reason)",
        ),
    ):
        p = sub.add_parser(name, help=text)
        if name == "status":  # without a slug: every method's latest registration
            p.add_argument("slug", nargs="?", choices=registry.slugs(), metavar="slug")
        else:
            p.add_argument("slug", choices=registry.slugs(), metavar="slug", help="a method")
        if name == "failed":
            p.add_argument("--reason", required=True, help="what stopped it")
    args = parser.parse_args(argv)
    try:
        if args.what == "register":
            entry = register(root, args.slug)
            rel = ledger.path_for(root, args.slug).relative_to(root)
            print(
                f"{args.slug}: registered {entry['id']}: seeds {entry['seeds'][0]}-"
                f"{entry['seeds'][-1]}, {len(entry['claims'])} claims, commit "
                f"{entry['commit'][:8]}\nnext: git add {rel} && git commit -m 'Register "
                f"{args.slug} {entry['id']}', then make paper METHODS={args.slug} CONFIRM=1"
            )
        elif args.what == "status":
            print(status(root, args.slug) if args.slug else queue(root))
        elif args.what == "failed":
            event = record_failure(root, args.slug, args.reason)
            rel = ledger.path_for(root, args.slug).relative_to(root)
            print(
                f"{args.slug}: the run of registration {event['registration']} is on record as "
                f"failed\nnext: git add {rel} && git commit, fix the defect, then "
                f"python -m reprolab confirm register {args.slug}"
            )
        else:
            entry = latest(root, args.slug)
            verify(root, args.slug, entry)
            print(f"{args.slug}: registration {entry['id']} can run")
    except ConfirmError as exc:
        import sys

        print(f"error: {exc}", file=sys.stderr)
        return 2 if args.what != "check" else 1
    return 0
