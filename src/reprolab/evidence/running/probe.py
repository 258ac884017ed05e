"""Training-signal probes: how a candidate paper-profile setting trains, without its
results.

    make probe METHOD=grokformer SET="epochs=2000 patience=200" NAME=reference-regime

A setting is chosen blind: from the paper's regime and from training signals (loss,
convergence, wall time), never from the compared variants' validation or test metrics
nor a claim's outcome, since a setting picked because it moves the compared quantity
decides the claim before it is tested. A probe shows exactly those signals and nothing
else: it copies the project (``reprolab.ops.scratch``) at ``profile: paper`` with the
method's paper section plus the ``SET`` overrides, on probe seeds that no paper run
uses (default 100), and runs ``dvc repro`` up to ``train@<slug>`` only. Quantize and
evaluate never run, so no test-set metric and no verdict exists to look at.

From the trained checkpoints' histories it reads an allow-list of training signals
(:data:`HISTORY_KEYS`, shown as :data:`COLUMNS`), per variant: the units, the epochs (or
steps) run, how many stopped early (early stopping watches the validation loss: a probe
says *that* and *when* a unit stopped, never the value), the training loss half-way
through the run and at its end (whether it stopped falling), the last training accuracy
and the seconds per unit; and the method's own signals (``TrainedUnit.signals``:
quantities of the weights or the training data, premise checks on calibration data)
except any named like a validation or test quantity (:func:`is_held_out`). Every other
history key, the validation loss and accuracy, test keys and the train-validation gap
among them, is never read: not printed, not stored, not returned; the train stage's
per-unit log lines are shown with such values cut out (the full ``dvc repro`` log lies
next to the project copy). Probe records written before this change (the committed
``docs/results/*/probes/`` files) also held each variant's best validation loss and
accuracy and its train-validation accuracy gap; they stay as written, the historical
record. The record goes to ``docs/results/<slug>/probes/<name>.{json,md}``, to be cited
in the method's README and committed with the ledger entry that fixes the setting.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from reprolab import registry
from reprolab.ops import scratch

#: history keys that count training length (the first one a history has)
LENGTH_KEYS = ("stop_epoch", "epoch", "step")
#: seeds no paper run uses: a probe's units are never a result's units
DEFAULT_SEEDS = (100, 101)
#: the history keys a probe reads (the allow-list): training length, early stopping and
#: the training loss and accuracy; nothing else of a history is read
TRAIN_KEYS = ("train_loss", "train_acc")
HISTORY_KEYS = (*LENGTH_KEYS, "stopped_early", *TRAIN_KEYS)
#: what a probe shows per unit and variant, and the record's column titles: these and
#: the method's own signals (:func:`unit_signals`), nothing else
COLUMNS = (
    ("length", "epochs/steps run"),
    ("stopped_early", "stopped early"),
    ("mid_train_loss", "train loss half-way"),
    ("last_train_loss", "last train loss"),
    ("last_train_acc", "last train acc"),
    ("train_seconds", "seconds per unit"),
)
#: the words of a name (split at ``_``, spaces and punctuation) that make it a validation
#: or test quantity
HELD_OUT_WORDS = ("val", "valid", "validation", "test", "heldout", "holdout")
_HELD_OUT = re.compile(r"(?i)(?<![a-z])(" + "|".join(HELD_OUT_WORDS) + r")(?![a-z])")


class ProbeError(ValueError):
    """A probe asked for something it cannot run (the message says what)."""


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """``key=value`` pairs, each value read as YAML (``epochs=2000``,
    ``homophilies=[0.1,0.9]``, ``grok_init=reference``)."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ProbeError(f"--set {item!r}: expected key=value")
        out[key.strip()] = yaml.safe_load(value)
    return out


def probe_params(raw: dict, slug: str, overrides: dict, seeds: list[int]) -> dict:
    """params.yaml cut to ``slug`` at the paper profile, its paper section with the
    overrides, on ``seeds``; validated (a wrong key or value fails here, before any
    compute)."""
    from reprolab import config

    params = scratch.cut_params(raw, [slug], list(seeds), "paper")
    section = dict(params["methods"][slug] or {})
    paper = dict(section.get("paper") or {})
    paper.pop("evidence", None)
    # a probe is one look at its own seeds, whatever the method's evidence plan says
    one_look = {"first": len(seeds), "max_seeds": len(seeds)}
    section["paper"] = {**paper, **overrides, "evidence": one_look}
    params["methods"][slug] = section
    try:
        config.validate(params)
    except Exception as exc:  # the config layer's own message names the key
        raise ProbeError(f"{slug}: the probe's setting is not valid: {exc}") from exc
    return params


def is_held_out(name: str) -> bool:
    """Whether ``name`` reads like a validation or test quantity: it starts with
    ``val``/``valid``/``test`` or has one of :data:`HELD_OUT_WORDS` as a word
    (``best_val_acc``, ``val_miou``, ``test_acc``, ``val nmse``)."""
    low = name.strip().lower()
    return low.startswith(("val", "test")) or bool(_HELD_OUT.search(low))


def unit_signals(checkpoints: Path, runtime: Path) -> list[dict[str, Any]]:
    """The training signals of every trained unit: its task, variant and seed, the
    epochs (or steps) run, whether it stopped early, the training loss half-way through
    the run (entry ``(len - 1) // 2``) and the last training loss and accuracy, and its
    training seconds (the keys its history has; :data:`HISTORY_KEYS` only), and the
    method's own signals read from the weights (``TrainedUnit.signals``) except those
    named like a validation or test quantity. No validation or test value is read."""
    import torch

    from reprolab.contract import Unit
    from reprolab.core import io

    units = [Unit.from_json(u) for u in io.read_json(checkpoints / "units.json")["units"]]
    train_json = runtime / "train.json"
    times = io.read_json(train_json).get("units", {}) if train_json.is_file() else {}
    out = []
    for unit in units:
        ckpt = torch.load(checkpoints / f"{unit.id}.pt", map_location="cpu", weights_only=False)
        # the allow-list, applied first: nothing else of a history is looked at
        history = [{k: h[k] for k in HISTORY_KEYS if k in h} for h in ckpt.get("history") or []]
        row: dict[str, Any] = {"unit": unit.id, "task": unit.task, "variant": unit.variant}
        row["seed"] = unit.seed
        seconds = (times.get(unit.id) or {}).get("train_seconds")
        if seconds is not None:
            row["train_seconds"] = float(seconds)
        if history:
            last = history[-1]
            length = next((k for k in LENGTH_KEYS if k in last), None)
            if length is not None:
                row["length"] = float(last[length])
            if "stopped_early" in last:
                row["stopped_early"] = float(last["stopped_early"])
            for key in TRAIN_KEYS:
                if key in last:
                    row[f"last_{key}"] = float(last[key])
            # whether the loss has flattened: its value half-way through the run
            if "train_loss" in last and len(history) >= 2:
                mid = history[(len(history) - 1) // 2]
                if "train_loss" in mid:
                    row["mid_train_loss"] = float(mid["train_loss"])
        # the method's own weight-side signals and premise checks (TrainedUnit.signals),
        # but none named like a validation or test quantity
        signals = ckpt.get("signals") or {}
        row.update({k: float(v) for k, v in signals.items() if not is_held_out(k)})
        out.append(row)
    return out


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per variant (in order of appearance): the units, and mean, min and max of each
    signal over them."""
    skip = {"unit", "task", "variant", "seed"}
    by: dict[str, list[dict]] = {}
    for row in rows:
        by.setdefault(row["variant"], []).append(row)
    out = []
    for variant, group in by.items():
        entry: dict[str, Any] = {"variant": variant, "units": len(group)}
        keys = [k for k in dict.fromkeys(k for r in group for k in r) if k not in skip]
        for key in keys:
            values = [r[key] for r in group if key in r]
            entry[key] = {"mean": statistics.fmean(values), "min": min(values), "max": max(values)}
        out.append(entry)
    return out


def by_task(rows: list[dict[str, Any]], key: str = "last_train_acc") -> dict[str, dict[str, float]]:
    """``key`` per task and variant, the mean over seeds (tasks with it only)."""
    cells: dict[str, dict[str, list[float]]] = {}
    for row in rows:
        if key in row:
            cells.setdefault(row["task"], {}).setdefault(row["variant"], []).append(row[key])
    return {t: {v: statistics.fmean(x) for v, x in vs.items()} for t, vs in cells.items()}


#: per-task tables of the probe record (``<key>_by_task``), where a method has several
#: tasks: the last training accuracy (no held-out accuracy: see the module doc)
BY_TASK = (("last_train_acc", "Last training accuracy"),)


def check_blind(record: dict) -> None:
    """Refuse a record whose shown quantities (variants, units, per-task tables) name a
    validation or test quantity: the last guard before anything is written or shown."""
    names = [k for part in ("variants", "unit_signals") for r in record.get(part, []) for k in r]
    names += [k for k in record if k.endswith("_by_task")]
    bad = sorted({k for k in names if is_held_out(k)})
    if bad:
        raise ProbeError(f"a probe shows no validation or test quantity, got {bad}")


#: the train stage's line per finished unit: ``train@<slug> [i/n] <unit>: k=v, ... (Xs)``
_UNIT_LINE = re.compile(r"^(\s*train@\S+ \[\d+/\d+\] \S+: )(.*?)( \([\d.]+s\))?$")


def blind_line(line: str) -> str | None:
    """A line of the ``dvc repro`` log as the probe shows it: a train stage unit line
    with its validation and test values cut out, any other line naming a validation or
    test quantity not at all (``None``)."""
    match = _UNIT_LINE.match(line)
    if match:
        head, pairs, tail = match.groups()
        kept = [p for p in pairs.split(", ") if not is_held_out(p.partition("=")[0])]
        return head + ", ".join(kept) + (tail or "")
    return None if _HELD_OUT.search(line) else line


def repro(work: Path, slug: str, env: dict, log: Callable[[str], None]) -> int:
    """``dvc repro train@<slug>`` in ``work``; its output goes in full to
    ``<work>.log`` and to ``log`` through :func:`blind_line`. Returns its exit code."""
    full = work.with_name(f"{work.name}.log")
    hidden = 0
    with (
        full.open("w") as f,
        subprocess.Popen(
            ["dvc", "repro", f"train@{slug}"],
            cwd=work,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        ) as proc,
    ):
        for line in proc.stdout:
            f.write(line)
            shown = blind_line(line.rstrip("\n"))
            if shown is None:
                hidden += 1
            else:
                log(shown)
        proc.wait()
    if hidden:
        log(f"({hidden} log line(s) naming a validation or test quantity not shown: {full})")
    return proc.returncode


def to_markdown(record: dict) -> str:
    rows = record["variants"]
    known = {"variant", "units", *(k for k, _ in COLUMNS)}
    cols = [(k, t) for k, t in COLUMNS if any(k in r for r in rows)]
    # then the method's own signals, under their own names
    cols += [(k, k) for k in dict.fromkeys(k for r in rows for k in r) if k not in known]
    lines = [
        f"# Probe `{record['name']}`: {record['method']}",
        "",
        f"Training signals only: no validation or test metric of any variant (a setting "
        f"is chosen blind); no quantize, no evaluate, so no verdict. Seeds {record['seeds']}; paper profile with "
        f"`{json.dumps(record['overrides'])}`; {record['units']} units, "
        f"`dvc repro` {record['dvc_repro_seconds']:.0f} s; {record['date']}, commit "
        f"`{record['commit'][:10]}`{' (dirty)' if record['dirty'] else ''}, "
        f"{record['machine'].get('cpu', {}).get('model', '?')}.",
        "",
        "Each cell: mean [min, max] over the variant's units.",
        "",
        "| variant | units | " + " | ".join(t for _, t in cols) + " |",
        "|---|---:|" + "---:|" * len(cols),
    ]
    for r in rows:
        cells = []
        for key, _ in cols:
            v = r.get(key)
            cells.append("" if v is None else f"{v['mean']:.4g} [{v['min']:.4g}, {v['max']:.4g}]")
        lines.append(f"| {r['variant']} | {r['units']} | " + " | ".join(cells) + " |")
    for key, title in BY_TASK:
        table = record.get(f"{key}_by_task") or {}
        if len(table) <= 1:
            continue
        variants = list(dict.fromkeys(v for t in table.values() for v in t))
        lines += [
            "",
            f"{title} per task (mean over the probe seeds):",
            "",
            "| task | " + " | ".join(variants) + " |",
            "|---|" + "---:|" * len(variants),
        ]
        for task, cells in table.items():
            shown = [f"{cells[v]:.3f}" if v in cells else "" for v in variants]
            lines.append(f"| {task} | " + " | ".join(shown) + " |")
    return "\n".join(lines) + "\n"


def run_probe(
    root: Path,
    slug: str,
    overrides: dict,
    name: str,
    seeds: list[int] | None = None,
    out: Path | None = None,
    log: Callable[[str], None] = print,
) -> dict:
    """Probe ``slug`` at the paper profile with ``overrides`` (see the module doc);
    returns the record it wrote."""
    from reprolab.core.machine import machine
    from reprolab.evidence.running.paper import PROBES, _git

    registry.check_slug(slug)
    seeds = list(seeds or DEFAULT_SEEDS)
    if not name or any(c in name for c in "/\\ ") or name.startswith("."):
        raise ProbeError(f"probe name {name!r}: one word (letters, digits, - and _)")
    raw = yaml.safe_load((root / "params.yaml").read_text())
    params = probe_params(raw, slug, overrides, seeds)
    out = Path(out) if out else root / "docs" / "results" / slug / PROBES
    # the tree the copy is taken from (the project may be committed to while it runs)
    commit = _git(root, "rev-parse", "HEAD")
    dirty = bool(_git(root, "status", "--porcelain", "--", ".", ":!docs/results"))
    work = Path(tempfile.mkdtemp(prefix=f"reprolab-probe-{slug}-"))
    scratch.copy_project(root, work, params)
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(work / "src"),
    }
    log(f"probe {name}: {slug} at the paper profile + {overrides}, seeds {seeds}, in {work}")
    t0 = time.perf_counter()
    returncode = repro(work, slug, env, log)
    seconds = time.perf_counter() - t0
    if returncode != 0:
        raise ProbeError(f"dvc repro train@{slug} failed after {seconds:.0f} s (copy: {work})")
    units = unit_signals(work / "data" / "checkpoints" / slug, work / "data" / "runtime" / slug)
    variants = summarise(units)
    record = {
        "method": slug,
        "name": name,
        "kind": "probe: training signals only",
        "overrides": overrides,
        "seeds": list(seeds),
        "params": params["methods"][slug],
        "units": sum(v["units"] for v in variants),
        "variants": variants,
        **{f"{key}_by_task": by_task(units, key) for key, _ in BY_TASK},
        "unit_signals": units,
        "dvc_repro_seconds": round(seconds, 1),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit,
        "dirty": dirty,
        "machine": machine(),
    }
    check_blind(record)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(record, indent=2) + "\n")
    (out / f"{name}.md").write_text(to_markdown(record))
    log(to_markdown(record))
    log(f"probe {name}: written to {out / name}.md")
    return record


def main(argv: list[str], root: Path) -> int:
    """``python -m reprolab probe``: a candidate setting's training signals (see the
    module docstring); 2 on a refused probe."""
    parser = _parser()
    args = parser.parse_args(argv)

    try:
        seeds = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        parser.error(f"--seeds: expected integers separated by commas, got {args.seeds!r}")
    try:
        run_probe(root, args.method, parse_overrides(args.set), args.name, seeds, args.out)
    except (ProbeError, registry.UnknownMethodError) as exc:
        print(f"probe: error: {exc}", file=sys.stderr)
        return 2
    return 0


def _parser():
    import argparse

    parser = argparse.ArgumentParser(
        prog="reprolab probe", description=__doc__.split("\n\n")[0].replace("\n", " ")
    )
    parser.add_argument("method", help="a method slug (see `python -m reprolab list`)")
    parser.add_argument("--name", required=True, help="the probe's name (its record's file)")
    parser.add_argument(
        "--set",
        nargs="*",
        action="extend",  # `--set a=1 --set b=2` keeps both, as `--set a=1 b=2`
        default=[],
        metavar="KEY=VALUE",
        help="paper-profile overrides (several after one --set, or --set repeated)",
    )
    parser.add_argument("--seeds", default="100,101", help="probe seeds, comma-separated")
    parser.add_argument("--out", type=Path, help="default: docs/results/<slug>/probes")
    return parser
