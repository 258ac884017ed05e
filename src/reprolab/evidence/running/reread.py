"""Re-read committed results under the current analysis, from their committed metrics.

    python -m reprolab reread [slug ...]        # rewrite docs/results/<slug>/claims.json
    python -m reprolab reread --check           # exit 1 when a claims.json would change

No compute: each ``docs/results/<slug>/claims.json`` (and each held-out block's,
``seeds-*/``) is evaluated again from the metrics table beside it, claim by claim on the
seeds its verdict was read on and at the look of the sequential plan it recorded, with the
claim's current definition (its replicate unit, rule, size reading) and the method's
claims as one family (``judging.claims.FAMILY_RULE``). What changes is the analysis, never
the data. Each rewritten entry keeps the verdict it had on file as ``verdict_on_file``
(the first re-read's, so the trail goes back to the run), and the claims report beside it
(``claims.md``/``claims.html``, the run's own view) gets a note that the verdicts were
re-read.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pandas as pd

from reprolab import registry
from reprolab.contract import EvidenceConfig
from reprolab.evidence.judging import entries
from reprolab.evidence.judging.claims import adjust_family
from reprolab.evidence.judging.sequential import Plan

NOTE_MD = (
    "> **Verdicts re-read** under the current analysis (the seed as the replicate, the "
    "claim's rule, the size reading, the method's claims as one family): `claims.json` "
    "beside this report and the [scoreboard](../README.md) hold the verdicts that count; "
    "the tables below are the run's own view.\n\n"
)
NOTE_HTML = (
    '<p class="reread"><b>Verdicts re-read</b> under the current analysis (the seed as the '
    "replicate, the claim's rule, the size reading, the method's claims as one family): "
    "claims.json beside this report and the scoreboard hold the verdicts that count; the "
    "tables below are the run's own view.</p>\n"
)


class RereadError(ValueError):
    """A results folder that cannot be re-read (the message names the file)."""


def _plan(measured: dict[str, Any], evidence: EvidenceConfig) -> Plan | None:
    """The sequential plan a result was read under, from the look it recorded."""
    seq = measured.get("sequential")
    if not seq:
        return None
    looks = list(seq["looks"])
    planned = [s for s in looks if s < seq["max_seeds"]]
    step = planned[1] - planned[0] if len(planned) > 1 else evidence.step
    return Plan(
        first=looks[0],
        step=step,
        max_seeds=int(seq["max_seeds"]),
        alpha=float(seq["alpha"]),
        spending=str(seq["rule"]).rsplit(", ", 1)[-1].removesuffix(" spending"),
    )


def folders(results: Path, slug: str) -> list[Path]:
    """A method's results folder, its held-out blocks and its replay."""
    top = results / slug
    blocks = sorted(p for p in top.glob("seeds-*") if p.is_dir())
    return [top, *blocks, *(p for p in (top / "replay",) if p.is_dir())]


def reread_folder(folder: Path, slug: str) -> list[dict[str, Any]]:
    """``folder``'s claims.json evaluated again from its metrics table."""
    from reprolab.evidence.running.compare import metrics_file

    claims_file, table_file = folder / "claims.json", metrics_file(folder)
    try:
        on_file = entries.load(claims_file)
        table = pd.read_csv(table_file)
    except (OSError, ValueError, EOFError) as exc:
        raise RereadError(
            f"{folder}: cannot read claims.json or the metrics table ({exc})"
        ) from exc
    table["seed"] = table["seed"].astype("Int64")
    run_file = folder / "run.json"
    params = json.loads(run_file.read_text()).get("params", {}) if run_file.is_file() else {}
    evidence = EvidenceConfig.model_validate((params.get("paper") or {}).get("evidence") or {})
    defined = {c.id: c for c in registry.get(slug).claims}
    results, inputs, plan = [], {}, None
    for entry in on_file:
        claim = defined.get(entry.id)
        if claim is None:  # a claim since removed: kept as it was
            results.append(entry.as_dict())
            continue
        rows = table
        if entry.measured.seeds:
            rows = table[table.seed.isna() | table.seed.isin(entry.measured.seeds)]
        here = _plan(entry.measured.raw, evidence)
        plan = plan or here
        inputs[claim.id] = (claim, rows, here)
        result = claim.evaluate(rows, entry.precision, entry.profile, here)
        result["verdict_on_file"] = entry.verdict_on_file or entry.verdict
        if "evidence" in entry.raw:  # what the rounds recorded beside the verdict
            result["evidence"] = entry.raw["evidence"]
        results.append(result)

    def again(result: dict[str, Any], alpha: float) -> dict[str, Any]:
        claim, rows, here = inputs[result["id"]]
        at = dataclasses.replace(here, alpha=alpha) if here is not None else None
        if at is None:  # a fixed-n result: the family's level as a one-look plan
            seeds = len(result["measured"].get("seeds") or []) or 1
            at = Plan(first=seeds, step=1, max_seeds=seeds, alpha=alpha)
        out = claim.evaluate(rows, result["precision"], result["profile"], at)
        out["verdict_on_file"] = result["verdict_on_file"]
        if "evidence" in result:
            out["evidence"] = result["evidence"]
        return out

    family = [r for r in results if r.get("id") in inputs]
    alpha = plan.alpha if plan is not None else 0.05
    adjusted = iter(adjust_family(family, again, alpha))
    return [next(adjusted) if r.get("id") in inputs else r for r in results]


def write(folder: Path, results: list[dict[str, Any]]) -> bool:
    """Write ``results`` as ``folder``'s claims.json and mark its report; True when the
    file changed."""
    from reprolab.core import io

    path = folder / "claims.json"
    entries.parse(results, str(path))  # what is written is a claims file (clear error if not)
    old = path.read_text()
    io.write_json(path, results)
    changed = path.read_text() != old
    for name, note in (("claims.md", NOTE_MD), ("claims.html", NOTE_HTML)):
        report = folder / name
        if report.is_file():
            text = report.read_text()
            if note.strip() not in text:
                if name.endswith(".md"):
                    head, _, rest = text.partition("\n")
                    text = f"{head}\n\n{note}{rest.lstrip()}"
                else:
                    text = text.replace("<body>", "<body>\n" + note, 1)
                report.write_text(text)
    return changed


def main(argv: list[str], root: Path) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="reprolab reread", description=__doc__.split("\n\n")[0])
    parser.add_argument("slugs", nargs="*", help="methods to re-read (default: every one)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a file would change")
    args = parser.parse_args(argv)
    results = root / "docs" / "results"
    slugs = args.slugs or [s for s in registry.slugs() if (results / s / "claims.json").is_file()]
    stale = 0
    for slug in slugs:
        for folder in folders(results, slug):
            if not (folder / "claims.json").is_file():
                continue
            new = reread_folder(folder, slug)
            old = json.loads((folder / "claims.json").read_text())
            differ = [
                f"{o['id']}@{o['precision']}: {o['verdict']} -> {n['verdict']}"
                for o, n in zip(old, new, strict=True)
                if o["verdict"] != n["verdict"]
            ]
            rel = folder.relative_to(root)
            if args.check:
                from reprolab.core.io import json_text

                if json_text(new) != (folder / "claims.json").read_text():
                    stale += 1
                    print(f"{rel}: OUT OF DATE ({len(differ)} verdicts differ)")
                continue
            write(folder, new)
            print(f"{rel}: {len(new)} results, {len(differ)} verdicts changed")
            for line in differ:
                print(f"  {line}")
    return 1 if stale else 0
