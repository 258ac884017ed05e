"""The pipeline's stages as plain functions: ``run_stage`` is what DVC commands
(through the CLI), Prefect tasks and tests all call."""

from __future__ import annotations

import importlib
from pathlib import Path

from reprolab.paths import STAGES

ALL_STAGES = ("validate", "assets", *STAGES, "report")


def run_stage(stage: str, slug: str | None, root: Path) -> dict:
    """Run one stage for one method (``slug`` is None for the report; for ``assets`` it
    is the asset's name)."""
    if stage not in ALL_STAGES:
        raise ValueError(f"unknown stage {stage!r}; stages: {', '.join(ALL_STAGES)}")
    module = importlib.import_module(f"reprolab.stages.{stage}")
    if stage in ("validate", "report"):
        return module.run(root)
    if stage == "assets":
        if slug is None:
            raise ValueError("stage 'assets' needs an asset name")
        return module.run(slug, root)
    if slug is None:
        raise ValueError(f"stage {stage!r} needs a method slug")
    return module.run(slug, root)
