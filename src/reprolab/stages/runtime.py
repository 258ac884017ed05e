"""What the stages record of their own cost in ``data/runtime/<slug>/`` (kept out of the
versioned outputs: timings differ on every run), read back as one figure."""

from __future__ import annotations

import math
from pathlib import Path

from reprolab.core import io


def machine_seconds(runtime: Path, started: float = math.inf) -> float:
    """The machine time a method's latest stages spent: the training of the units they
    trained (not those reused; a unit resumed after a kill with the epochs before it; a
    unit trained beside others on the pool counts its seconds over how many ran at
    once), its quantize and evaluate stages, and the units that an attempt killed after
    evaluating them left in the evaluation memo (made at or after ``started``, wall
    clock; none by default)."""
    total = 0.0
    train = runtime / "train.json"
    if train.is_file():
        for t in io.read_json(train).get("units", {}).values():
            if isinstance(t, dict) and not t.get("reused"):
                # units trained side by side (the pool) share the machine: each counts
                # its share, so the figure reads machine time on any executor
                share = max(1.0, float(t.get("units_side_by_side", 1.0)))
                total += float(t.get("train_seconds", 0.0)) / share
    quantize = runtime / "quantize.json"
    if quantize.is_file():
        total += float(io.read_json(quantize).get("wall_seconds", 0.0))
    ev = runtime / "evaluate.json"
    if ev.is_file():
        info = io.read_json(ev)
        total += float(info.get("evaluate_seconds", 0.0))
        total += sum(
            float(hit.get("seconds", 0.0))
            for hit in info.get("memo_hits", [])
            if float(hit.get("created", 0.0)) >= started
        )
    return total
