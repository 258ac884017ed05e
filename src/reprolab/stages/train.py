"""train@<slug>: train every unit (task x variant x seed) into data/checkpoints/<slug>/.

Checkpoints hold what must hash the same when the same unit is trained again (state and
history); wall-clock measurements (``TrainedUnit.timings``, history entries named like
``*_seconds``) go to MLflow and data/runtime/<slug>/train.json.

Finished units are kept under data/.partial/train/<slug>/<fingerprint>/ until the whole
stage is done, so a killed run loses nothing that was finished: the next attempt skips
those units and resumes the interrupted one from its last epoch checkpoint. The
fingerprint covers the config, seeds, data checksums and code, so stale work from a
different setting is never reused.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path

import torch

from reprolab.contract import is_runtime_metric
from reprolab.core import io
from reprolab.core.devices import check_device
from reprolab.core.threads import set_threads
from reprolab.core.tracking import log
from reprolab.stages._common import (
    PreparedData,
    code_digest,
    context,
    unit_params,
    unit_tags,
)


def run(slug: str, root: Path) -> dict:
    ctx = context(slug, "train", root)
    ctx.assets()  # a missing or corrupt asset is named before any compute
    check_device(
        ctx.cfg.trainer,
        f"params.yaml: trainer.{ctx.profile} (or methods.{slug}.{ctx.profile}.trainer)",
    )
    data = PreparedData(ctx.paths)  # verifies checksums before any compute
    hooks = ctx.hooks()
    # evaluation-only units reuse another variant's trained object: nothing to train
    units = [u for u in ctx.units(hooks, data.tasks) if ctx.spec.trains(u)]
    fingerprint = _fingerprint(ctx, data)

    set_threads()
    # The tracking store is checked before anything is written under data/.
    tracker = ctx.tracker(inputs=[ctx.paths.prepared])
    ok = False
    started = time.perf_counter()
    try:
        partial_root = ctx.paths.partial("train")
        partial = partial_root / fingerprint
        if partial_root.is_dir():  # work from another setting can never be resumed
            for stale in partial_root.iterdir():
                if stale.name != fingerprint:
                    shutil.rmtree(stale, ignore_errors=True)
        done_dir = partial / "done"
        done_dir.mkdir(parents=True, exist_ok=True)
        n_resumed = 0
        for i, unit in enumerate(units, 1):
            done = done_dir / f"{unit.id}.pt"
            if done.is_file():
                n_resumed += 1
                log(f"train@{slug} [{i}/{len(units)}] {unit.id}: finished earlier, kept")
                continue
            t0 = time.perf_counter()
            resume = partial / "resume" / unit.id
            _check_resume(resume, f"train@{slug} [{i}/{len(units)}] {unit.id}")
            with tracker.unit_run(unit.id, unit_params(unit), unit_tags(unit)) as run_id:
                result = hooks.train_unit(
                    unit, ctx.cfg, data[unit.task], resume, lambda m, u=unit: log(f"  {u.id}: {m}")
                )
                # wall-clock entries go to MLflow only: the checkpoint must hash the
                # same when the same unit is trained again
                history = [
                    {k: v for k, v in row.items() if not is_runtime_metric(k)}
                    for row in result.history
                ]
                timings = {**result.timings, "train_seconds": time.perf_counter() - t0}
                io.write_json(done_dir / f"{unit.id}.timings.json", timings)
                io.save_torch({"state": result.state, "history": history}, done)
                tracker.log_history(run_id, result.history)
                tracker.log_metrics(run_id, timings)
                shutil.rmtree(resume, ignore_errors=True)
            last = result.history[-1] if result.history else {}
            shown = ", ".join(f"{k}={v:.4g}" for k, v in last.items() if k != "epoch")
            log(
                f"train@{slug} [{i}/{len(units)}] {unit.id}: {shown} ({time.perf_counter() - t0:.1f}s)"
            )

        with io.atomic_dir(ctx.paths.checkpoints) as tmp:
            for unit in units:
                shutil.copy2(done_dir / f"{unit.id}.pt", tmp / f"{unit.id}.pt")
            io.write_json(
                tmp / "units.json",
                {"units": [u.as_json() for u in units], "fingerprint": fingerprint},
            )
        timings = {}
        for unit in units:
            path = done_dir / f"{unit.id}.timings.json"
            timings[unit.id] = io.read_json(path) if path.is_file() else {}
        io.write_json(ctx.paths.runtime / "train.json", {"units": timings})
        shutil.rmtree(partial, ignore_errors=True)
        wall = time.perf_counter() - started
        tracker.log_metrics(
            tracker.run_id, {"units": len(units), "units_resumed": n_resumed, "train_seconds": wall}
        )
        ok = True
        return {"units": len(units), "resumed": n_resumed, "seconds": wall}
    finally:
        tracker.finish(ok)


def _check_resume(resume: Path, label: str) -> None:
    """Say which epoch an interrupted unit resumes from; drop a checkpoint that cannot
    be read (the unit then starts over instead of failing)."""
    from reprolab.core.training import LAST

    last = resume / LAST
    if not last.is_file():
        return
    try:
        epoch = int(torch.load(last, map_location="cpu", weights_only=True)["epoch"])
    except Exception as exc:  # truncated or foreign file: never resume from it
        log(f"{label}: {last} is unreadable ({type(exc).__name__}); training it from scratch")
        shutil.rmtree(resume, ignore_errors=True)
        return
    log(f"{label}: resuming from {last} (epochs 0..{epoch} done)")


def _fingerprint(ctx, data: PreparedData) -> str:
    src = Path(__file__).resolve().parents[1]
    blob = json.dumps(
        {
            "cfg": ctx.cfg.model_dump(mode="json"),
            "seeds": list(ctx.seeds),
            "data": {k: v["sha256"] for k, v in data.manifest["files"].items()},
            "code": code_digest(src / "methods" / ctx.slug, src / "core", Path(__file__)),
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
