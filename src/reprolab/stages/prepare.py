"""prepare@<slug>: build the method's datasets into data/prepared/<slug>/ (checksummed)."""

from __future__ import annotations

from pathlib import Path

from reprolab.core import io
from reprolab.core.tracking import log
from reprolab.stages._common import context


def run(slug: str, root: Path) -> dict:
    ctx = context(slug, "prepare", root)
    hooks = ctx.hooks()
    # The hook checks its sources (and raises with install instructions) before building.
    tracker = ctx.tracker(inputs=[])
    ok = False
    try:
        log(f"prepare@{slug}: building datasets ({ctx.profile} profile)")
        datasets, meta = hooks.prepare(ctx.cfg, ctx.seeds, ctx.paths.raw)
        with io.atomic_dir(ctx.paths.prepared) as tmp:
            for name, arrays in datasets.items():
                io.save_arrays(tmp, name, arrays)
            io.write_manifest(tmp, {**meta, "profile": ctx.profile, "tasks": sorted(datasets)})
        summary = {
            "tasks": len(datasets),
            **{f"n_{k}": v for k, v in meta.get("sizes", {}).items()},
        }
        tracker.log_metrics(tracker.run_id, {"tasks": len(datasets)})
        tracker.set_tags(tracker.run_id, {"reprolab.tasks": ",".join(sorted(datasets))[:5000]})
        log(f"prepare@{slug}: wrote {len(datasets)} datasets to {ctx.paths.prepared}")
        ok = True
        return summary
    finally:
        tracker.finish(ok)
