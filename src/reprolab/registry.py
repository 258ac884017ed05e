"""Slug -> method spec, discovered from the folders under ``reprolab/methods/``.

Discovery reads folder names only; a method package is imported the first time its
spec is asked for. Adding a method therefore needs no edit here: create
``methods/<slug>/`` with an ``__init__.py`` exposing ``SPEC``.
"""

from __future__ import annotations

import importlib
from functools import cache
from pathlib import Path
from types import ModuleType

from reprolab.contract import AssetSpec, MethodSpec

_METHODS_DIR = Path(__file__).parent / "methods"
_ASSETS_DIR = Path(__file__).parent / "assets"


class UnknownMethodError(KeyError):
    def __str__(self) -> str:  # KeyError quotes its message; we want plain text
        return str(self.args[0])


def slugs() -> list[str]:
    """Registered method slugs, sorted."""
    return sorted(
        p.name
        for p in _METHODS_DIR.iterdir()
        if p.is_dir() and (p / "__init__.py").is_file() and not p.name.startswith("_")
    )


def check_slug(slug: str) -> str:
    valid = slugs()
    if slug not in valid:
        raise UnknownMethodError(f"unknown method {slug!r}; registered methods: {', '.join(valid)}")
    return slug


@cache
def get(slug: str) -> MethodSpec:
    check_slug(slug)
    module = importlib.import_module(f"reprolab.methods.{slug}")
    spec = getattr(module, "SPEC", None)
    if not isinstance(spec, MethodSpec):
        raise TypeError(f"reprolab.methods.{slug} must define SPEC = MethodSpec(...)")
    if spec.slug != slug:
        raise ValueError(f"method folder {slug!r} declares slug {spec.slug!r}; they must match")
    _check_spec(spec)
    return spec


def _check_spec(spec: MethodSpec) -> None:
    """Mistakes in a spec that would only show mid-pipeline are named at import."""
    names = spec.variant_names()
    if len(names) != len(set(names)):
        raise ValueError(f"{spec.slug}: variant names repeat: {names}")
    for v in spec.variants:
        if v.reuses is not None and v.reuses not in names:
            raise ValueError(
                f"{spec.slug}: variant {v.name!r} reuses unknown variant {v.reuses!r}; "
                f"variants: {', '.join(names)}"
            )
        spec.trained_variant(v.name)  # raises on a circular reuse
        if v.metrics is not None and not set(v.metrics) <= set(spec.metrics):
            extra = sorted(set(v.metrics) - set(spec.metrics))
            raise ValueError(f"{spec.slug}: variant {v.name!r} declares unknown metrics {extra}")
    if not any(not v.evaluation_only for v in spec.variants):
        raise ValueError(f"{spec.slug}: every variant is evaluation-only; nothing is trained")
    for name in spec.assets:
        check_asset(name)


def asset_names() -> list[str]:
    """Registered shared assets (modules under ``reprolab/assets/``), sorted."""
    if not _ASSETS_DIR.is_dir():
        return []
    return sorted(
        p.stem for p in _ASSETS_DIR.glob("*.py") if p.is_file() and not p.stem.startswith("_")
    )


def check_asset(name: str) -> str:
    valid = asset_names()
    if name not in valid:
        raise UnknownMethodError(f"unknown asset {name!r}; registered assets: {', '.join(valid)}")
    return name


@cache
def asset(name: str) -> AssetSpec:
    check_asset(name)
    module = importlib.import_module(f"reprolab.assets.{name}")
    spec = getattr(module, "ASSET", None)
    if not isinstance(spec, AssetSpec):
        raise TypeError(f"reprolab.assets.{name} must define ASSET = AssetSpec(...)")
    if spec.name != name:
        raise ValueError(f"asset module {name!r} declares name {spec.name!r}; they must match")
    return spec


def hooks(slug: str) -> ModuleType:
    """Import the heavy implementation module of a method (torch and friends)."""
    return importlib.import_module(get(slug).hooks)
