"""evaluate@<slug>: metrics of every unit at full precision and quantized, then claims.

Outputs in data/eval/<slug>/ (DVC-versioned; identical when nothing changed):
- metrics.csv   long table: task, variant, seed, <unit parameters>, precision, metric,
                value (wall-clock measurements excluded, see below)
- headline.json what `dvc metrics show` prints: headline verdict counts, the central claim's
                id, verdict and measured value
- metrics.json  summary: per variant and precision, mean metrics;
                size, coverage and layer error per precision; verdict counts
- claims.json   one entry per claim and precision: paper's number, measured value with
                its interval, verdict
- plots/        the method's figures

Wall-clock measurements (latency, seconds per attack, solve times) and the MLflow run
ids differ on every run, so they are kept apart, in data/runtime/<slug>/evaluate.json
and runtime_metrics.csv (not versioned) and in MLflow, where the report reads them.
"""

from __future__ import annotations

import contextlib
import math
import time
from pathlib import Path

import pandas as pd

from reprolab.contract import Unit, is_runtime_metric
from reprolab.core import io
from reprolab.core.progress import Progress
from reprolab.core.threads import set_threads
from reprolab.core.tracking import EVIDENCE_TAG, claim_metrics, log, verdict_params
from reprolab.evidence.judging import entries
from reprolab.evidence.judging.claims import BASE_COLUMNS, VERDICTS, param_columns
from reprolab.stages._common import (
    PreparedData,
    Trained,
    context,
    read_units,
    regenerate_hint,
)


def run(slug: str, root: Path) -> dict:
    ctx = context(slug, "evaluate", root)
    ctx.assets()  # a missing or corrupt asset is named before any compute
    trained_units = read_units(ctx.paths.checkpoints, "train", slug)
    qinfo = io.read_json(ctx.paths.quantized / "quantized.json")
    schemes = qinfo.get("schemes", []) if qinfo.get("applies") else []
    data = PreparedData(ctx.paths)
    hooks = ctx.hooks()
    units = ctx.units(hooks, data.tasks)  # trained and evaluation-only
    missing = sorted({ctx.spec.source_unit(u).id for u in units} - {u.id for u in trained_units})
    if missing:
        raise io.CorruptDataError(
            f"evaluate@{slug}: no trained object for {', '.join(missing[:5])}"
            f"{' ...' if len(missing) > 5 else ''}. " + regenerate_hint("train", slug)
        )
    set_threads()
    tracker = ctx.tracker(inputs=[ctx.paths.checkpoints, ctx.paths.quantized])
    ok = False
    started = time.perf_counter()
    try:
        trained = Trained(ctx, hooks, data, trained_units)
        rows, efficiency, memo_hits, side_by_side = _measure(
            ctx, hooks, data, units, trained, schemes, qinfo
        )
        runtime_rows = [r for r in rows if is_runtime_metric(r[2])]
        table = metrics_table([r for r in rows if not is_runtime_metric(r[2])])
        latency = {p: e.pop("latency_ms") for p, e in efficiency.items()}
        precisions = [*ctx.spec.precisions, *schemes]
        runtime_table = metrics_table(runtime_rows)
        # a claim on a wall-clock measurement (e.g. "faster than") is checked like any
        # other, but its result differs on every run, so it is stored with the runtime
        # outputs; the report shows both
        everything = pd.concat([table, runtime_table], ignore_index=True)
        results = judge(ctx, table, everything, precisions)
        claims = [r for r in results if not is_runtime_metric(r["metric"])]
        timed_claims = [r for r in results if is_runtime_metric(r["metric"])]
        summary = _summary(ctx, table, efficiency, claims)
        # what the readers of claims.json take (judging.entries): checked before anything is written
        entries.parse(claims, f"evaluate@{slug}: claims.json")
        entries.parse(timed_claims, f"evaluate@{slug}: runtime claims.json")

        out = ctx.paths.eval
        out.mkdir(parents=True, exist_ok=True)
        with io.atomic_path(out / "metrics.csv") as tmp:
            table.to_csv(tmp, index=False)
        io.write_json(out / "claims.json", claims)
        io.write_json(out / "metrics.json", summary)
        io.write_json(out / "headline.json", headline(claims, summary))
        # a method's figures can take a minute (bit_dgdm draws sampled graphs): a line
        # every REPROLAB_PROGRESS_SECONDS meanwhile
        with (
            io.atomic_dir(out / "plots") as tmp,
            Progress(f"evaluate@{slug}", 1, what="plotting steps") as progress,
        ):
            progress.working_on("the method's figures")
            figures = hooks.plots(ctx.run, table, tmp, trained) if hasattr(hooks, "plots") else []
            progress.advance()
        log(f"evaluate@{slug}: {len(figures)} plots, {len(results)} claim results")

        runtime = ctx.paths.runtime
        io.write_json(runtime / "claims.json", timed_claims)
        if hasattr(hooks, "runtime_plots"):
            train_timings = runtime / "train.json"
            by_id = io.read_json(train_timings)["units"] if train_timings.is_file() else {}
            timings = {u: by_id.get(u.id, {}) for u in trained_units}
            with io.atomic_dir(runtime / "plots") as tmp:
                hooks.runtime_plots(ctx.run, runtime_table, tmp, timings)
            for plot in sorted((runtime / "plots").glob("*.png")):
                tracker.log_artifact(tracker.run_id, plot, "plots")
        with io.atomic_path(runtime / "runtime_metrics.csv") as tmp:
            runtime_table.to_csv(tmp, index=False)
        io.write_json(
            runtime / "evaluate.json",
            {
                "mlflow_run_id": tracker.run_id,
                "mlflow_experiment_id": tracker.experiment_id,
                "latency_ms": latency,
                "runtime_metrics": _means(runtime_table),
                "evaluate_seconds": time.perf_counter() - started,
                # trained objects evaluated at once (the pool): the wall-clock
                # measurements above were taken beside that many units
                "units_side_by_side": side_by_side,
                # units read from the memo: when each was evaluated and what it took (a
                # paper round counts those its own killed attempt evaluated)
                "memo_hits": memo_hits,
            },
        )
        _track(tracker, summary, results, out, latency, runtime_table)
        for result in results:
            verdict = result["verdict"]
            log(
                f"  claim {result['id']} [{result['precision']}]: {verdict} ({result['measured'].get('summary', '')})"
            )
        tracker.log_metrics(tracker.run_id, {"evaluate_seconds": time.perf_counter() - started})
        ok = True
        return summary
    finally:
        tracker.finish(ok)


def judge(ctx, table: pd.DataFrame, everything: pd.DataFrame, precisions: list[str]) -> list[dict]:
    """Every claim at every precision it is read at, each on its own seeds (the first
    look's and those the sequential rounds added for it: a claim decided earlier keeps
    the seeds it was decided on), at the look of the method's sequential plan."""
    evidence = ctx.cfg.evidence
    from reprolab.evidence.judging.sequential import plan_for

    plan = plan_for(evidence, ctx.project.seeds)
    results, inputs = [], {}
    for claim in ctx.spec.claims:
        source = everything if is_runtime_metric(claim.metric) else table
        seeds = evidence.claim_seeds(claim.id, ctx.project.seeds)
        rows = source[source.seed.isna() | source.seed.isin(seeds)]
        inputs[claim.id] = (claim, rows)
        for precision in claim.precisions_to_evaluate(precisions):
            results.append(claim.evaluate(rows, precision, ctx.profile, plan))
    # claims on wall time differ on every run and are kept apart from claims.json, so
    # they stay out of the family: a re-reading of the committed results (which have no
    # wall-time metrics) then sees the family the run saw
    timed = [r for r in results if is_runtime_metric(r["metric"])]
    stable = [r for r in results if not is_runtime_metric(r["metric"])]
    return judge_family(stable, inputs, ctx.profile, plan) + timed


def judge_family(results: list[dict], inputs: dict, profile: str, plan) -> list[dict]:
    """The method's claims as one family (``judging.claims.FAMILY_RULE``): each claim's
    result again at the level the family gives it. ``inputs``: claim id -> (claim, the
    rows it reads)."""
    import dataclasses

    from reprolab.evidence.judging.claims import adjust_family

    def again(result: dict, alpha: float) -> dict:
        claim, rows = inputs[result["id"]]
        return claim.evaluate(
            rows, result["precision"], profile, dataclasses.replace(plan, alpha=alpha)
        )

    return adjust_family(results, again, plan.alpha)


def metrics_table(rows: list[tuple[Unit, str, str, float]]) -> pd.DataFrame:
    """The long table: task, variant, seed (missing for a seed-free unit), one column per
    unit parameter, precision, metric, value."""
    names = sorted({k for unit, *_ in rows for k, _ in unit.params})
    records = [
        {
            "task": unit.task,
            "variant": unit.variant,
            "seed": unit.seed,
            **dict(unit.params),
            "precision": precision,
            "metric": metric,
            "value": value,
        }
        for unit, precision, metric, value in rows
    ]
    columns = ["task", "variant", "seed", *names, "precision", "metric", "value"]
    table = pd.DataFrame.from_records(records, columns=columns)
    table["seed"] = table["seed"].astype("Int64")
    assert set(columns) - set(names) == set(BASE_COLUMNS)
    return table


def _measure(ctx, hooks, data, units, trained: Trained, schemes, qinfo):
    """Every unit's metrics at every precision (rows in a fixed order whichever way the
    units ran), the efficiency per precision, and the memo hits. Units sharing a trained
    object (evaluation-only variants of one victim, say) are evaluated together, so
    each object is restored and quantized once; the groups run on the stage's process
    pool where the method has no claim on a wall-clock measurement (see
    :func:`_pool_workers`), else one after another."""
    from reprolab.core import quant

    sizes = qinfo.get("sizes", {})
    real_kernel = qinfo.get("real_kernel", {})
    efficiency: dict[str, dict] = {
        precision: {
            "bytes": entry["bytes"],
            "effective_bytes": entry["effective_bytes"],
            "real_kernel": precision == "fp32" or bool(real_kernel.get(precision)),
            "latency_ms": [],
        }
        for precision, entry in sizes.items()
    }
    memo = UnitMemo(ctx, schemes)
    order = sorted(units, key=lambda u: (ctx.spec.source_unit(u).sort_key(), u.sort_key()))
    done: dict[Unit, list[tuple[str, str, float]]] = {}
    for unit in order:
        cached = memo.get(unit)
        if cached is not None:
            done[unit] = cached
    groups: dict[Unit, list[Unit]] = {}
    for unit in order:
        if unit not in done:
            groups.setdefault(ctx.spec.source_unit(unit), []).append(unit)
    workers = _pool_workers(ctx, len(groups))
    side_by_side = float(max(1, workers))

    def record(results: list[tuple[Unit, list, float]]) -> None:
        for unit, unit_rows, seconds in results:
            done[unit] = unit_rows
            # the memo keeps machine time, as the paper run's compute counts it
            memo.put(unit, unit_rows, seconds / side_by_side)
            progress.advance()
            if len(done) % 25 == 0 or len(done) == len(order):
                log(f"evaluate@{ctx.slug}: {len(done)}/{len(order)} units")

    with contextlib.ExitStack() as stack:
        futures: dict = {}
        if workers:
            from reprolab.ops import executor

            # forked before the progress thread starts and before any torch compute in
            # this process; the workers inherit the context, hooks, data and checkpoints
            _WORKER_STATE[ctx.slug] = (ctx, hooks, data, trained, schemes)
            pool = stack.enter_context(executor.process_pool(workers))
            futures = {
                pool.submit(_evaluate_remote, ctx.slug, s.as_json(), [u.as_json() for u in g]): s
                for s, g in groups.items()
            }
            log(
                f"evaluate@{ctx.slug}: {sum(map(len, groups.values()))} units of "
                f"{len(groups)} trained objects on {workers} single-threaded processes"
            )
        # a line every REPROLAB_PROGRESS_SECONDS (25 s): one unit can take minutes (sampling)
        with Progress(f"evaluate@{ctx.slug}", len(order), done=len(done)) as progress:
            if futures:
                from concurrent.futures import as_completed

                by_id = {unit.id: unit for unit in order}
                for future in as_completed(futures):
                    record([(by_id[i], rows, sec) for i, rows, sec in future.result()])
            else:
                for source, group in groups.items():
                    progress.working_on(source.id)
                    record(_evaluate_group(ctx, hooks, data, trained, schemes, source, group))
    if memo.hits:
        log(
            f"evaluate@{ctx.slug}: {len(memo.hits)} unit(s) read from the evaluation memo (same setting)"
        )
    # Latency depends on the architecture, not on the task or seed: measured once per
    # trained variant, in this process after every unit (nothing else runs beside it),
    # and only where a real low-bit kernel runs (fake quantization computes in fp32, so
    # its latency says nothing).
    if schemes and any(e["real_kernel"] for e in efficiency.values()):
        first: dict[str, Unit] = {}
        for unit in order:
            first.setdefault(ctx.spec.source_unit(unit).variant, ctx.spec.source_unit(unit))
        for source in first.values():
            models = _load_models(ctx, hooks, data, trained, schemes, source)
            example = hooks.example_input(ctx.run, source, data[source.task])
            for precision, m in models.items():
                if precision in efficiency and efficiency[precision]["real_kernel"]:
                    efficiency[precision]["latency_ms"].append(
                        quant.latency_ms(m, example)["median"]
                    )
    for precision, entry in efficiency.items():
        lat = entry.pop("latency_ms")
        entry["latency_ms"] = float(pd.Series(lat).median()) if lat else None
        if precision != "fp32":
            entry["layer_error_mean"] = float(
                pd.Series(qinfo["layer_relative_error"].get(precision, {})).mean()
            )
            # share of parameters the scheme really quantized, and what stayed fp32
            covered = qinfo.get("coverage", {}).get(precision)
            if covered is not None:
                entry["coverage"] = covered["share"]
                entry["full_precision"] = covered["full_precision"]
        if not entry["real_kernel"]:
            entry["latency_note"] = "fake quantization (fp32 compute): no speedup to measure"
    rows = [(unit, precision, k, float(v)) for unit in order for precision, k, v in done[unit]]
    return rows, efficiency, memo.hits, side_by_side


def _pool_workers(ctx, groups: int) -> int:
    """Worker processes for ``groups`` trained objects to evaluate: the executor's pool
    size where ``REPROLAB_EXECUTOR`` is ``pool`` (the default on more than one core),
    more than one object waits and the method has no claim on a wall-clock measurement
    (a unit timed beside another shares the machine; lip_rcp's ``faster``); else 0 (one
    after another in this process: ``local``, or Dask, which trains on its cluster and
    evaluates here)."""
    from reprolab.ops import executor

    if executor.choice() != "pool" or groups < 2:
        return 0
    if any(is_runtime_metric(claim.metric) for claim in ctx.spec.claims):
        return 0
    workers = min(executor.pool_workers(), groups)
    return workers if workers > 1 else 0


def _load_models(ctx, hooks, data, trained: Trained, schemes, source: Unit) -> dict:
    """A trained object at every precision: fp32, the cast copies, the quantized ones."""
    from reprolab.core import precision as casts
    from reprolab.core import quant

    task_data = data[source.task]
    state = trained.checkpoint(source)["state"]
    model = hooks.restore(ctx.run, source, task_data, state)
    models = {"fp32": model}
    for precision in ctx.spec.precisions:
        if precision != "fp32":
            models[precision] = casts.cast(model, precision)
    for scheme in schemes:
        qstate = quant.load_state(ctx.paths.quantized / f"{source.id}.{scheme}.pt")
        arch = hooks.restore(ctx.run, source, task_data, state)
        models[scheme] = quant.restore_quantized(
            arch, scheme, qstate, keep_fp32=ctx.spec.quantization.keep_fp32
        )
    return models


def _evaluate_group(
    ctx, hooks, data, trained: Trained, schemes, source: Unit, group: list[Unit]
) -> list[tuple[Unit, list[tuple[str, str, float]], float]]:
    """The units evaluated on one trained object: (unit, rows, seconds) each, the
    restore and quantization counted in the first unit's seconds."""
    started = time.perf_counter()
    models = _load_models(ctx, hooks, data, trained, schemes, source)
    history = trained[source]
    out = []
    for unit in group:
        expected = set(ctx.spec.variant_metrics(unit.variant))
        unit_rows = []
        for precision, m in models.items():
            metrics = hooks.evaluate_unit(ctx.run, m, unit, data[unit.task], history)
            absent = sorted(expected - set(metrics))
            if absent:
                raise ValueError(
                    f"evaluate@{ctx.slug}: {unit.id} [{precision}] did not return its "
                    f"declared headline metric(s) {absent}"
                )
            unit_rows += [(precision, k, float(v)) for k, v in metrics.items()]
        now = time.perf_counter()
        out.append((unit, unit_rows, now - started))
        started = now
    return out


#: per pool worker: slug -> (ctx, hooks, data, trained, schemes), inherited from the
#: stage process at the fork
_WORKER_STATE: dict[str, tuple] = {}


def _evaluate_remote(slug: str, source_json: dict, group_json: list[dict]) -> list[tuple]:
    """One trained object's units in a pool worker (the stage process writes everything)."""
    ctx, hooks, data, trained, schemes = _WORKER_STATE[slug]
    group = [Unit.from_json(u) for u in group_json]
    results = _evaluate_group(
        ctx, hooks, data, trained, schemes, Unit.from_json(source_json), group
    )
    # units are matched back by id: the stage process's Unit objects are the keys
    return [(unit.id, rows, seconds) for unit, rows, seconds in results]


class UnitMemo:
    """The metrics of units evaluated before, so that the seeds a sequential round adds
    evaluate only the new units. Not versioned (``data/.cache/evaluate/<slug>/``): the
    stage's outputs are the same whether a unit came from here or was evaluated again.
    The key covers everything a unit's metrics depend on: its trained object (the
    training fingerprint of its source unit), the checksums of its checkpoint and
    quantized files, the config without the keys that only choose which units run or
    how they are judged, the schemes, and the code that computes metrics (the method's
    build code, the sandbox and this stage; not the claims and plots)."""

    SKIP = ("evidence", "variants")

    def __init__(self, ctx, schemes: list[str]) -> None:
        import hashlib
        import json

        from reprolab.stages._common import code_digest

        self._ctx = ctx
        self.folder = ctx.root / "data" / ".cache" / "evaluate" / ctx.slug
        self.hits: list[dict] = []
        listing = ctx.paths.checkpoints / "units.json"
        self._train = (io.read_json(listing) if listing.is_file() else {}).get(
            "unit_fingerprints"
        ) or {}
        cfg = {k: v for k, v in ctx.cfg.model_dump(mode="json").items() if k not in self.SKIP}
        blob = json.dumps(
            {
                "cfg": cfg,
                "schemes": schemes,
                "precisions": list(ctx.spec.precisions),
                # what computes a unit's metrics: its build code, the sandbox and this
                # stage, not the claims or plots (their edit reuses every unit's metrics)
                "code": code_digest(
                    ctx.slug,
                    "build",
                    "src/reprolab/core/sandbox.py",
                    "src/reprolab/stages/evaluate.py",
                ),
            },
            sort_keys=True,
        )
        self._common = hashlib.sha256(blob.encode()).hexdigest()
        self._schemes = schemes

    def _key(self, unit: Unit) -> str | None:
        import hashlib

        from reprolab.core import quant

        source = self._ctx.spec.source_unit(unit)
        trained = self._train.get(source.id)
        if trained is None:
            return None
        files = [self._ctx.paths.checkpoints / f"{source.id}.pt"]
        states = [self._ctx.paths.quantized / f"{source.id}.{s}.pt" for s in self._schemes]
        if not all(f.is_file() for f in files + states):
            return None
        files += [f for state in states for f in quant.state_files(state)]
        parts = [self._common, trained, unit.id, *(io.sha256(f) for f in files)]
        return hashlib.sha256("/".join(parts).encode()).hexdigest()[:24]

    def get(self, unit: Unit) -> list[tuple[str, str, float]] | None:
        """The unit's rows from the memo (``None``: evaluate it); a hit is listed in
        ``hits`` with the seconds its evaluation took and when it was made."""
        key = self._key(unit)
        path = self.folder / f"{key}.json"
        if key is None or not path.is_file():
            return None
        try:
            entry = io.read_json(path)
            rows = [(p, m, float(v)) for p, m, v in entry["rows"]]
        except (OSError, ValueError, KeyError, TypeError):
            return None  # an unreadable memo entry is evaluated again
        self.hits.append(
            {
                "unit": unit.id,
                "seconds": float(entry.get("seconds", 0.0)),
                "created": float(entry.get("created", 0.0)),
            }
        )
        return rows

    def put(self, unit: Unit, rows: list[tuple[str, str, float]], seconds: float) -> None:
        key = self._key(unit)
        if key is not None:
            self.folder.mkdir(parents=True, exist_ok=True)
            io.write_json(
                self.folder / f"{key}.json",
                {"unit": unit.id, "rows": rows, "seconds": seconds, "created": time.time()},
            )


def _summary(ctx, table: pd.DataFrame, efficiency: dict, claims: list[dict]) -> dict:
    means = table.groupby(["variant", "precision", "metric"]).value.mean()
    variants: dict = {}
    for (variant, precision, metric), value in means.items():
        variants.setdefault(variant, {}).setdefault(precision, {})[metric] = round(float(value), 6)
    verdicts: dict = {}
    for c in claims:
        verdicts.setdefault(c["precision"], {})[c["id"]] = c["verdict"]
    counts = {v: sum(c["verdict"] == v for c in claims if c["headline"]) for v in VERDICTS}
    quality = {}
    keys = ["task", "variant", "seed", *param_columns(table), "metric"]
    table = table.assign(seed=table.seed.fillna(-1))  # seed-free units align too
    fp32 = table[table.precision == "fp32"].set_index(keys).value
    for precision in efficiency:
        if precision == "fp32":
            continue
        q = table[table.precision == precision].set_index(keys).value
        diff = q - fp32
        quality[precision] = {
            metric: round(float(diff.xs(metric, level="metric").mean()), 6)
            for metric in ctx.spec.metrics
            if metric in diff.index.get_level_values("metric")
        }
    return {
        "profile": ctx.profile,
        "seeds": list(ctx.seeds),
        "variants": variants,
        "efficiency": efficiency,
        "quantized_minus_fp32": quality,
        "claims": verdicts,
        "claim_counts": counts,
        "headline_metric": ctx.spec.metrics[0] if ctx.spec.metrics else None,
    }


def headline(claims: list[dict], summary: dict) -> dict:
    """What `dvc metrics show` prints for the method: one row per method with the same
    named columns for every method, so it fits a screen and diffs between experiments:
    the headline verdict counts (see report.summarize) and the central claim, its
    headline verdict and measured value (every other number lives in metrics.json)."""
    out: dict = dict(summary["claim_counts"])
    central = next((c for c in claims if c.get("central") and c.get("headline")), None)
    if central is not None:
        value = central["measured"].get("value")
        out["central_claim"] = central["id"]
        out["central_verdict"] = central["verdict"]
        if isinstance(value, int | float) and math.isfinite(value):
            out["central_value"] = value
    return out


def _means(table: pd.DataFrame) -> dict:
    out: dict = {}
    for (variant, precision, metric), value in (
        table.groupby(["variant", "precision", "metric"]).value.mean().items()
    ):
        out.setdefault(variant, {}).setdefault(precision, {})[metric] = float(value)
    return out


def _track(tracker, summary, claims, out: Path, latency: dict, runtime_table: pd.DataFrame) -> None:
    flat = {}
    for variant, by_precision in _means(runtime_table).items():
        for precision, metrics in by_precision.items():
            for metric, value in metrics.items():
                flat[f"{variant}.{precision}.{metric}"] = value
    for variant, by_precision in summary["variants"].items():
        for precision, metrics in by_precision.items():
            for metric, value in metrics.items():
                flat[f"{variant}.{precision}.{metric}"] = value
    for precision, entry in summary["efficiency"].items():
        flat[f"{precision}.bytes"] = entry["bytes"]
        flat[f"{precision}.effective_bytes"] = entry["effective_bytes"]
        if latency.get(precision) is not None:
            flat[f"{precision}.latency_ms"] = latency[precision]
        if "layer_error_mean" in entry:
            flat[f"{precision}.layer_error_mean"] = entry["layer_error_mean"]
    per_claim = claim_metrics(claims)
    flat.update(per_claim)
    tags = {}
    for c in claims:
        tags[f"verdict.{c['id']}.{c['precision']}"] = c["verdict"]
        tags[f"paper.{c['id']}"] = str(c.get("paper_value", ""))[:4000]
    # each headline verdict as a word the runs table shows (params are its columns)
    words = verdict_params(claims, tracker.profile)
    tracker.log_metrics(tracker.run_id, flat)
    tracker.set_tags(tracker.run_id, tags)
    tracker.log_params(tracker.run_id, words)
    # the runs table opens on each claim's headline verdict (the word, as a param and as
    # the tag; at fp32, or at the scheme a quantization claim is about), its measured
    # value and the paper's value, then the verdicts at every other precision, then the
    # profile and what a smoke run's verdicts are worth. MLflow lays every metric column
    # out before the param and tag columns, so only the headline values are metric
    # columns: more would push the verdicts out of the window (the rest stay on the run)
    heads = [c for c in claims if c["headline"]]
    rest = [c for c in claims if not c["headline"]]
    columns = []
    for c in heads:
        columns.append(("params", f"verdict.{c['id']}"))
        columns.append(("tags", f"verdict.{c['id']}.{c['precision']}"))
        columns.append(("metrics", f"claim.{c['id']}.{c['precision']}.value"))
        columns.append(("tags", f"paper.{c['id']}"))
    columns += [("tags", f"verdict.{c['id']}.{c['precision']}") for c in rest]
    tracker.share_view([*columns, ("tags", "reprolab.profile"), ("tags", EVIDENCE_TAG)])
    if tracker.parent_id:  # so the chain run can be sorted and filtered by verdict too
        tracker.set_tags(tracker.parent_id, tags)
        tracker.log_metrics(tracker.parent_id, per_claim)
        # a param cannot change: one the chain already holds (a rerun within the same
        # chain run) is left as it is
        held = tracker.client.get_run(tracker.parent_id).data.params
        tracker.log_params(tracker.parent_id, {k: v for k, v in words.items() if k not in held})
    for name in ("metrics.json", "claims.json", "metrics.csv"):
        tracker.log_artifact(tracker.run_id, out / name)
    for plot in sorted((out / "plots").glob("*.png")):
        tracker.log_artifact(tracker.run_id, plot, "plots")
