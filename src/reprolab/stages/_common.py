"""What every per-method stage does before compute: validate, resolve, verify inputs."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from reprolab import config, registry
from reprolab.contract import (
    MethodConfig,
    MethodSpec,
    Run,
    TrainedUnits,
    Unit,
    is_runtime_metric,
)
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
    _assets: dict[str, Path] | None = None
    _run: Run | None = None

    @property
    def seeds(self) -> tuple[int, ...]:
        """Every seed of the method's run: the first look's and those rounds added."""
        return tuple(self.cfg.evidence.seeds(self.project.seeds))

    @property
    def base_seeds(self) -> tuple[int, ...]:
        """The seeds of the first look (every unit has them)."""
        return tuple(self.cfg.evidence.base_seeds(self.project.seeds))

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

    def assets(self) -> dict[str, Path]:
        """The verified folder of every asset the method reads (a missing or corrupt
        one is named, with the command that rebuilds it, before any compute), checked
        once per stage."""
        if self._assets is None:
            self._assets = {n: io.verified_asset(self.root, n) for n in self.spec.assets}
        return self._assets

    @property
    def run(self) -> Run:
        """What the method's hooks get (the assets verified on first use)."""
        if self._run is None:
            self._run = Run(
                spec=self.spec,
                cfg=self.cfg,
                seeds=self.seeds,
                root=self.root,
                assets=self.assets(),
                profile=self.profile,
            )
        return self._run

    def units(self, hooks: ModuleType, tasks: list[str]) -> list[Unit]:
        """Every unit of the run (trained and evaluation-only), checked against the spec:
        the first look's seeds on every unit, a seed a round added only on the units it
        was added to (and the trained units those evaluate)."""
        units = select_units(self.spec, hooks.units(self.run, tasks), self.base_seeds, self.cfg)
        names = set(self.spec.variant_names())
        for unit in units:
            if unit.variant not in names:
                raise ValueError(
                    f"{self.slug}: unit {unit.id} has unknown variant {unit.variant!r}"
                )
        ids = [u.id for u in units]
        if len(ids) != len(set(ids)):
            raise ValueError(f"{self.slug}: units() returned the same unit id twice")
        return units

    def tracker(self, inputs: list[Path]) -> Tracker:
        tracker = open_tracker(self.root, self.slug, self.stage, self.profile, self.spec.title)
        tracker.start(self.params(), inputs=inputs)
        return tracker


def select_units(spec: MethodSpec, units: list[Unit], base: Sequence[int], cfg) -> list[Unit]:
    """``units`` cut to those the run has: seed-free units and the first look's seeds
    everywhere; an added seed where a rule of ``cfg.evidence.added`` names the unit, and
    on the trained unit an evaluation-only one it keeps evaluates."""
    rules = cfg.evidence.added
    base = set(base)
    kept = [
        u for u in units if u.seed is None or u.seed in base or any(r.matches(u) for r in rules)
    ]
    sources = {spec.source_unit(u) for u in kept}
    return [u for u in units if u in kept or u in sources]


def split_timings(meta: Mapping[str, Any], prefix: str = "") -> tuple[dict, dict[str, float]]:
    """(what a versioned manifest keeps, timings): a numeric value under a timing key
    (``seconds``, or any name :func:`~reprolab.contract.is_runtime_metric` accepts), at
    any depth of ``meta``, differs on every run, so it goes to MLflow and the log (named
    by its dotted path) and not into the manifest, whose hash must be the same on a
    rebuild."""
    kept: dict = {}
    timings: dict[str, float] = {}
    for key, value in meta.items():
        name = f"{prefix}{key}"
        timing = key == "seconds" or is_runtime_metric(str(key))
        if timing and isinstance(value, int | float) and not isinstance(value, bool):
            timings[name] = float(value)
        elif isinstance(value, Mapping):
            kept[key], inner = split_timings(value, f"{name}.")
            timings.update(inner)
        else:
            kept[key] = value
    return kept, timings


def context(slug: str, stage: str, root: Path) -> StageContext:
    """Validate params.yaml, the slug and the tracking store; nothing is computed or
    written yet (beyond the folder of a SQLite store)."""
    registry.check_slug(slug)
    project = config.load(root / "params.yaml")
    # An unreachable tracking server is named now, within seconds, not after the heavy
    # imports (torch) and input checks that come before a stage opens its run.
    load_env(root)
    preflight(os.environ["MLFLOW_TRACKING_URI"])
    spec = registry.get(slug)
    cfg = project.method(slug)
    return StageContext(
        root=root,
        slug=slug,
        stage=stage,
        project=project,
        spec=spec,
        cfg=cfg,
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
    return [Unit.from_json(u) for u in listing["units"]]


def unit_params(unit: Unit) -> dict[str, Any]:
    """MLflow params of a unit's run: its key and its parameters."""
    return {
        "task": unit.task,
        "variant": unit.variant,
        "seed": "none" if unit.seed is None else unit.seed,
        **{f"unit.{k}": v for k, v in unit.params},
    }


def unit_label(unit: Unit) -> str:
    """A unit's MLflow run name: what tells it apart first (variant, seed), then its task
    and parameters; the full id is the ``reprolab.unit`` tag."""
    seed = "" if unit.seed is None else f" s{unit.seed}"
    params = ",".join(f"{k}={v}" for k, v in unit.params)
    return f"{unit.variant}{seed} · {unit.task}" + (f" · {params}" if params else "")


def unit_tags(unit: Unit) -> dict[str, str]:
    return {
        "reprolab.unit": unit.id,
        "reprolab.seed": "none (seed-free)" if unit.seed is None else str(unit.seed),
    }


class Trained(TrainedUnits):
    """The trained units of a method, read from its checkpoints: unit -> training
    history, ``model(unit)`` restores a unit's trained object, ``checkpoint(unit)`` is
    the saved state and history (each file read once)."""

    def __init__(self, ctx: StageContext, hooks: ModuleType, data: PreparedData, units: list[Unit]):
        self._ctx, self._hooks, self._data = ctx, hooks, data
        self._ckpt: dict[Unit, dict] = {}
        super().__init__(_LazyHistories(self, units), self._restore)

    def checkpoint(self, unit: Unit) -> dict:
        import torch

        if unit not in self._ckpt:
            path = self._ctx.paths.checkpoints / f"{unit.id}.pt"
            if not path.is_file():
                raise io.CorruptDataError(
                    f"{path} is missing. {regenerate_hint('train', self._ctx.slug)}"
                )
            self._ckpt[unit] = torch.load(path, weights_only=True)
        return self._ckpt[unit]

    def _restore(self, unit: Unit) -> Any:
        source = self._ctx.spec.source_unit(unit)
        return self._hooks.restore(
            self._ctx.run, source, self._data[source.task], self.checkpoint(source)["state"]
        )


class _LazyHistories(Mapping):
    def __init__(self, trained: Trained, units: list[Unit]):
        self._trained, self._units = trained, list(units)

    def __getitem__(self, unit: Unit) -> list[dict]:
        return self._trained.checkpoint(self._trained._ctx.spec.source_unit(unit))["history"]

    def __iter__(self) -> Iterator[Unit]:
        return iter(self._units)

    def __len__(self) -> int:
        return len(self._units)


def code_digest(slug: str, which: str, *extra: str) -> str:
    """Digest of the code ``slug``'s stages of set ``which`` run (``build`` or
    ``evaluate``, see :mod:`reprolab.core.fingerprint`) plus the ``extra`` files (paths
    under the project), as the running package has it: a comment edit keeps it."""
    from reprolab.core.fingerprint import fingerprint, package_root

    return fingerprint(package_root(), slug, which, extra)["digest"]
