"""assets@<name>: build one shared asset into data/assets/<name>/ (checksummed).

An asset is built here and nowhere else: the stages of the methods that read it verify
its manifest and fail, naming this stage, when it is missing or corrupt.
"""

from __future__ import annotations

import importlib
import os
import time
from pathlib import Path

from reprolab import config, registry
from reprolab.core import io
from reprolab.core.tracking import load_env, log, open_tracker, preflight
from reprolab.paths import asset_dir
from reprolab.stages._common import split_timings

EXPERIMENT = "assets"


def run(name: str, root: Path) -> dict:
    registry.check_asset(name)
    project = config.load(root / "params.yaml")
    cfg = project.asset(name)
    spec = registry.asset(name)
    load_env(root)
    preflight(os.environ["MLFLOW_TRACKING_URI"])
    module, func = spec.build.split(":")
    build = getattr(importlib.import_module(module), func)
    tracker = open_tracker(
        root, EXPERIMENT, f"asset:{name}", project.profile, "Shared assets that methods read"
    )
    log(f"assets@{name}: building ({project.profile} profile)")
    started = time.perf_counter()
    out = asset_dir(root, name)
    parent_existed = out.parent.exists()
    try:
        with io.atomic_dir(out) as tmp:
            meta, timings = split_timings(build(cfg, tmp, root / "data" / "raw"))
            io.write_manifest(tmp, {**meta, "asset": name, "config": cfg.model_dump(mode="json")})
    except BaseException:
        # a failed build (a missing source, say) leaves the workspace as it was
        if not parent_existed and out.parent.is_dir() and not any(out.parent.iterdir()):
            out.parent.rmdir()
        raise
    seconds = time.perf_counter() - started
    tracker.start({"profile": project.profile, "asset": cfg.model_dump(mode="json")}, chain=False)
    try:
        manifest = io.read_json(out / io.MANIFEST)
        size = sum(f["bytes"] for f in manifest["files"].values())
        tracker.log_metrics(
            tracker.run_id, {"build_seconds": seconds, "bytes": float(size), **timings}
        )
        parts = "".join(f", {k} {v:.1f}" for k, v in timings.items())
        log(
            f"assets@{name}: {len(manifest['files'])} files, {size:,} bytes in {seconds:.1f}s{parts}"
        )
    finally:
        tracker.finish(True)
    return {"files": len(manifest["files"]), "bytes": size}
