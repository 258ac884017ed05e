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


def _check(name: str, valid: list[str], kind: str) -> str:
    if name not in valid:
        raise UnknownMethodError(f"unknown {kind} {name!r}; registered {kind}s: {', '.join(valid)}")
    return name


def _load(package: str, name: str, attr: str, spec_type: type, key: str):
    """``reprolab.<package>.<name>.<attr>``, checked to be a ``spec_type`` whose ``key``
    field equals ``name`` (the folder or module name is the one identifier)."""
    module = importlib.import_module(f"reprolab.{package}.{name}")
    spec = getattr(module, attr, None)
    if not isinstance(spec, spec_type):
        raise TypeError(f"reprolab.{package}.{name} must define {attr} = {spec_type.__name__}(...)")
    if getattr(spec, key) != name:
        raise ValueError(
            f"reprolab.{package}.{name} declares {key} {getattr(spec, key)!r}; they must match"
        )
    return spec


def check_slug(slug: str) -> str:
    return _check(slug, slugs(), "method")


@cache
def get(slug: str) -> MethodSpec:
    check_slug(slug)
    spec = _load("methods", slug, "SPEC", MethodSpec, "slug")
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
    known = (*spec.precisions, *spec.quantization.schemes)
    _check_claims(spec)
    for claim in spec.claims:
        named = getattr(claim, "precision", None)
        if named is not None and named not in known:
            raise ValueError(
                f"{spec.slug}: claim {claim.id!r} is about precision {named!r}, not one of "
                f"the method's precisions and schemes: {', '.join(known)}"
            )


def _check_claims(spec: MethodSpec) -> None:
    """Every claim states its smallest effect that matters and where its paper value
    comes from; ids are unique; exactly one claim is the paper's central claim."""
    from reprolab.evidence.judging.claims import NOT_IN_TEXT, SOURCES

    ids = [c.id for c in spec.claims]
    if len(ids) != len(set(ids)):
        dup = sorted({i for i in ids if ids.count(i) > 1})
        raise ValueError(f"{spec.slug}: claim ids repeat: {', '.join(dup)}")
    for claim in spec.claims:
        where = f"{spec.slug}: claim {claim.id!r}"
        effect = getattr(claim, "effect", None)
        if not isinstance(effect, int | float) or isinstance(effect, bool) or effect < 0:
            raise ValueError(
                f"{where}: effect must be the smallest effect that matters, a number >= 0 on "
                f"the scale of the check's value (got {effect!r})"
            )
        if not str(getattr(claim, "effect_basis", "")).strip():
            raise ValueError(
                f"{where}: effect_basis is empty; say where the effect comes from (the "
                "paper's number, or a declared margin and why)"
            )
        source = str(getattr(claim, "source", ""))
        if source != NOT_IN_TEXT and not source.startswith(SOURCES):
            raise ValueError(
                f"{where}: source {source!r} must start with one of {', '.join(SOURCES)} "
                f"(where the paper value comes from), or be {NOT_IN_TEXT!r}"
            )
    central = [c.id for c in spec.claims if getattr(c, "central", False)]
    if len(central) != 1:
        raise ValueError(
            f"{spec.slug}: exactly one claim must be central (central=True: the abstract's "
            f"main empirical claim); found {len(central)}"
            + (f": {', '.join(central)}" if central else "")
        )


def asset_names() -> list[str]:
    """Registered shared assets (modules under ``reprolab/assets/``), sorted."""
    if not _ASSETS_DIR.is_dir():
        return []
    return sorted(
        p.stem for p in _ASSETS_DIR.glob("*.py") if p.is_file() and not p.stem.startswith("_")
    )


def check_asset(name: str) -> str:
    return _check(name, asset_names(), "asset")


@cache
def asset(name: str) -> AssetSpec:
    check_asset(name)
    return _load("assets", name, "ASSET", AssetSpec, "name")


def hooks(slug: str) -> ModuleType:
    """Import the heavy implementation module of a method (torch and friends)."""
    return importlib.import_module(get(slug).hooks)
