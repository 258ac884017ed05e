"""params.yaml -> validated, typed config, before any compute.

Layout of params.yaml::

    profile: smoke            # smoke | paper
    seeds:
      smoke: [0, 1]
      paper: [0, 1, 2, 3, 4]
    trainer:                  # Lightning's devices (optional; see contract.TrainerConfig)
      smoke: {}               # e.g. {accelerator: gpu, precision: bf16-mixed}
      paper: {}
    evidence:                 # replicates (optional; see contract.EvidenceConfig)
      smoke: {}               # e.g. {max_seeds: 20, budget_minutes: 120}
      paper: {}
    assets:                   # shared assets (optional): built once by assets@<name>
      <name>: {smoke: {}, paper: {}}
    methods:
      <slug>:                 # one section per method to run (may be empty: {}); a
                              # registered method without a section is not run
        smoke: {key: value}   # overrides of the method's defaults for this profile
        paper: {key: value}   # e.g. quantization: [int8_dynamic, rtn_w4a4, bitdgdm_w4a4]
                              # or trainer: {devices: 2} (over the trainer section)

A method's defaults live in code (its ``config_model`` plus ``profile_defaults``);
params.yaml only overrides them. Every error names the key at fault and what is allowed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from reprolab import registry
from reprolab.contract import EvidenceConfig, MethodConfig, StrictConfig, TrainerConfig
from reprolab.core import schemes

PROFILES = ("smoke", "paper")
TOP_LEVEL_KEYS = ("profile", "seeds", "trainer", "evidence", "assets", "methods")
REQUIRED_KEYS = ("profile", "seeds", "methods")


class ConfigError(ValueError):
    """params.yaml is invalid; the message names the key and the allowed values."""


@dataclass(frozen=True)
class ProjectConfig:
    profile: str
    seeds: tuple[int, ...]
    methods: dict[str, MethodConfig]  # active profile's config of every method
    raw: dict[str, Any]
    assets: dict[str, StrictConfig] = field(default_factory=dict)  # active profile's

    def asset(self, name: str) -> StrictConfig:
        registry.check_asset(name)
        if name not in self.assets:
            raise ConfigError(
                f"params.yaml: assets.{name}: no section for asset {name!r}; add "
                f"`{name}: {{}}` under assets"
            )
        return self.assets[name]

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
    for key in REQUIRED_KEYS:
        if key not in raw:
            raise ConfigError(
                f"{source}: missing key '{key}' (required: {', '.join(REQUIRED_KEYS)})"
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
    trainers = _validate_trainer(raw.get("trainer") or {}, source)
    evidence = _validate_evidence(raw.get("evidence") or {}, source)
    methods: dict[str, MethodConfig] = {}
    for slug in sections:
        section = sections[slug] or {}
        if not isinstance(section, dict):
            raise ConfigError(f"{source}: methods.{slug}: expected a mapping with keys smoke/paper")
        _no_unknown(section, PROFILES, prefix=f"methods.{slug}.", source=source)
        for prof in PROFILES:  # validate both profiles so a bad paper key fails in smoke too
            cfg = method_config(
                slug, prof, section.get(prof) or {}, source, trainers[prof], evidence[prof]
            )
            _check_evidence(
                slug, cfg, seeds_by_profile[prof], f"methods.{slug}.{prof}.evidence", source
            )
            if prof == profile:
                methods[slug] = cfg
    assets = _validate_assets(raw.get("assets") or {}, profile, source)
    if not assets:
        # dvc.yaml's prepare stages depend on data/assets as a whole (DVC cannot take
        # a per-method list of deps), so at least one asset must be built
        raise ConfigError(
            f"{source}: assets: no asset section; keep at least `images: {{}}` under assets "
            f"(registered assets: {', '.join(registry.asset_names())})"
        )
    for slug in methods:
        for name in registry.get(slug).assets:
            if name not in assets:
                raise ConfigError(
                    f"{source}: methods.{slug}: reads the asset {name!r}, which has no section "
                    f"under assets; add `{name}: {{}}` under assets"
                )
    return ProjectConfig(
        profile=profile,
        seeds=tuple(seeds_by_profile[profile]),
        methods=methods,
        raw=raw,
        assets=assets,
    )


def _validate_assets(sections: Any, profile: str, source: str) -> dict[str, StrictConfig]:
    if not isinstance(sections, dict):
        raise ConfigError(f"{source}: assets: expected a mapping of asset name -> section")
    known = registry.asset_names()
    out = {}
    for name, section in sections.items():
        if name not in known:
            raise ConfigError(
                f"{source}: assets.{name}: unknown asset; registered assets: {', '.join(known)}"
            )
        section = section or {}
        if not isinstance(section, dict):
            raise ConfigError(f"{source}: assets.{name}: expected a mapping with keys smoke/paper")
        _no_unknown(section, PROFILES, prefix=f"assets.{name}.", source=source)
        for prof in PROFILES:
            cfg = asset_config(name, prof, section.get(prof) or {}, source)
            if prof == profile:
                out[name] = cfg
    return out


def asset_config(name: str, profile: str, overrides: Any, source: str) -> StrictConfig:
    return _typed(registry.asset(name), overrides, f"assets.{name}.{profile}", profile, source)


def _typed(spec, overrides: Any, key: str, profile: str, source: str) -> StrictConfig:
    """A spec's typed config: its profile defaults, then params.yaml's overrides."""
    if not isinstance(overrides, dict):
        raise ConfigError(f"{source}: {key}: expected a mapping")
    merged = {**spec.profile_defaults.get(profile, {}), **overrides}
    try:
        return spec.config_model(**merged)
    except ValidationError as exc:
        raise ConfigError(_explain(exc, spec.config_model, key, source)) from None


def _validate_trainer(section: Any, source: str) -> dict[str, dict[str, Any]]:
    """params.yaml's ``trainer`` section: per profile, the keys it sets (checked)."""
    if not isinstance(section, dict):
        raise ConfigError(f"{source}: trainer: expected a mapping with keys smoke/paper")
    _no_unknown(section, PROFILES, prefix="trainer.", source=source)
    out = {}
    for prof in PROFILES:
        keys = section.get(prof) or {}
        if not isinstance(keys, dict):
            raise ConfigError(f"{source}: trainer.{prof}: expected a mapping")
        try:
            TrainerConfig(**keys)
        except ValidationError as exc:
            raise ConfigError(_explain(exc, TrainerConfig, f"trainer.{prof}", source)) from None
        out[prof] = dict(keys)
    return out


def method_config(
    slug: str,
    profile: str,
    overrides: dict,
    source: str,
    trainer: dict | None = None,
    evidence: dict | None = None,
) -> MethodConfig:
    """A method's typed config at ``profile``: code defaults, then params.yaml's
    overrides; its ``trainer`` is the project's ``trainer`` section with the method's
    own ``trainer`` keys over it; its ``evidence`` is the project's ``evidence`` section,
    then the method's code defaults for it, then its own ``evidence`` keys."""
    spec = registry.get(slug)
    if trainer and isinstance(overrides, dict):
        own = overrides.get("trainer") or {}
        if not isinstance(own, dict):
            raise ConfigError(f"{source}: methods.{slug}.{profile}.trainer: expected a mapping")
        overrides = {**overrides, "trainer": {**trainer, **own}}
    if evidence and isinstance(overrides, dict):
        own = overrides.get("evidence") or {}
        if not isinstance(own, dict):
            raise ConfigError(f"{source}: methods.{slug}.{profile}.evidence: expected a mapping")
        code = spec.profile_defaults.get(profile, {}).get("evidence", {})
        overrides = {**overrides, "evidence": {**evidence, **code, **own}}
    cfg = _typed(spec, overrides, f"methods.{slug}.{profile}", profile, source)
    _check_quantization(spec, cfg, f"methods.{slug}.{profile}.quantization", source)
    _check_variants(spec, cfg, f"methods.{slug}.{profile}.variants", source)
    return cfg


def _validate_evidence(section: Any, source: str) -> dict[str, dict[str, Any]]:
    """params.yaml's ``evidence`` section: per profile, the keys it sets (checked)."""
    if not isinstance(section, dict):
        raise ConfigError(f"{source}: evidence: expected a mapping with keys smoke/paper")
    _no_unknown(section, PROFILES, prefix="evidence.", source=source)
    out = {}
    for prof in PROFILES:
        keys = section.get(prof) or {}
        if not isinstance(keys, dict):
            raise ConfigError(f"{source}: evidence.{prof}: expected a mapping")
        if "added" in keys:
            raise ConfigError(
                f"{source}: evidence.{prof}.added: seeds are added per method "
                f"(methods.<slug>.{prof}.evidence.added), not for every method"
            )
        try:
            EvidenceConfig(**keys)
        except ValidationError as exc:
            raise ConfigError(_explain(exc, EvidenceConfig, f"evidence.{prof}", source)) from None
        out[prof] = dict(keys)
    return out


def _check_evidence(
    slug: str, cfg: MethodConfig, profile_seeds: list[int], key: str, source: str
) -> None:
    """The plan fits the profile's seeds, and the seeds the rounds added name claims,
    variants and seeds that exist."""
    spec = registry.get(slug)
    ev = cfg.evidence
    if ev.first is not None and ev.first > len(profile_seeds):
        raise ConfigError(
            f"{source}: {key}.first: {ev.first} seeds in the first look, but the profile "
            f"has {len(profile_seeds)} ({profile_seeds})"
        )
    first = len(ev.base_seeds(profile_seeds))
    if ev.max_seeds is not None and ev.max_seeds < first:
        raise ConfigError(
            f"{source}: {key}.max_seeds: {ev.max_seeds} is below the first look's {first} seeds"
        )
    claims = {c.id for c in spec.claims}
    names = spec.variant_names()
    base = set(ev.base_seeds(profile_seeds))
    for i, rule in enumerate(ev.added):
        where = f"{key}.added[{i}]"
        unknown = sorted(set(rule.claims) - claims)
        if unknown:
            raise ConfigError(
                f"{source}: {where}.claims: unknown claim(s) {', '.join(unknown)}; claims of "
                f"{slug}: {', '.join(sorted(claims))}"
            )
        bad = [v for v in rule.variants if v not in names]
        if bad:
            raise ConfigError(
                f"{source}: {where}.variants: unknown variant(s) {', '.join(bad)}; variants of "
                f"{slug}: {', '.join(names)}"
            )
        again = sorted(base & set(rule.seeds))
        if again:
            raise ConfigError(
                f"{source}: {where}.seeds: {again} are already the first look's seeds"
            )


def _check_variants(spec, cfg: MethodConfig, key: str, source: str) -> None:
    """The selected variants exist, are distinct, and every evaluation-only one comes
    with the variant whose trained object it evaluates. (A claim on a variant left out
    is reported as not tested.)"""
    if cfg.variants is None:
        return
    names = spec.variant_names()
    chosen = list(cfg.variants)
    unknown = [v for v in chosen if v not in names]
    if unknown:
        raise ConfigError(
            f"{source}: {key}: unknown variant(s) {', '.join(map(repr, unknown))}; "
            f"variants of {spec.slug}: {', '.join(names)}"
        )
    if len(set(chosen)) != len(chosen):
        raise ConfigError(f"{source}: {key}: a variant is listed twice: {chosen}")
    method = [v.name for v in spec.variants if v.is_method]
    if method and method[0] not in chosen:
        raise ConfigError(
            f"{source}: {key}: the method variant {method[0]!r} is not selected; "
            f"the claims compare it with the others"
        )
    for name in chosen:
        source_variant = spec.trained_variant(name)
        if source_variant not in chosen:
            raise ConfigError(
                f"{source}: {key}: {name!r} is evaluation-only and evaluates the trained "
                f"{source_variant!r}, which is not selected; add {source_variant!r}"
            )
    if not any(not spec.variant(v).evaluation_only for v in chosen):
        raise ConfigError(
            f"{source}: {key}: nothing to train: every selected variant is evaluation-only"
        )


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
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        key = f"{prefix}.{loc}" if loc else prefix
        if err["type"] == "extra_forbidden":
            owner = model
            if len(err["loc"]) > 1 and err["loc"][0] == "trainer":
                owner = TrainerConfig  # a nested section lists its own keys
            elif len(err["loc"]) > 1 and err["loc"][0] == "evidence":
                owner = EvidenceConfig
            fields = sorted(owner.model_fields)
            lines.append(f"{key}: unknown key; allowed keys: {', '.join(fields)}")
        elif err["type"] == "missing":
            lines.append(f"{key}: missing key")
        else:
            lines.append(f"{key}: {err['msg']} (got {err.get('input')!r})")
    return f"{source}: " + "; ".join(lines)


def method_seeds(project: ProjectConfig, slug: str) -> list[int]:
    """Every seed a method's run has: its first look's and those the rounds added."""
    return project.method(slug).evidence.seeds(project.seeds)


def resolved_files(project: ProjectConfig) -> dict[str, dict[str, Any]]:
    """What each stage's results depend on, resolved (defaults, profile, seeds), as the
    files ``reprolab check --out data/config`` writes for DVC:

    - ``<slug>.json``: the method's whole config (train, quantize, evaluate depend on it);
    - ``<slug>.prepare.json``: only the keys its prepare hook reads (prepare depends on it);
    - ``asset.<name>.json``: an asset's config (its build stage depends on it).

    A valid edit of params.yaml changes exactly the files of what it touches, so DVC
    reruns only those stages; an invalid one stops ``dvc repro`` here, before any
    stage's outputs are removed."""
    out: dict[str, dict[str, Any]] = {}
    for slug, cfg in project.methods.items():
        common = {"profile": project.profile, "seeds": method_seeds(project, slug)}
        full = cfg.model_dump(mode="json")
        keys = registry.get(slug).prepare_keys
        out[f"{slug}.json"] = {**common, "method": full}
        # prepare never trains nor judges: the trainer and evidence settings do not
        # reach it (its seeds, the first look's and the rounds', do)
        prepared = {k: v for k, v in full.items() if k not in ("trainer", "evidence")}
        out[f"{slug}.prepare.json"] = {
            **common,
            "method": prepared if keys is None else {k: full[k] for k in keys},
        }
    for name, cfg in project.assets.items():
        out[f"asset.{name}.json"] = {
            "profile": project.profile,
            "asset": cfg.model_dump(mode="json"),
        }
    return out


#: where the validate stage writes every stage's resolved config
CONFIG_DIR = Path("data") / "config"


def code_fingerprint(root: Path, slug: str, which: str = "build") -> dict:
    """SHA-256 of each source file ``slug``'s stages of ``which`` run (``build``:
    prepare, train, quantize; ``evaluate``: evaluation, claims, plots), by path: of
    :func:`~reprolab.core.fingerprint.code_text` for a Python file, of the bytes
    otherwise; documentation is left out."""
    from reprolab.core.fingerprint import fingerprint

    return fingerprint(root, slug, which)


def config_files(root: Path, project: ProjectConfig | None = None) -> dict[str, dict]:
    """Every file the validate stage writes under :data:`CONFIG_DIR`, by name: its
    content (what ``python -m reprolab status`` compares with the files on disk, writing
    nothing)."""
    project = project or load(root / "params.yaml")
    out = resolved_files(project)
    for slug in project.slugs:
        out[f"{slug}.code.json"] = code_fingerprint(root, slug, "build")
        out[f"{slug}.evaluate.code.json"] = code_fingerprint(root, slug, "evaluate")
    return out
