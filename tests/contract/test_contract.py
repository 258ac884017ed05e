"""The method contract, checked for every registered method.

A new method folder is picked up here automatically: if it passes, the pipeline can
run it without changes.
"""

from __future__ import annotations

import math
import re

import pytest
import torch
import yaml

from reprolab import config, registry
from reprolab.contract import MethodSpec, Run, TrainedUnit, TrainedUnits, is_runtime_metric
from reprolab.core import quant
from reprolab.evidence.judging.claims import VERDICTS
from tests.conftest import ROOT

SLUGS = registry.slugs()
REQUIRED_HOOKS = ("prepare", "units", "train_unit", "restore", "evaluate_unit")


@pytest.fixture(params=SLUGS)
def spec(request) -> MethodSpec:
    return registry.get(request.param)


def test_there_are_methods():
    assert SLUGS


def test_spec_is_complete(spec: MethodSpec):
    assert spec.title and spec.paper and spec.code
    names = spec.variant_names()
    assert len(names) == len(set(names)), "variant names are unique"
    assert sum(v.is_method for v in spec.variants) == 1
    # the method plus at least one baseline: a trained variant, or, for a paper whose
    # method is a quantizer, the quantization schemes its claims compare against
    cross = [c for c in spec.claims if c.cross_precision]
    assert len(names) >= 2 or (cross and len(spec.quantization.schemes) >= 2)
    for claim in cross:
        assert set(claim.check.precisions()) <= {"fp32", *spec.quantization.schemes}
    assert spec.metrics, "headline metrics of evaluate_unit"
    ids = [c.id for c in spec.claims]
    assert ids and len(ids) == len(set(ids))
    for claim in spec.claims:
        assert claim.paper_value and claim.paper_setting and claim.statement
        assert claim.metric in spec.metrics
        assert set(claim.check.variants()) <= set(names), claim.id


def test_quantization_is_declared(spec: MethodSpec):
    if spec.quantization.applies:
        for scheme in spec.quantization.schemes:
            quant.check_scheme(scheme)
    else:
        assert len(spec.quantization.reason) > 20, "say why quantization does not apply"


def test_readme_states_claims_and_verdicts(spec: MethodSpec):
    assert spec.readme is not None and spec.readme.is_file()
    text = spec.readme.read_text()
    for claim in spec.claims:
        assert claim.id in text, f"README does not mention claim {claim.id}"
    assert "Verdicts" in text


_BUILT: dict[str, object] = {}  # asset name -> folder, built once per test session


def build_assets(spec: MethodSpec, folder) -> dict:
    """Build the assets a method reads (smoke defaults) the way assets@<name> does, each
    once per session (the first build stays in that test's folder; hooks only read it,
    and a model asset such as smollm2 takes tens of seconds to build)."""
    import importlib

    out = {}
    for name in spec.assets:
        if name not in _BUILT:
            asset = registry.asset(name)
            cfg = config.asset_config(name, "smoke", {}, "defaults")
            module, func = asset.build.split(":")
            target = folder / name
            target.mkdir(parents=True)
            getattr(importlib.import_module(module), func)(cfg, target, folder / "raw")
            _BUILT[name] = target
        out[name] = _BUILT[name]
    return out


def recording(cfg):
    """A copy of ``cfg`` that records which of its fields are read (also by its methods)."""
    seen: set[str] = set()
    fields = set(type(cfg).model_fields)

    class Recording(type(cfg)):
        def __getattribute__(self, name):
            if name in fields:
                seen.add(name)
            return super().__getattribute__(name)

    copy = Recording.model_validate(cfg.model_dump())
    seen.clear()  # reads by the config's own validators are not reads of prepare
    return copy, seen


def test_prepare_reads_only_its_declared_keys(spec: MethodSpec, tmp_path):
    """Prepared data depends on ``prepare_keys`` alone (dvc.yaml's prepare stage reads
    only those from data/config/<slug>.prepare.json): a key prepare reads but does not
    declare would leave stale datasets after a params change."""
    fields = set(spec.config_model.model_fields)
    # no declared keys: prepare depends on the whole config but the trainer and evidence
    # settings (config.stage_configs leaves those out of its prepare file)
    declared = (
        fields - {"trainer", "evidence"} if spec.prepare_keys is None else set(spec.prepare_keys)
    )
    assert declared <= fields, "unknown keys"
    cfg = config.method_config(spec.slug, "smoke", spec.test_overrides, "test_overrides")
    watched, seen = recording(cfg)
    seeds = tuple(cfg.evidence.base_seeds((0, 1)))  # the first look's seeds
    run = Run(spec, watched, seeds, tmp_path, build_assets(spec, tmp_path))
    registry.hooks(spec.slug).prepare(run, tmp_path / "raw")
    assert seen, "the recording copy saw no read at all"
    assert seen <= declared, f"undeclared: {sorted(seen - declared)}"


def test_params_section_and_profiles_validate(spec: MethodSpec):
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert spec.slug in params["methods"], "add a section to params.yaml"
    for profile in config.PROFILES:
        config.method_config(spec.slug, profile, {}, "defaults")
    config.method_config(spec.slug, "smoke", spec.test_overrides, "test_overrides")


def test_hooks_run_end_to_end_on_a_tiny_config(spec: MethodSpec, tmp_path):
    """Every unit of the tiny config: train, restore, evaluate (and quantize), then the
    method's plots from the resulting table and histories."""
    from reprolab.stages.evaluate import metrics_table

    hooks = registry.hooks(spec.slug)
    for name in REQUIRED_HOOKS:
        assert callable(getattr(hooks, name, None)), f"{spec.hooks} lacks {name}()"
    cfg = config.method_config(spec.slug, "smoke", spec.test_overrides, "test_overrides")
    # the first look's seeds (a method whose test_overrides ask for one seed runs one)
    seeds = tuple(cfg.evidence.base_seeds((0, 1)))
    run = Run(spec, cfg, seeds, tmp_path, build_assets(spec, tmp_path))
    datasets, meta = hooks.prepare(run, tmp_path / "raw")
    assert datasets and isinstance(meta, dict)
    # one seed's arrays are named s<seed>_... (docs/contract.md): the training
    # fingerprint then leaves other seeds' arrays out, so added seeds retrain nothing
    suffixed = sorted(k for arrays in datasets.values() for k in arrays if re.search(r"_s\d+$", k))
    assert not suffixed, f"per-seed arrays must be named s<seed>_..., not {suffixed[:4]}"
    units = hooks.units(run, sorted(datasets))
    assert {u.variant for u in units} <= set(spec.variant_names())
    assert {u.seed for u in units} <= {*seeds, None}
    assert len({u.id for u in units}) == len(units), "unit ids are unique"
    trained_units = [u for u in units if spec.trains(u)]
    assert trained_units, "at least one unit is trained"
    for unit in units:  # every evaluation-only unit has its trained object in the run
        assert spec.source_unit(unit) in trained_units, unit.id
    rows, histories, restored = [], {}, {}
    for unit in trained_units:
        data = datasets[unit.task]
        trained = hooks.train_unit(run, unit, data, tmp_path / "resume" / unit.id, lambda m: None)
        assert isinstance(trained, TrainedUnit) and trained.state
        torch.save(trained.state, tmp_path / "state.pt")  # must reload with weights_only
        state = torch.load(tmp_path / "state.pt", weights_only=True)
        restored[unit] = hooks.restore(run, unit, data, state)
        histories[unit] = trained.history
    for unit in units:
        source = spec.source_unit(unit)
        data, model = datasets[unit.task], restored[source]
        metrics = hooks.evaluate_unit(run, model, unit, data, histories[source])
        assert set(spec.variant_metrics(unit.variant)) <= set(metrics)
        assert all(math.isfinite(v) for v in metrics.values())
        rows += [(unit, "fp32", k, float(v)) for k, v in metrics.items()]
        if spec.quantization.applies:
            example = hooks.example_input(run, source, data)
            calib = (
                hooks.calibration_inputs(run, source, data, model)
                if hasattr(hooks, "calibration_inputs")
                else [example]
            )
            for scheme in spec.schemes(cfg):
                qmodel = quant.quantize(model, scheme, calibration=calib)
                qmetrics = hooks.evaluate_unit(run, qmodel, unit, data, histories[source])
                assert set(qmetrics) == set(metrics)
                rows += [(unit, scheme, k, float(v)) for k, v in qmetrics.items()]
                with torch.inference_mode():
                    quant.call_model(qmodel, example)
    table = metrics_table(rows)
    for claim in spec.claims:
        for precision in claim.precisions_to_evaluate(["fp32", *spec.schemes(cfg)]):
            result = claim.evaluate(table, precision, "smoke")
            if claim.out_of_reach is not None:  # what ran is shown, the verdict says so
                assert result["verdict"] == "out_of_reach"
            else:
                assert result["verdict"] in VERDICTS and result["verdict"] != "out_of_reach"
            assert set(result["measured"]["seeds"]) <= set(seeds)
    if hasattr(hooks, "plots"):
        out = tmp_path / "plots"
        out.mkdir()
        trained = TrainedUnits(histories, lambda u: restored[spec.source_unit(u)])
        figures = hooks.plots(run, table, out, trained)
        assert figures and all(p.is_file() and p.stat().st_size > 0 for p in figures)
    if hasattr(hooks, "runtime_plots"):  # wall-clock figures (they go to data/runtime/)
        out = tmp_path / "runtime_plots"
        out.mkdir()
        runtime = table[table.metric.map(is_runtime_metric)]
        figures = hooks.runtime_plots(run, runtime, out, {u: {} for u in trained_units})
        assert figures and all(p.is_file() and p.stat().st_size > 0 for p in figures)
