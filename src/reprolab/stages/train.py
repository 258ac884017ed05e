"""train@<slug>: train every unit (task x variant x seed) into data/checkpoints/<slug>/.

Checkpoints hold what must hash the same when the same unit is trained again (state and
history); wall-clock measurements (``TrainedUnit.timings``, history entries named like
``*_seconds``) go to MLflow and data/runtime/<slug>/train.json.

Finished units are kept under data/.partial/train/<slug>/<fingerprint>/ until the whole
stage is done, so a killed run loses nothing that was finished: the next attempt skips
those units and resumes the interrupted one from its last epoch checkpoint. The
fingerprint covers the config, seeds, data checksums and code, so stale work from a
different setting is never reused.

A unit that the previous run of the stage already trained is reused, not retrained,
when its own fingerprint is the same: the config without the keys that only choose
which units run (``evidence``, ``variants``, ``quantization``), the code, and the
checksums of the arrays of its task that it can read (every array but those of other
seeds, ``s<seed>_...``). So the seeds a sequential round adds train only the new units;
the checkpoints folder persists between runs (``persist: true`` in dvc.yaml) for this.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import shutil
import time
import zipfile
from pathlib import Path

from reprolab.contract import TrainedUnit, Unit, is_runtime_metric
from reprolab.core import io
from reprolab.core.devices import check_device
from reprolab.core.progress import Progress
from reprolab.core.threads import set_threads
from reprolab.core.tracking import log
from reprolab.ops import executor
from reprolab.stages._common import (
    PreparedData,
    code_digest,
    context,
    unit_label,
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
        unit_fps = unit_fingerprints(ctx, data, units)
        previous = _previous_units(ctx.paths.checkpoints)
        n_resumed = n_reused = 0
        todo = []
        for i, unit in enumerate(units, 1):
            done = done_dir / f"{unit.id}.pt"
            if done.is_file() and not zipfile.is_zipfile(done):  # truncated or foreign
                log(f"train@{slug}: {done} is unreadable; training {unit.id} again")
                done.unlink()
            if done.is_file():
                n_resumed += 1
                log(f"train@{slug} [{i}/{len(units)}] {unit.id}: finished earlier, kept")
            elif previous.get(unit.id) == unit_fps[unit]:
                _reuse(ctx, unit, done_dir)
                n_reused += 1
            else:
                todo.append(unit)
        if n_reused:
            log(f"train@{slug}: {n_reused} unit(s) reused from the previous run (same setting)")

        mode = executor.choice()  # a bad REPROLAB_EXECUTOR is named before any compute
        workers = min(executor.pool_workers(), len(todo)) if mode == "pool" else 0
        if mode == "pool" and workers < 2:
            mode = "local"  # one unit (or one core): nothing to run side by side
        # units trained side by side share the machine: a paper run's compute counts each
        # unit's seconds divided by how many ran at once (stages.runtime.machine_seconds),
        # so the evidence budget reads machine time whichever executor ran the units
        side_by_side = float(workers) if mode == "pool" else 1.0

        def write(unit: Unit, result: TrainedUnit, seconds: float, n: int, run_id: str) -> None:
            """Write a finished unit (done file, its MLflow run's history) and drop its
            resume state."""
            # wall-clock entries go to MLflow only: the checkpoint must hash the same
            # when the same unit is trained again
            history = [
                {k: v for k, v in row.items() if not is_runtime_metric(k)} for row in result.history
            ]
            # an interrupted earlier attempt's epochs are part of this unit's training
            earlier = float(result.timings.get("earlier_attempts_seconds", 0.0))
            timings = {
                **result.timings,
                "train_seconds": seconds + earlier,
                "units_side_by_side": side_by_side,
            }
            io.write_json(done_dir / f"{unit.id}.timings.json", timings)
            saved = {"state": result.state, "history": history}
            if result.signals:
                saved["signals"] = {k: float(v) for k, v in result.signals.items()}
            io.save_torch(saved, done_dir / f"{unit.id}.pt")
            tracker.log_history(run_id, result.history)
            tracker.log_metrics(run_id, {**timings, **result.signals})
            shutil.rmtree(partial / "resume" / unit.id, ignore_errors=True)
            last = result.history[-1] if result.history else {}
            shown = ", ".join(
                f"{k}={v:.4g}" for k, v in {**last, **result.signals}.items() if k != "epoch"
            )
            log(f"train@{slug} [{n}/{len(units)}] {unit.id}: {shown} ({seconds:.1f}s)")

        args = (slug, str(root), fingerprint)
        with contextlib.ExitStack() as stack:
            futures: dict = {}
            if mode == "pool":
                # the forked workers inherit the built context, hooks and data, and the
                # shared fit loop (Lightning: ~3 s to import) imported here once, not in
                # every worker; all are forked at the first submit, before the progress
                # thread starts
                import reprolab.core.training  # noqa: F401

                _WORKER_STATE[args] = (ctx, hooks, data)
                pool = stack.enter_context(executor.process_pool(workers))
                futures = {pool.submit(_train_remote, *args, u.as_json()): u for u in todo}
                log(f"train@{slug}: {len(todo)} units on {workers} single-threaded processes")
            # a line every REPROLAB_PROGRESS_SECONDS (25 s) while units train: one unit
            # can take minutes
            with Progress(f"train@{slug}", len(units), done=len(units) - len(todo)) as progress:

                def record(unit: Unit, result: TrainedUnit, seconds: float, n: int) -> None:
                    with tracker.unit_run(
                        unit_label(unit), unit_params(unit), unit_tags(unit)
                    ) as run_id:
                        write(unit, result, seconds, n, run_id)
                    progress.advance()

                if mode == "pool":
                    from concurrent.futures import as_completed

                    _record_as_they_arrive(futures, as_completed(futures), record, units)
                elif mode != "local" and todo:
                    from distributed import as_completed

                    with executor.dask_client() as client:
                        n = len(client.scheduler_info().get("workers", {}))
                        side_by_side = float(max(1, min(n, len(todo))))
                        log(f"train@{slug}: {len(todo)} units on Dask ({mode}, {n} workers)")
                        futures = {
                            client.submit(
                                _train_remote,
                                *args,
                                u.as_json(),
                                key=f"train-{slug}-{u.id}-{fingerprint}",
                                pure=False,
                            ): u
                            for u in todo
                        }
                        _record_as_they_arrive(futures, as_completed(futures), record, units)
                else:
                    for unit in todo:
                        progress.working_on(unit.id)
                        # the unit's MLflow run is open while it trains: a failure marks
                        # it FAILED
                        with tracker.unit_run(
                            unit_label(unit), unit_params(unit), unit_tags(unit)
                        ) as run_id:
                            t0 = time.perf_counter()
                            n = units.index(unit) + 1
                            label = f"train@{slug} [{n}/{len(units)}] {unit.id}"
                            result = _train_one(ctx, hooks, data, partial, unit, label)
                            write(unit, result, time.perf_counter() - t0, n, run_id)
                        progress.advance()

        with io.atomic_dir(ctx.paths.checkpoints) as tmp:
            for unit in units:
                shutil.copy2(done_dir / f"{unit.id}.pt", tmp / f"{unit.id}.pt")
            io.write_json(
                tmp / "units.json",
                {
                    "units": [u.as_json() for u in units],
                    "fingerprint": fingerprint,
                    "unit_fingerprints": {u.id: unit_fps[u] for u in units},
                },
            )
        timings = {}
        for unit in units:
            path = done_dir / f"{unit.id}.timings.json"
            timings[unit.id] = io.read_json(path) if path.is_file() else {}
        io.write_json(ctx.paths.runtime / "train.json", {"units": timings})
        shutil.rmtree(partial, ignore_errors=True)
        wall = time.perf_counter() - started
        tracker.log_metrics(
            tracker.run_id,
            {
                "units": len(units),
                "units_resumed": n_resumed,
                "units_reused": n_reused,
                "train_seconds": wall,
            },
        )
        ok = True
        return {"units": len(units), "resumed": n_resumed, "reused": n_reused, "seconds": wall}
    finally:
        tracker.finish(ok)


def _train_one(ctx, hooks, data, partial: Path, unit: Unit, label: str) -> TrainedUnit:
    """Train one unit (in the stage process or a Dask worker), resuming from its last
    epoch checkpoint when an interrupted attempt left one. The seconds interrupted
    attempts spent go into the result's timings (``earlier_attempts_seconds``), so the
    unit's ``train_seconds`` counts the epochs it resumed from."""
    resume = partial / "resume" / unit.id
    _check_resume(resume, label)
    earlier = _begin_attempt(resume)
    try:
        result = hooks.train_unit(
            ctx.run, unit, data[unit.task], resume, lambda m, u=unit: log(f"  {u.id}: {m}")
        )
    except BaseException:  # a failure or an interrupt: its time is the next attempt's
        _end_attempt(resume)
        raise
    if earlier:
        result.timings["earlier_attempts_seconds"] = earlier
    return result


#: a unit's attempts (wall-clock start and end), beside its resume checkpoint
ATTEMPTS = "attempts.json"


def _begin_attempt(resume: Path) -> float:
    """Record a new attempt at a unit; return the seconds its earlier attempts spent.

    An attempt that failed or was interrupted recorded its end; one killed outright
    (SIGKILL, power) ends at the last file it wrote in ``resume`` (its last epoch
    checkpoint: the work the new attempt resumes from)."""
    path = resume / ATTEMPTS
    attempts: list[dict] = []
    if path.is_file():
        try:
            attempts = list(io.read_json(path)["attempts"])
        except (OSError, ValueError, KeyError, TypeError, io.CorruptDataError):
            attempts = []  # unreadable: its time is not counted, nothing else changes
    if attempts and attempts[-1].get("ended") is None:
        started = float(attempts[-1]["started"])
        written = [f.stat().st_mtime for f in resume.rglob("*") if f.is_file() and f != path]
        attempts[-1]["ended"] = max([started, *written])
    spent = sum(max(0.0, float(a["ended"]) - float(a["started"])) for a in attempts)
    resume.mkdir(parents=True, exist_ok=True)
    io.write_json(path, {"attempts": [*attempts, {"started": time.time(), "ended": None}]})
    return spent


def _end_attempt(resume: Path) -> None:
    path = resume / ATTEMPTS
    try:
        attempts = list(io.read_json(path)["attempts"])
        attempts[-1]["ended"] = time.time()
        io.write_json(path, {"attempts": attempts})
    except (OSError, ValueError, KeyError, TypeError, IndexError, io.CorruptDataError):
        pass  # never hide the error that ended the attempt


#: per worker process (pool or Dask): (slug, root, fingerprint) -> (ctx, hooks, data);
#: a pool's forked workers inherit the stage process's entry
_WORKER_STATE: dict[tuple[str, str, str], tuple] = {}


def _train_remote(slug: str, root: str, fingerprint: str, unit_json: dict) -> tuple:
    """A unit's training in a worker process: the stage context is built once per
    worker (params checked, data verified) unless inherited; the result goes back to
    the stage process, which writes it."""
    key = (slug, root, fingerprint)
    if key not in _WORKER_STATE:
        set_threads()
        ctx = context(slug, "train", Path(root))
        _WORKER_STATE[key] = (ctx, ctx.hooks(), PreparedData(ctx.paths))
    ctx, hooks, data = _WORKER_STATE[key]
    partial = ctx.paths.partial("train") / fingerprint
    t0 = time.perf_counter()
    unit = Unit.from_json(unit_json)
    result = _train_one(ctx, hooks, data, partial, unit, f"train@{slug} [worker] {unit.id}")
    return result, time.perf_counter() - t0


def _record_as_they_arrive(futures: dict, arrived, record, units: list[Unit]) -> None:
    """Record each unit in the stage process as its result arrives (``futures``: future
    -> unit, of a pool or of Dask). A Dask worker lost mid-unit makes Dask run that unit
    again elsewhere (its resume state is in the shared partial folder); each unit is
    recorded once."""
    for future in arrived:
        result, seconds = future.result()
        unit = futures[future]
        record(unit, result, seconds, units.index(unit) + 1)


def _check_resume(resume: Path, label: str) -> None:
    """Say which epoch an interrupted unit resumes from; drop a checkpoint that cannot
    be read (the unit then starts over instead of failing)."""
    from reprolab.core.training import LAST, read_checkpoint

    last = resume / LAST
    if not last.is_file():
        return
    try:
        epoch = int(read_checkpoint(last)["epoch"])
    except Exception as exc:  # truncated or foreign file: never resume from it
        log(f"{label}: {last} is unreadable ({type(exc).__name__}); training it from scratch")
        shutil.rmtree(resume, ignore_errors=True)
        return
    log(f"{label}: resuming from {last} (epochs 0..{epoch} done)")


#: config keys that only choose which units run (or how they are judged, quantized):
#: a unit trains the same whatever they say
SELECTION_KEYS = ("evidence", "variants", "quantization")
#: this stage's own module, hashed with the method's build code
TRAIN_CODE = "src/reprolab/stages/train.py"
_SEED_ARRAY = re.compile(r"^s(\d+)_")


def unit_fingerprints(ctx, data: PreparedData, units: list[Unit]) -> dict[Unit, str]:
    """Per unit: the hash of what its training can depend on (see the module doc)."""
    cfg = {k: v for k, v in ctx.cfg.model_dump(mode="json").items() if k not in SELECTION_KEYS}
    common = {"cfg": cfg, "code": code_digest(ctx.slug, "build", TRAIN_CODE)}
    arrays: dict[str, dict[str, str]] = {}
    out = {}
    for unit in units:
        if unit.task not in arrays:
            arrays[unit.task] = io.array_hashes(data.folder / f"{unit.task}.npz")

        def readable(name: str, seed=unit.seed) -> bool:
            match = _SEED_ARRAY.match(name)
            return seed is None or match is None or int(match.group(1)) == seed

        view = {k: h for k, h in arrays[unit.task].items() if readable(k)}
        blob = json.dumps({**common, "data": view, "unit": unit.id}, sort_keys=True)
        out[unit] = hashlib.sha256(blob.encode()).hexdigest()[:16]
    return out


def _previous_units(folder: Path) -> dict[str, str]:
    """Unit id -> fingerprint of the units the stage's last run wrote (none if it has
    not run, or an older run that recorded no per-unit fingerprints)."""
    listing = folder / "units.json"
    if not listing.is_file():
        return {}
    try:
        fps = io.read_json(listing).get("unit_fingerprints") or {}
    except (OSError, ValueError):
        return {}
    return {uid: fp for uid, fp in fps.items() if (folder / f"{uid}.pt").is_file()}


def _reuse(ctx, unit: Unit, done_dir: Path) -> None:
    """Copy a unit the last run trained (same fingerprint) into this run's finished
    units, with its timings when the last run recorded them."""
    shutil.copy2(ctx.paths.checkpoints / f"{unit.id}.pt", done_dir / f"{unit.id}.pt")
    timings_file = ctx.paths.runtime / "train.json"
    timings = {}
    if timings_file.is_file():
        timings = io.read_json(timings_file).get("units", {}).get(unit.id, {})
    io.write_json(done_dir / f"{unit.id}.timings.json", {**timings, "reused": 1.0})


def _fingerprint(ctx, data: PreparedData) -> str:
    blob = json.dumps(
        {
            "cfg": ctx.cfg.model_dump(mode="json"),
            "seeds": list(ctx.seeds),
            "data": {k: v["sha256"] for k, v in data.manifest["files"].items()},
            "code": code_digest(ctx.slug, "build", TRAIN_CODE),
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
