"""The method contract (v3): what a folder under ``reprolab/methods/`` must provide.

A method package's ``__init__.py`` exposes ``SPEC``, a :class:`MethodSpec`. It must be
cheap to import (no torch, no data): the registry imports it to validate params and
list claims. Heavy code lives in the module named by ``MethodSpec.hooks``, imported
only by the stages, and implements the functions of :class:`MethodHooks`.

The pipeline works on *units*: one unit is one (task, variant, seed) triple, e.g. one
class pair trained with one loss under one seed. Units make resuming, progress output
and per-run tracking the same for every method, whether its "training" is SGD on a
network or an LP solve. Four words of the contract say what the first version could
only say with workarounds inside a method:

- **asset**: an expensive object several variants or methods read (an image corpus, a
  pretrained model converted to a local folder). Declared once under
  ``reprolab/assets/<name>.py``, built by its own DVC stage ``assets@<name>`` into
  ``data/assets/<name>/``, listed by the methods that read it (``MethodSpec.assets``);
  every hook gets its verified folder from the :class:`Run` (``run.asset(name)``). A
  stage never rebuilds an asset.
- **evaluation-only variant**: ``Variant(..., reuses="victim")`` evaluates the trained
  object of another variant (an attack on a victim, a decoder on one model, a fusion).
  Training runs once, for the reused variant; evaluation runs every variant.
- **seed-free unit**: ``Unit(task, variant, seed=None)`` for a deterministic task (an
  exhaustive search, a closed-form accountant). It runs once, and claim checks know it
  has no seed replicates: they compare its one value exactly, with no interval made up
  from copies of one number.
- **unit parameters**: ``Unit(..., params={"beta": 0.5})``. They are columns of the
  metrics table, MLflow params of the unit's run, and what claim checks and plots group
  by; nothing is parsed out of task names.

Worked example (ttba: one victim CNN per (task, seed), attacked by three attacks)::

    variants=(
        Variant("victim", "the CNN under attack (trained once per task and seed)"),
        Variant("ttba", "TtBA attack", is_method=True, reuses="victim"),
        Variant("hsja", "HopSkipJump (ART)", reuses="victim"),
    )
    # hooks.units(run, tasks) yields Unit(task, "victim", s) and Unit(task, "ttba", s),
    # ...; train@ttba trains only the victim units; evaluate@ttba restores the victim of
    # (task, s) and calls evaluate_unit(run, victim_model, Unit(task, "ttba", s), ...).

Every hook takes a :class:`Run` first (v3): the method's spec, resolved config, seeds,
verified asset folders, project root and profile, built by the stage. Nothing about the
running stage lives in a module global, so neither the core nor the contract imports a
stage.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Protocol, get_type_hints

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator
from pydantic.fields import FieldInfo

ParamValue = int | float | str | bool
#: precisions a method may evaluate at without the quantize stage (the model cast)
CAST_PRECISIONS = ("fp32", "bf16", "fp16")


def _fractions(v: list[float]) -> list[float]:
    if any(x <= 0 for x in v) or abs(sum(v) - 1.0) > 1e-6:
        raise ValueError("must be three positive fractions (train, val/cal, test) summing to 1")
    return v


#: a train / validation (or calibration) / test split, fixed at prepare
Split = Annotated[list[float], Field(min_length=3, max_length=3), AfterValidator(_fractions)]


class StrictConfig(BaseModel):
    """Base of every typed config (methods and assets): unknown keys and wrong types are
    errors (strict: ``epochs: "3"`` or ``epochs: true`` is rejected, not coerced)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class TrainerConfig(StrictConfig):
    """Where and how Lightning trains (``core.training.make_fabric``): the ``trainer``
    section of params.yaml per profile, overridable per method under
    ``methods.<slug>.<profile>.trainer``. The defaults use a GPU where there is one.
    A method whose training is not a Lightning fit (an LP, a closed form, a plain loop)
    ignores it."""

    accelerator: Literal["auto", "cpu", "gpu", "cuda", "mps"] = "auto"
    devices: int | Literal["auto"] = Field(default=1)
    strategy: Literal["auto", "ddp", "ddp_spawn"] = "auto"
    precision: Literal["32-true", "bf16-mixed", "16-mixed"] = "32-true"


class AddedSeeds(StrictConfig):
    """Seeds a round of a paper run added for undecided claims (``make paper`` writes
    these; ``dvc repro`` with them reproduces the run): the units of ``variants`` with
    these ``seeds``, on ``tasks`` and with unit ``params`` where given (a parameter
    value ``null`` matches a unit without that parameter). The claims in ``claims`` read
    these seeds; every other claim keeps its own."""

    claims: list[str] = Field(min_length=1)
    seeds: list[Annotated[int, Field(ge=0)]] = Field(min_length=1)
    variants: list[str] = Field(min_length=1)
    tasks: list[str] | None = None
    params: dict[str, list[ParamValue | None]] | None = None

    def matches(self, unit: Unit) -> bool:
        if unit.seed not in self.seeds or unit.variant not in self.variants:
            return False
        if self.tasks is not None and unit.task not in self.tasks:
            return False
        own = unit.param
        return all(own.get(k) in allowed for k, allowed in (self.params or {}).items())


class EvidenceConfig(StrictConfig):
    """How many replicates a method's claims get (``judging.sequential``): the first look
    has the first ``first`` seeds of the profile (None: all of them); a paper run adds
    ``step`` seeds per round to the units an undecided claim reads, up to ``max_seeds``
    (None: ``first``, one look, a fixed-n analysis), while the rounds' compute stays
    within ``budget_minutes``. Intervals and tests are read at the look's level of a
    group-sequential plan that spends the two-sided error ``alpha`` over the looks
    (``spending``). The ``evidence`` section of params.yaml per profile, overridable per
    method under ``methods.<slug>.<profile>.evidence``."""

    first: int | None = Field(default=None, ge=1)
    step: int = Field(default=5, ge=1)
    max_seeds: int | None = Field(default=None, ge=1)
    alpha: float = Field(default=0.05, gt=0, lt=0.5)
    spending: Literal["obrien_fleming", "pocock"] = "obrien_fleming"
    budget_minutes: float = Field(default=120.0, gt=0)
    #: the seeds earlier rounds added (written by ``make paper``)
    added: list[AddedSeeds] = Field(default_factory=list)

    def base_seeds(self, profile_seeds: Sequence[int]) -> list[int]:
        """The seeds of the first look."""
        return list(profile_seeds)[: self.first] if self.first else list(profile_seeds)

    def seeds(self, profile_seeds: Sequence[int]) -> list[int]:
        """Every seed of the run: the first look's and those the rounds added."""
        out = self.base_seeds(profile_seeds)
        for rule in self.added:
            out += [s for s in rule.seeds if s not in out]
        return out

    def claim_seeds(self, claim: str, profile_seeds: Sequence[int]) -> list[int]:
        """The seeds one claim reads: the first look's and those added for it."""
        out = self.base_seeds(profile_seeds)
        for rule in self.added:
            if claim in rule.claims:
                out += [s for s in rule.seeds if s not in out]
        return sorted(out)


class MethodConfig(StrictConfig):
    """Base class of every method's typed config."""

    #: Lightning's device settings (resolved from params.yaml's ``trainer`` section and
    #: the method's override when params.yaml is validated)
    trainer: TrainerConfig = Field(default_factory=TrainerConfig)
    #: replicates: the first look's seeds, the rounds' plan and budget, and the seeds
    #: the rounds added (params.yaml's ``evidence`` section and the method's override)
    evidence: EvidenceConfig = Field(default_factory=EvidenceConfig)

    #: quantization schemes for this method's quantize stage (see
    #: ``reprolab.core.schemes``); ``None`` keeps the method's default
    #: (``MethodSpec.quantization.schemes``), ``[]`` turns quantization off
    quantization: list[str] | None = None
    #: the variants to run (names of ``MethodSpec.variants``); ``None``: all of them.
    #: Checked against the spec when params.yaml is validated: unknown names, a missing
    #: method variant, and an evaluation-only variant without the variant it reuses are
    #: errors.
    variants: list[str] | None = None


# ------------------------------------------------------------------ config mixins
# A method config inherits MethodConfig and the mixins of the settings it shares with
# other methods: ``class TtbaConfig(MethodConfig, ImageDataConfig, OptimConfig)``. A
# mixin field's documentation, bounds and default live once, on the mixin; a method
# whose default differs redeclares the field with :func:`mixin_field`, which keeps the
# mixin's bounds and :func:`prepare_field` marker (pydantic replaces an inherited field
# whole). A method whose bounds differ too redeclares the field whole.

#: the ``json_schema_extra`` key of :func:`prepare_field`
PREPARE_MARK = "prepare"


def prepare_field(default: Any, **kwargs: Any) -> Any:
    """``Field(default, **kwargs)`` of a config field the ``prepare`` hook reads. The
    marked fields of a method's config are its ``MethodSpec.prepare_keys`` (unless the
    spec lists them itself)."""
    return Field(default, json_schema_extra={PREPARE_MARK: True}, **kwargs)


def prepare_fields(model: type[BaseModel]) -> tuple[str, ...] | None:
    """The fields of ``model`` marked by :func:`prepare_field`, in field order; ``None``
    when none is (prepare then depends on the whole config)."""
    marked = tuple(
        name
        for name, info in model.model_fields.items()
        if isinstance(info.json_schema_extra, dict) and info.json_schema_extra.get(PREPARE_MARK)
    )
    return marked or None


def mixin_field(mixin: type[BaseModel], name: str, default: Any) -> Any:
    """The field ``name`` of ``mixin`` with another ``default``, for a method config
    that inherits the mixin: ``epochs: int = mixin_field(OptimConfig, "epochs", 10)``
    (or that has the same setting without the mixin's other fields: one image dataset,
    not a list). Its bounds and :func:`prepare_field` marker stay the mixin's."""
    info = FieldInfo.merge_field_infos(mixin.model_fields[name], default=default)
    # the redeclared annotation brings its own constraints again (``Split``'s): keep
    # only those of the field itself, or they would be checked twice
    carried = FieldInfo.from_annotation(get_type_hints(mixin, include_extras=True)[name])
    info.metadata = [m for m in info.metadata if m not in carried.metadata]
    return info


def distinct_values(
    *fields: str,
    message: str,
    ok: Callable[[Any], bool] = lambda value: True,
    sort: bool = False,
) -> Any:
    """A validator of the list fields ``fields`` of a config: every value passes ``ok``
    and none is listed twice, else ``ValueError(message)``; the list is kept sorted when
    ``sort``. In a config's body: ``_sizes = distinct_values("sizes", message=...)``."""

    def check(cls, v: list) -> list:
        if not all(ok(x) for x in v) or len(set(v)) != len(v):
            raise ValueError(message)
        return sorted(v) if sort else v

    return field_validator(*fields)(classmethod(check))


class DataSeed(StrictConfig):
    """Mixin: the seed of what ``prepare`` draws."""

    #: seed of prepare's draws (subsamples, splits, synthetic tasks and samples): the
    #: prepared data, fixed across the training seeds
    data_seed: int = prepare_field(0, ge=0)


#: the datasets of the ``images`` asset (``reprolab/assets/images.py``)
ImageDataset = Literal["digits", "mnist", "fashion_mnist"]
#: the side of each one's (square) images, in pixels
IMAGE_SIDE: dict[str, int] = {"digits": 8, "mnist": 28, "fashion_mnist": 28}


class ImageDatasets(DataSeed):
    """Mixin of a method with one task per dataset of the ``images`` asset."""

    #: the assets a config with this mixin reads: its spec's ``MethodSpec.assets`` has
    #: them without restating them
    ASSETS: ClassVar[tuple[str, ...]] = ("images",)

    #: datasets of the ``images`` asset, one task each
    datasets: list[ImageDataset] = prepare_field(["mnist"], min_length=1)
    #: rows kept per dataset (stratified subsample, fixed at prepare; 0 = all)
    max_rows: int = prepare_field(0, ge=0)


class ImageDataConfig(ImageDatasets):
    """Mixin of a method whose ``prepare`` is ``core.datasets.image_tasks`` on its
    ``datasets``, ``max_rows``, ``split`` and ``data_seed``."""

    #: train / validation (or calibration) / test fractions, fixed at prepare
    split: Split = prepare_field([0.6, 0.2, 0.2])


class OptimConfig(StrictConfig):
    """Mixin of a method trained by minibatch gradient descent for a number of epochs."""

    #: passes over the training data
    epochs: int = Field(default=3, ge=1)
    #: training rows per optimizer step
    batch_size: int = Field(default=64, ge=1)
    #: the optimizer's (initial) learning rate
    lr: float = Field(default=3e-3, gt=0)


def _id_part(value: ParamValue) -> str:
    """A parameter value as it appears in a unit id (and so in file names)."""
    return str(value).replace("/", "-").replace(" ", "_")


@dataclass(frozen=True)
class Unit:
    """One independent piece of work: a (task, variant, seed) triple plus the unit's
    parameters. ``seed`` is ``None`` for a seed-free (deterministic) unit."""

    task: str
    variant: str
    seed: int | None
    params: tuple[tuple[str, ParamValue], ...] = ()

    def __post_init__(self) -> None:
        # accept a dict; store sorted pairs so the unit stays hashable and comparable
        items = self.params.items() if isinstance(self.params, dict) else self.params
        object.__setattr__(self, "params", tuple(sorted((str(k), v) for k, v in items)))

    @property
    def id(self) -> str:
        """``task__variant__s<seed>`` (no seed part for a seed-free unit), then the unit's
        parameters, ``__k=v,k2=v2``, when it has any: units that differ only in a
        parameter are different units (file names, MLflow run names, resume state)."""
        base = f"{self.task}__{self.variant}"
        if self.seed is not None:
            base += f"__s{self.seed}"
        if self.params:
            base += "__" + ",".join(f"{k}={_id_part(v)}" for k, v in self.params)
        return base

    @property
    def seed_free(self) -> bool:
        return self.seed is None

    @property
    def param(self) -> dict[str, ParamValue]:
        return dict(self.params)

    def with_variant(self, variant: str) -> Unit:
        return Unit(self.task, variant, self.seed, self.params)

    def sort_key(self) -> tuple:
        return (self.task, self.variant, -1 if self.seed is None else self.seed, self.params)

    def as_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "variant": self.variant,
            "seed": self.seed,
            "params": dict(self.params),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Unit:
        return cls(d["task"], d["variant"], d["seed"], d.get("params") or {})


@dataclass(frozen=True)
class Variant:
    """The method itself or a baseline its paper compares against.

    ``reuses`` makes it evaluation-only: it evaluates the trained object of the named
    variant (training runs once, for that one). ``metrics`` lists the headline metrics
    it emits when they are not all of ``MethodSpec.metrics`` (an attack diagnostic that
    only the method has, a decoding metric only a decoder has)."""

    name: str
    description: str
    is_method: bool = False
    reuses: str | None = None
    metrics: tuple[str, ...] | None = None

    @property
    def evaluation_only(self) -> bool:
        return self.reuses is not None


@dataclass(frozen=True)
class Quantization:
    """How the quantize stage treats a method's trained models.

    ``schemes`` are names understood by :mod:`reprolab.core.quant`. When quantization
    does not apply (an LP solution, a noise distribution), ``schemes`` is empty and
    ``reason`` says why; the quantize stage then records that reason as its output.
    ``keep_fp32``: name suffixes of ``nn.Linear`` layers every scheme leaves in full
    precision (say why in ``reason``); the report's coverage column shows them.
    """

    schemes: tuple[str, ...] = ("int8_dynamic",)
    reason: str = ""
    keep_fp32: tuple[str, ...] = ()

    @property
    def applies(self) -> bool:
        return bool(self.schemes)


def is_runtime_metric(name: str) -> bool:
    """Wall-clock measurements (``*_seconds``, ``*_ms``, ``seconds_*``) are not results:
    they differ from run to run, so they go to MLflow and ``data/runtime/``, never into
    the DVC-versioned checkpoints and metrics (which must hash the same on a rerun)."""
    return name.endswith(("_seconds", "_ms")) or name.startswith("seconds_")


@dataclass(frozen=True)
class TrainedUnit:
    """What training one unit produced: tensors to save and a per-epoch history.
    History entries named like wall-clock measurements (:func:`is_runtime_metric`) are
    logged to MLflow but not saved in the checkpoint."""

    state: dict[str, Any]
    history: list[dict[str, float]] = field(default_factory=list)
    #: wall-clock measurements of the training (e.g. solver seconds): MLflow and
    #: data/runtime/<slug>/train.json, never the checkpoint
    timings: dict[str, float] = field(default_factory=dict)
    #: training-side quantities of the trained result, read from its weights (e.g. how
    #: far two fine-tunes moved apart), never from test data: saved in the checkpoint
    #: (``signals``), logged to MLflow, and read by ``make probe``
    signals: dict[str, float] = field(default_factory=dict)


class TrainedUnits(Mapping):
    """What a method's ``plots`` hook gets: a mapping trained unit -> training history,
    and ``model(unit)`` to restore a unit's trained object (for an evaluation-only unit,
    the object of the variant it reuses)."""

    def __init__(self, histories: Mapping[Unit, list[dict]], load: Callable[[Unit], Any]):
        self._histories = histories
        self._load = load

    def model(self, unit: Unit) -> Any:
        return self._load(unit)

    def __getitem__(self, unit: Unit) -> list[dict]:
        return self._histories[unit]

    def __iter__(self) -> Iterator[Unit]:
        return iter(self._histories)

    def __len__(self) -> int:
        return len(self._histories)


@dataclass(frozen=True)
class AssetSpec:
    """A shared, expensive object built once by the DVC stage ``assets@<name>`` into
    ``data/assets/<name>/`` and read by every method that lists it.

    ``build`` names ``module:function`` with the signature ``(cfg, out_dir: Path,
    raw_dir: Path) -> dict`` (metadata); it writes files into ``out_dir`` (the core checksums them and
    writes the manifest, atomically). ``config_model`` and ``profile_defaults`` work as
    for methods, under ``assets.<name>.<profile>`` in params.yaml."""

    name: str
    title: str
    config_model: type[StrictConfig]
    profile_defaults: dict[str, dict[str, Any]]
    build: str
    #: what to install when a source is missing (shown before any compute)
    requires: str = ""


@dataclass(frozen=True)
class MethodSpec:
    slug: str
    title: str
    paper: str
    code: str
    config_model: type[MethodConfig]
    #: overrides of the config defaults per profile ("smoke" uses the defaults as they are)
    profile_defaults: dict[str, dict[str, Any]]
    variants: tuple[Variant, ...]
    claims: tuple[Any, ...]  # reprolab.evidence.judging.claims.Claim
    #: dotted module implementing MethodHooks (default: ``reprolab.methods.<slug>.method``)
    hooks: str = ""
    quantization: Quantization = Quantization()
    #: headline metrics of evaluate_unit, in the order the report shows them
    metrics: tuple[str, ...] = ()
    #: the method's README (default: ``README.md`` in its package folder)
    readme: Path | None = None
    #: the smallest config that still runs every code path (used by the contract test)
    test_overrides: dict[str, Any] = field(default_factory=dict)
    #: shared assets the method reads (names under ``reprolab/assets/``); those its config
    #: mixins read (``ASSETS`` of :class:`ImageDatasets`) are added, first
    assets: tuple[str, ...] = ()
    #: the config keys the ``prepare`` hook reads (``None``: all of them). Prepared data
    #: depends on these alone, so changing ``epochs`` does not rebuild datasets; the
    #: contract test checks that ``prepare`` reads no other key. Left out: the fields of
    #: ``config_model`` marked by :func:`prepare_field` (``None`` when none is).
    prepare_keys: tuple[str, ...] | None = None
    #: precisions evaluated without the quantize stage: ("fp32",) for an LP or a noise
    #: distribution; ("fp32", "bf16") for a language model (the model is cast)
    precisions: tuple[str, ...] = ("fp32",)

    def __post_init__(self) -> None:
        # a method is a folder: its hooks module and README sit there unless said otherwise
        if not self.hooks:
            object.__setattr__(self, "hooks", f"reprolab.methods.{self.slug}.method")
        if self.readme is None:
            folder = Path(__file__).with_name("methods") / self.slug
            object.__setattr__(self, "readme", folder / "README.md")
        if self.prepare_keys is None:
            object.__setattr__(self, "prepare_keys", prepare_fields(self.config_model))
        implied = getattr(self.config_model, "ASSETS", ())
        object.__setattr__(self, "assets", tuple(dict.fromkeys((*implied, *self.assets))))

    def variant_names(self) -> list[str]:
        return [v.name for v in self.variants]

    def variant(self, name: str) -> Variant:
        for v in self.variants:
            if v.name == name:
                return v
        raise KeyError(f"{self.slug}: no variant {name!r}; variants: {self.variant_names()}")

    def trained_variant(self, name: str) -> str:
        """The variant whose trained object ``name`` evaluates (itself unless it is
        evaluation-only; chains of reuse are followed)."""
        seen = [name]
        while (reused := self.variant(seen[-1]).reuses) is not None:
            if reused in seen:
                raise ValueError(f"{self.slug}: circular reuse {' -> '.join([*seen, reused])}")
            seen.append(reused)
        return seen[-1]

    def trains(self, unit: Unit) -> bool:
        return not self.variant(unit.variant).evaluation_only

    def source_unit(self, unit: Unit) -> Unit:
        """The trained unit an (evaluation-only) unit evaluates."""
        return unit.with_variant(self.trained_variant(unit.variant))

    def variant_metrics(self, name: str) -> tuple[str, ...]:
        declared = self.variant(name).metrics
        return self.metrics if declared is None else declared

    def selected_variants(self, cfg: MethodConfig) -> list[str]:
        return list(cfg.variants) if cfg.variants is not None else self.variant_names()

    def schemes(self, cfg: MethodConfig) -> tuple[str, ...]:
        """The quantization schemes of a run: params.yaml's choice, else the default."""
        if not self.quantization.applies:
            return ()
        return (
            tuple(cfg.quantization) if cfg.quantization is not None else self.quantization.schemes
        )


@dataclass(frozen=True)
class Run:
    """What a method's hooks run in, built by the stage and passed to every hook as its
    first argument (no module-global stage state): the method's spec, its resolved
    config, the seeds of the run (the first look's and those sequential rounds added),
    the project root, the verified folders of the assets it reads, and the profile."""

    spec: MethodSpec
    cfg: MethodConfig
    seeds: tuple[int, ...]
    root: Path
    assets: Mapping[str, Path] = field(default_factory=dict)
    profile: str = "smoke"

    @property
    def slug(self) -> str:
        return self.spec.slug

    @property
    def variants(self) -> tuple[str, ...]:
        """The variants this run trains and evaluates (params.yaml's choice, else all)."""
        return tuple(self.spec.selected_variants(self.cfg))

    @property
    def trainer(self) -> TrainerConfig:
        """Where Lightning trains (params.yaml's ``trainer``, resolved for the method)."""
        return self.cfg.trainer

    def asset(self, name: str) -> Path:
        """The verified folder of asset ``name``, which the method must list in
        ``MethodSpec.assets``."""
        if name not in self.spec.assets:
            raise ValueError(
                f"{self.spec.slug}: asset {name!r} is not in MethodSpec.assets "
                f"{list(self.spec.assets)}"
            )
        if name not in self.assets:
            raise ValueError(f"{self.spec.slug}: the run has no verified folder of {name!r}")
        return Path(self.assets[name])

    def default_units(self, tasks: Sequence[str]) -> list[Unit]:
        """Every task x selected variant x seed: the units of a method with nothing
        special about them (a method's ``units`` hook may return just this)."""
        return [Unit(t, v, s) for t in sorted(tasks) for s in self.seeds for v in self.variants]


@dataclass(frozen=True)
class Figure:
    """One figure of a method's ``plots`` (or ``runtime_plots``) hook, listed in the
    method's plots module: ``draw(source, path=out_dir / file, **kwargs)``. ``source``
    is the metrics table (``reads="table"``) or the hook's last argument (``reads=
    "units"``: the :class:`TrainedUnits` of ``plots``, the timings of ``runtime_plots``)."""

    draw: Callable[..., Path]
    file: str
    reads: Literal["table", "units"] = "table"
    kwargs: Mapping[str, Any] = field(default_factory=dict)


def figures_hook(name: str = "FIGURES") -> Callable[[Run, Any, Path, Any], list[Path]]:
    """A ``plots`` (or ``runtime_plots``) hook drawing the :class:`Figure` tuple ``name``
    of the method's plots module (``plots`` beside its hooks module), in order. The
    module is imported when the hook runs, so loading the hooks imports no matplotlib."""

    def hook(run: Run, table: Any, out_dir: Path, units: Any) -> list[Path]:
        module = importlib.import_module(run.spec.hooks.rpartition(".")[0] + ".plots")
        return [
            fig.draw(
                units if fig.reads == "units" else table, path=out_dir / fig.file, **fig.kwargs
            )
            for fig in getattr(module, name)
        ]

    hook.__doc__ = f"Draw the figures of the method's plots.{name}."
    return hook


class MethodHooks(Protocol):
    """Functions of a method's hooks module (see ``methods/ensloss/method.py``). Each
    takes the :class:`Run` first: the config is ``run.cfg``, the seeds ``run.seeds``,
    an asset's folder ``run.asset(name)``, Lightning's devices ``run.trainer``."""

    def prepare(self, run: Run, raw_dir: Path) -> tuple[dict, dict]:
        """Return ({dataset name: {array name: ndarray}}, metadata); the core writes them.
        Only ``MethodSpec.prepare_keys`` of ``run.cfg`` may be read."""

    def units(self, run: Run, tasks: Sequence[str]) -> list[Unit]:
        """Every unit of the run (``run.default_units(tasks)`` for most methods)."""

    def train_unit(
        self,
        run: Run,
        unit: Unit,
        data: dict,
        resume_dir: Path,
        progress: Callable[[str], None],
    ) -> TrainedUnit: ...

    def restore(self, run: Run, unit: Unit, data: dict, state: dict) -> Any:
        """Rebuild the trained object (e.g. an nn.Module in eval mode) from its state."""

    def evaluate_unit(
        self, run: Run, model: Any, unit: Unit, data: dict, history: list[dict]
    ) -> dict[str, float]:
        """Metrics of one unit. ``model`` is the restored trained object (for an
        evaluation-only unit: the one of the variant it reuses, at the precision being
        evaluated); ``history`` is that object's training history."""

    def example_input(self, run: Run, unit: Unit, data: dict) -> Any:
        """A batch for latency measurement (only when quantization applies): a tensor, or
        a tuple of the model's positional arguments."""

    def calibration_inputs(self, run: Run, unit: Unit, data: dict, model: Any) -> list:
        """Optional: model inputs (tensors or tuples of positional arguments) that
        calibrate activation thresholds of quantization schemes that need them, from
        training data or, data-free, from the full-precision ``model`` itself. Without
        it the quantizer calibrates on ``[example_input(...)]``."""

    def runtime_plots(
        self, run: Run, table: Any, out_dir: Path, timings: dict[Unit, dict]
    ) -> list[Path]:
        """Optional: figures of wall-clock measurements (the runtime metrics table of
        evaluate, and each trained unit's ``timings``). They differ on every
        run, so they go to data/runtime/<slug>/plots/, not to the versioned plots."""

    def plots(self, run: Run, table: Any, out_dir: Path, trained: Any) -> list[Path]:
        """Optional: figures from the long metrics table and the trained units.
        ``trained`` is a :class:`TrainedUnits`: unit -> history, and ``model(unit)``."""


def seed_ranges(seeds: list[int]) -> str:
    """[0, 1, 2, 5, 6] -> '0-2, 5-6': seeds as a report writes them."""
    out, run = [], []
    for s in sorted(seeds):
        if run and s == run[-1] + 1:
            run.append(s)
        else:
            if run:
                out.append(run)
            run = [s]
    if run:
        out.append(run)
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in out)
