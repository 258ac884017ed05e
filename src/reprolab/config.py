"""params.yaml -> validated, typed config, before any compute.

Layout of params.yaml::

    profile: smoke            # smoke | paper
    seeds:
      smoke: [0, 1]
      paper: [0, 1, 2, 3, 4]
    methods:
      <slug>:                 # one section per method to run (may be empty: {}); a
                              # registered method without a section is not run
        smoke: {key: value}   # overrides of the method's defaults for this profile
        paper: {key: value}   # e.g. quantization: [int8_dynamic, rtn_w4a4, bitdgdm_w4a4]

A method's defaults live in code (its ``config_model`` plus ``profile_defaults``);
params.yaml only overrides them. Every error names the key at fault and what is allowed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from reprolab import registry
from reprolab.contract import MethodConfig
from reprolab.core import schemes

PROFILES = ("smoke", "paper")
TOP_LEVEL_KEYS = ("profile", "seeds", "methods")


class ConfigError(ValueError):
    """params.yaml is invalid; the message names the key and the allowed values."""


@dataclass(frozen=True)
class ProjectConfig:
    profile: str
    seeds: tuple[int, ...]
    methods: dict[str, MethodConfig]  # active profile's config of every method
    raw: dict[str, Any]

    def method(self, slug: str) -> MethodConfig:
        registry.check_slug(slug)
        if slug not in self.methods:
            raise ConfigError(
                f"params.yaml: methods.{slug}: method {slug!r} is registered but has no "
                f"section under methods, so the pipeline does not run it; add `{slug}: {{}}` "
                "under methods to run it with its defaults"
            )
        return self.methods[slug]

    @property
    def slugs(self) -> list[str]:
        """The methods this project runs: those with a section in params.yaml, in order."""
        return list(self.methods)


def load(path: Path) -> ProjectConfig:
    if not path.is_file():
        raise ConfigError(f"{path} not found: the project needs a params.yaml at its root")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from exc
    return validate(raw, source=str(path))


def validate(raw: Any, source: str = "params.yaml") -> ProjectConfig:
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: expected a mapping with keys {', '.join(TOP_LEVEL_KEYS)}")
    _no_unknown(raw, TOP_LEVEL_KEYS, prefix="", source=source)
    for key in TOP_LEVEL_KEYS:
        if key not in raw:
            raise ConfigError(
                f"{source}: missing key '{key}' (required: {', '.join(TOP_LEVEL_KEYS)})"
            )

    profile = raw["profile"]
    if profile not in PROFILES:
        raise ConfigError(
            f"{source}: profile: {profile!r} is not allowed; allowed values: {', '.join(PROFILES)}"
        )
    seeds_by_profile = _validate_seeds(raw["seeds"], source)

    sections = raw["methods"]
    if not isinstance(sections, dict):
        raise ConfigError(f"{source}: methods: expected a mapping of method slug -> section")
    known = registry.slugs()
    for slug in sections:
        if slug not in known:
            raise ConfigError(
                f"{source}: methods.{slug}: unknown method; registered methods: {', '.join(known)}"
            )
    if not sections:
        raise ConfigError(f"{source}: methods: no method to run; registered: {', '.join(known)}")
    methods: dict[str, MethodConfig] = {}
    for slug in sections:
        section = sections[slug] or {}
        if not isinstance(section, dict):
            raise ConfigError(f"{source}: methods.{slug}: expected a mapping with keys smoke/paper")
        _no_unknown(section, PROFILES, prefix=f"methods.{slug}.", source=source)
        for prof in PROFILES:  # validate both profiles so a bad paper key fails in smoke too
            cfg = method_config(slug, prof, section.get(prof) or {}, source)
            if prof == profile:
                methods[slug] = cfg
    return ProjectConfig(
        profile=profile, seeds=tuple(seeds_by_profile[profile]), methods=methods, raw=raw
    )


def method_config(slug: str, profile: str, overrides: dict, source: str) -> MethodConfig:
    spec = registry.get(slug)
    if not isinstance(overrides, dict):
        raise ConfigError(f"{source}: methods.{slug}.{profile}: expected a mapping")
    merged = {**spec.profile_defaults.get(profile, {}), **overrides}
    try:
        cfg = spec.config_model(**merged)
    except ValidationError as exc:
        raise ConfigError(
            _explain(exc, spec.config_model, f"methods.{slug}.{profile}", source)
        ) from None
    _check_quantization(spec, cfg, f"methods.{slug}.{profile}.quantization", source)
    return cfg


def _check_quantization(spec, cfg: MethodConfig, key: str, source: str) -> None:
    if cfg.quantization is None:
        return
    if cfg.quantization and not spec.quantization.applies:
        raise ConfigError(
            f"{source}: {key}: quantization does not apply to {spec.slug}: "
            f"{spec.quantization.reason}"
        )
    if len(set(cfg.quantization)) != len(cfg.quantization):
        raise ConfigError(f"{source}: {key}: a scheme is listed twice: {cfg.quantization}")
    for i, name in enumerate(cfg.quantization):
        try:
            schemes.parse(name)
        except schemes.UnknownSchemeError as exc:
            raise ConfigError(f"{source}: {key}[{i}]: {exc}") from None


def _validate_seeds(seeds: Any, source: str) -> dict[str, list[int]]:
    if not isinstance(seeds, dict):
        raise ConfigError(f"{source}: seeds: expected a mapping with keys {', '.join(PROFILES)}")
    _no_unknown(seeds, PROFILES, prefix="seeds.", source=source)
    out = {}
    for prof in PROFILES:
        value = seeds.get(prof)
        if value is None:
            raise ConfigError(f"{source}: missing key 'seeds.{prof}' (a list of seeds)")
        ok = (
            isinstance(value, list)
            and value
            and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in value)
        )
        if not ok:
            raise ConfigError(
                f"{source}: seeds.{prof}: expected a non-empty list of integers >= 0, got {value!r}"
            )
        if len(set(value)) != len(value):
            raise ConfigError(f"{source}: seeds.{prof}: seeds must be distinct, got {value!r}")
        if len(value) < 2:
            raise ConfigError(
                f"{source}: seeds.{prof}: verdicts need an interval, so at least 2 seeds; got {value!r}"
            )
        out[prof] = value
    return out


def _no_unknown(mapping: dict, allowed: tuple[str, ...], prefix: str, source: str) -> None:
    for key in mapping:
        if key not in allowed:
            raise ConfigError(
                f"{source}: {prefix}{key}: unknown key; allowed keys: {', '.join(allowed)}"
            )


def _explain(exc: ValidationError, model: type[MethodConfig], prefix: str, source: str) -> str:
    lines = []
    fields = sorted(model.model_fields)
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        key = f"{prefix}.{loc}" if loc else prefix
        if err["type"] == "extra_forbidden":
            lines.append(f"{key}: unknown key; allowed keys: {', '.join(fields)}")
        elif err["type"] == "missing":
            lines.append(f"{key}: missing key")
        else:
            lines.append(f"{key}: {err['msg']} (got {err.get('input')!r})")
    return f"{source}: " + "; ".join(lines)
