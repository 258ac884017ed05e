"""prepare@<slug>: build the method's datasets into data/prepared/<slug>/ (checksummed)."""

from __future__ import annotations

import time
from pathlib import Path

from reprolab.core import io
from reprolab.core.tracking import log, open_tracker
from reprolab.stages._common import context, split_timings


def run(slug: str, root: Path) -> dict:
    ctx = context(slug, "prepare", root)
    assets = ctx.assets()  # verified before any compute; named with their rebuild command
    hooks = ctx.hooks()
    # An unreachable tracking store fails first; then the hook checks its sources (and
    # raises with install instructions) before building. Neither records an MLflow run:
    # the run starts once the datasets are built, like the other stages start theirs
    # once their inputs are verified.
    tracker = open_tracker(root, slug, "prepare", ctx.profile, ctx.spec.title)
    log(f"prepare@{slug}: building datasets ({ctx.profile} profile)")
    started = time.perf_counter()
    datasets, meta = hooks.prepare(ctx.run, ctx.paths.raw)
    meta, timings = split_timings(meta)
    build_seconds = time.perf_counter() - started
    tracker.start(ctx.params(), inputs=[])
    ok = False
    try:
        with io.atomic_dir(ctx.paths.prepared) as tmp:
            for name, arrays in datasets.items():
                io.save_arrays(tmp, name, arrays)
            # The assets' own manifests are hashed in, so every later stage of this
            # method (which depends on the prepared folder) reruns when an asset changes.
            used = {name: io.sha256(folder / io.MANIFEST) for name, folder in assets.items()}
            io.write_manifest(
                tmp,
                {**meta, "profile": ctx.profile, "tasks": sorted(datasets), "assets": used},
            )
        summary = {
            "tasks": len(datasets),
            **{f"n_{k}": v for k, v in meta.get("sizes", {}).items()},
        }
        tracker.log_metrics(
            tracker.run_id,
            {"tasks": len(datasets), "prepare_seconds": build_seconds, **timings},
        )
        tracker.set_tags(tracker.run_id, {"reprolab.tasks": ",".join(sorted(datasets))[:5000]})
        log(f"prepare@{slug}: wrote {len(datasets)} datasets to {ctx.paths.prepared}")
        ok = True
        return summary
    finally:
        tracker.finish(ok)
