"""The method contract: what a folder under ``reprolab/methods/`` must provide.

A method package's ``__init__.py`` exposes ``SPEC``, a :class:`MethodSpec`. It must be
cheap to import (no torch, no data): the registry imports it to validate params and
list claims. Heavy code lives in the module named by ``MethodSpec.hooks``, imported
only by the stages, and implements the functions of :class:`MethodHooks`.

The pipeline works on *units*: one unit is one (task, variant, seed) triple, e.g. one
class pair trained with one loss under one seed. Units make resuming, progress output
and per-run tracking the same for every method, whether its "training" is SGD on a
network or an LP solve.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict


class MethodConfig(BaseModel):
    """Base class of every method's typed config: unknown keys and wrong types are errors
    (strict: ``epochs: "3"`` or ``epochs: true`` is rejected, not coerced)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    #: quantization schemes for this method's quantize stage (see
    #: ``reprolab.core.schemes``); ``None`` keeps the method's default
    #: (``MethodSpec.quantization.schemes``), ``[]`` turns quantization off
    quantization: list[str] | None = None


@dataclass(frozen=True, order=True)
class Unit:
    """One independent piece of training work."""

    task: str
    variant: str
    seed: int

    @property
    def id(self) -> str:
        return f"{self.task}__{self.variant}__s{self.seed}"


@dataclass(frozen=True)
class Variant:
    """The method itself or a baseline its paper compares against."""

    name: str
    description: str
    is_method: bool = False


@dataclass(frozen=True)
class Quantization:
    """How the quantize stage treats a method's trained models.

    ``schemes`` are names understood by :mod:`reprolab.core.quant`. When quantization
    does not apply (an LP solution, a noise distribution), ``schemes`` is empty and
    ``reason`` says why; the quantize stage then records that reason as its output.
    """

    schemes: tuple[str, ...] = ("int8_dynamic",)
    reason: str = ""

    @property
    def applies(self) -> bool:
        return bool(self.schemes)


@dataclass(frozen=True)
class TrainedUnit:
    """What training one unit produced: tensors to save and a per-epoch history."""

    state: dict[str, Any]
    history: list[dict[str, float]] = field(default_factory=list)


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
    claims: tuple[Any, ...]  # reprolab.core.claims.Claim
    hooks: str  # dotted module implementing MethodHooks
    quantization: Quantization = Quantization()
    #: headline metrics of evaluate_unit, in the order the report shows them
    metrics: tuple[str, ...] = ()
    readme: Path | None = None
    #: the smallest config that still runs every code path (used by the contract test)
    test_overrides: dict[str, Any] = field(default_factory=dict)

    def variant_names(self) -> list[str]:
        return [v.name for v in self.variants]

    def schemes(self, cfg: MethodConfig) -> tuple[str, ...]:
        """The quantization schemes of a run: params.yaml's choice, else the default."""
        if not self.quantization.applies:
            return ()
        return (
            tuple(cfg.quantization) if cfg.quantization is not None else self.quantization.schemes
        )


class MethodHooks(Protocol):
    """Functions of a method's hooks module (see ``methods/ensloss/method.py``)."""

    def prepare(self, cfg: Any, seeds: Sequence[int], raw_dir: Path) -> tuple[dict, dict]:
        """Return ({dataset name: {array name: ndarray}}, metadata); the core writes them."""

    def units(self, cfg: Any, seeds: Sequence[int], datasets: Sequence[str]) -> list[Unit]: ...

    def train_unit(
        self,
        unit: Unit,
        cfg: Any,
        data: dict,
        resume_dir: Path,
        progress: Callable[[str], None],
    ) -> TrainedUnit: ...

    def restore(self, unit: Unit, cfg: Any, data: dict, state: dict) -> Any:
        """Rebuild the trained object (e.g. an nn.Module in eval mode) from its state."""

    def evaluate_unit(self, model: Any, unit: Unit, cfg: Any, data: dict) -> dict[str, float]: ...

    def example_input(self, unit: Unit, cfg: Any, data: dict) -> Any:
        """A batch for latency measurement (only when quantization applies): a tensor, or
        a tuple of the model's positional arguments."""

    def calibration_inputs(self, unit: Unit, cfg: Any, data: dict, model: Any) -> list:
        """Optional: model inputs (tensors or tuples of positional arguments) that
        calibrate activation thresholds of quantization schemes that need them, from
        training data or, data-free, from the full-precision ``model`` itself. Without
        it the quantizer calibrates on ``[example_input(...)]``."""

    def plots(self, table: Any, out_dir: Path, histories: dict[Unit, list[dict]]) -> list[Path]:
        """Optional: figures from the long metrics table and each unit's training history."""
