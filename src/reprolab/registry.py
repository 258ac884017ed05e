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

from reprolab.contract import MethodSpec

_METHODS_DIR = Path(__file__).parent / "methods"


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
    return spec


def hooks(slug: str) -> ModuleType:
    """Import the heavy implementation module of a method (torch and friends)."""
    return importlib.import_module(get(slug).hooks)
