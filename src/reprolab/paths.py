"""Where things live on disk. Every stage gets its paths from here, never by hand."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

STAGES = ("prepare", "train", "quantize", "evaluate")


def project_root(start: Path | None = None) -> Path:
    """The folder holding params.yaml and dvc.yaml (``REPROLAB_ROOT`` overrides)."""
    env = os.environ.get("REPROLAB_ROOT")
    if env:
        return Path(env).resolve()
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "params.yaml").is_file() and (folder / "dvc.yaml").is_file():
            return folder
    raise FileNotFoundError(
        f"no reprolab project (params.yaml + dvc.yaml) at or above {here}; "
        "run from the project root or set REPROLAB_ROOT"
    )


@dataclass(frozen=True)
class MethodPaths:
    """The data folders of one method, all relative to the project root."""

    root: Path
    slug: str

    @property
    def raw(self) -> Path:
        return self.root / "data" / "raw"

    @property
    def prepared(self) -> Path:
        return self.root / "data" / "prepared" / self.slug

    @property
    def checkpoints(self) -> Path:
        return self.root / "data" / "checkpoints" / self.slug

    @property
    def quantized(self) -> Path:
        return self.root / "data" / "quantized" / self.slug

    @property
    def eval(self) -> Path:
        return self.root / "data" / "eval" / self.slug

    @property
    def runtime(self) -> Path:
        """Wall-clock measurements and tracking ids of the latest run: not versioned
        (they differ on every run), read by the report."""
        return self.root / "data" / "runtime" / self.slug

    def partial(self, stage: str) -> Path:
        """Work in progress of a stage (resumable units); not a DVC output."""
        return self.root / "data" / ".partial" / stage / self.slug


def asset_dir(root: Path, name: str) -> Path:
    """Where the shared asset ``name`` is built (by the DVC stage ``assets@<name>``)."""
    return root / "data" / "assets" / name


def reports_dir(root: Path) -> Path:
    return root / "data" / "reports"
