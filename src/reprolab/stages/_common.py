"""What every per-method stage does before compute: validate, resolve, verify inputs."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from reprolab import config, registry
from reprolab.contract import MethodConfig, MethodSpec, Unit
from reprolab.core import io
from reprolab.core.tracking import Tracker, load_env, open_tracker, preflight
from reprolab.paths import MethodPaths


@dataclass
class StageContext:
    root: Path
    slug: str
    stage: str
    project: config.ProjectConfig
    spec: MethodSpec
    cfg: MethodConfig
    paths: MethodPaths

    @property
    def seeds(self) -> tuple[int, ...]:
        return self.project.seeds

    @property
    def profile(self) -> str:
        return self.project.profile

    def hooks(self) -> ModuleType:
        return registry.hooks(self.slug)

    def params(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "seeds": list(self.seeds),
            "method": self.cfg.model_dump(mode="json"),
        }

    def tracker(self, inputs: list[Path]) -> Tracker:
        tracker = open_tracker(self.root, self.slug, self.stage, self.profile)
        tracker.start(self.params(), inputs=inputs)
        return tracker


def context(slug: str, stage: str, root: Path) -> StageContext:
    """Validate params.yaml, the slug and the tracking store; nothing is computed or
    written yet (beyond the folder of a SQLite store)."""
    registry.check_slug(slug)
    project = config.load(root / "params.yaml")
    # An unreachable tracking server is named now, within seconds, not after the heavy
    # imports (torch) and input checks that come before a stage opens its run.
    load_env(root)
    preflight(os.environ["MLFLOW_TRACKING_URI"])
    return StageContext(
        root=root,
        slug=slug,
        stage=stage,
        project=project,
        spec=registry.get(slug),
        cfg=project.method(slug),
        paths=MethodPaths(root, slug),
    )


def regenerate_hint(stage: str, slug: str) -> str:
    return f"Regenerate it with `dvc repro -f {stage}@{slug}`."


class PreparedData:
    """Checksum-verified access to a method's prepared datasets (one per task)."""

    def __init__(self, paths: MethodPaths) -> None:
        self.folder = paths.prepared
        self.manifest = io.verify_folder(self.folder, regenerate_hint("prepare", paths.slug))
        self._cache: tuple[str, dict] | None = None

    @property
    def tasks(self) -> list[str]:
        return [Path(name).stem for name in self.manifest["files"] if name.endswith(".npz")]

    @property
    def meta(self) -> dict:
        return self.manifest["meta"]

    def __getitem__(self, task: str) -> dict:
        if self._cache is None or self._cache[0] != task:
            self._cache = (task, io.load_arrays(self.folder / f"{task}.npz"))
        return self._cache[1]


def read_units(folder: Path, stage: str, slug: str) -> list[Unit]:
    listing = io.read_json(folder / "units.json") if (folder / "units.json").is_file() else None
    if listing is None:
        raise io.CorruptDataError(
            f"{folder / 'units.json'} is missing: {stage}@{slug} has not finished. "
            + regenerate_hint(stage, slug)
        )
    return [Unit(**u) for u in listing["units"]]


def code_digest(*folders: Path) -> str:
    """Hash of the Python sources a stage's results depend on (for resume safety)."""
    digest = hashlib.sha256()
    for folder in folders:
        files = [folder] if folder.is_file() else sorted(folder.rglob("*.py"))
        for path in files:
            rel = path.name if folder.is_file() else path.relative_to(folder).as_posix()
            digest.update(rel.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()
