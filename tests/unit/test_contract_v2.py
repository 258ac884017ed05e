"""Contract v2: assets, evaluation-only variants, seed-free units, unit parameters,
per-stage resolved configs, cast precisions. Each against a hand-computed case."""

from __future__ import annotations

import copy
import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
import yaml
from pydantic import Field, ValidationError, field_validator

from reprolab import config, registry
from reprolab.contract import (
    DataSeed,
    ImageDataConfig,
    ImageDatasets,
    MethodConfig,
    MethodSpec,
    OptimConfig,
    Split,
    StrictConfig,
    Unit,
    Variant,
    distinct_values,
    mixin_field,
    prepare_field,
    prepare_fields,
)
from reprolab.core import io
from reprolab.evidence.judging import claims
from reprolab.evidence.judging.claims import PairedDifference, Threshold
from reprolab.stages.evaluate import metrics_table
from tests.conftest import ROOT

GOOD = yaml.safe_load((ROOT / "params.yaml").read_text())


def spec_with(*variants: Variant, metrics=("acc", "l2")) -> MethodSpec:
    return MethodSpec(
        slug="toy",
        title="t",
        paper="p",
        code="c",
        config_model=MethodConfig,
        profile_defaults={},
        variants=variants,
        claims=(),
        hooks="none",
        metrics=metrics,
    )


VICTIM = (
    Variant("victim", "trained"),
    Variant("attack", "evaluation-only", is_method=True, reuses="victim", metrics=("l2",)),
    Variant("baseline", "evaluation-only", reuses="victim", metrics=("l2",)),
)


# ------------------------------------------------------------------ units


def test_unit_params_are_hashable_sorted_and_round_trip():
    a = Unit("t", "v", 0, {"k": 2, "beta": 0.5})
    b = Unit("t", "v", 0, (("beta", 0.5), ("k", 2)))
    assert a == b and hash(a) == hash(b)
    assert a.params == (("beta", 0.5), ("k", 2)) and a.param == {"beta": 0.5, "k": 2}
    assert Unit.from_json(a.as_json()) == a
    assert a.id == "t__v__s0__beta=0.5,k=2"
    # units that differ only in a parameter have different ids
    assert Unit("t", "v", 0, {"k": 3}).id != Unit("t", "v", 0, {"k": 2}).id
    assert Unit("t", "v", 0).id == "t__v__s0"
    assert "/" not in Unit("t", "v", None, {"path": "a/b"}).id


def test_seed_free_unit_has_no_seed_in_its_id():
    u = Unit("grid", "lp", None)
    assert u.seed_free and u.id == "grid__lp"
    assert Unit.from_json(u.as_json()) == u


# ------------------------------------------------------------------ evaluation-only variants


def test_evaluation_only_units_resolve_to_the_trained_variant():
    spec = spec_with(*VICTIM)
    unit = Unit("mnist", "attack", 3, {"eps": 1.0})
    assert not spec.trains(unit) and spec.trains(unit.with_variant("victim"))
    assert spec.source_unit(unit) == Unit("mnist", "victim", 3, {"eps": 1.0})
    assert spec.variant_metrics("attack") == ("l2",)
    assert spec.variant_metrics("victim") == ("acc", "l2")


def test_unknown_and_circular_reuse_are_rejected():
    with pytest.raises(ValueError, match="reuses unknown variant 'nosuch'"):
        registry._check_spec(spec_with(Variant("a", "x", True, reuses="nosuch")))
    circular = spec_with(Variant("a", "x", True, reuses="b"), Variant("b", "y", reuses="a"))
    with pytest.raises(ValueError, match="circular reuse a -> b -> a"):
        registry._check_spec(circular)


def test_a_claim_about_an_unknown_scheme_is_rejected():
    from dataclasses import replace

    from reprolab.evidence.judging.claims import Claim, Threshold

    check = Threshold(variant="victim", bound=0.5)
    about = Claim(
        "c",
        "s",
        "p",
        "set",
        "acc",
        check,
        effect=0.1,
        effect_basis="margin",
        source="not in the paper text here",
        central=True,
        precision="rtn_w3a3",
    )
    spec = replace(spec_with(*VICTIM), claims=(about,))
    with pytest.raises(ValueError, match="claim 'c' is about precision 'rtn_w3a3'"):
        registry._check_spec(spec)
    registry._check_spec(replace(spec, claims=(replace(about, precision="int8_dynamic"),)))


def test_variant_selection_is_checked_against_the_spec():
    spec = spec_with(*VICTIM)
    key = "methods.toy.smoke.variants"

    def check(chosen):
        config._check_variants(spec, MethodConfig(variants=chosen), key, "params.yaml")

    check(["victim", "attack"])  # fine
    with pytest.raises(config.ConfigError, match=rf"{key}: unknown variant\(s\) 'hsja'"):
        check(["victim", "hsja"])
    with pytest.raises(config.ConfigError, match="evaluates the trained 'victim'"):
        check(["attack", "baseline"])
    with pytest.raises(config.ConfigError, match="listed twice"):
        check(["victim", "victim"])


# ------------------------------------------------------------------ seed-free checks


def table(rows) -> pd.DataFrame:
    return metrics_table([(Unit(*u), p, m, v) for u, p, m, v in rows])


def test_one_seed_free_value_is_compared_exactly():
    t = table([(("grid", "lp", None), "fp32", "gap", 0.25)])
    v = Threshold("lp", bound=0.2).evaluate(t, "gap")
    assert v.verdict == "reproduced"
    assert v.measured["ci_low"] == v.measured["ci_high"] == 0.25 and v.measured["seed_free"]
    assert Threshold("lp", bound=0.3).evaluate(t, "gap").verdict == "not_reproduced"


def test_one_seeded_value_stays_inconclusive():
    t = table([(("grid", "lp", 0), "fp32", "gap", 0.25)])
    v = Threshold("lp", bound=0.2).evaluate(t, "gap")
    assert v.verdict == "inconclusive" and math.isinf(v.measured["ci_high"])


def test_seed_free_pairs_pool_over_tasks_not_copies():
    rows = []
    for task, (m, b) in {"a": (3.0, 1.0), "b": (2.0, 1.5), "c": (4.0, 1.0)}.items():
        rows += [((task, "m", None), "fp32", "x", m), ((task, "b", None), "fp32", "x", b)]
    v = PairedDifference("m", "b").evaluate(table(rows), "x")
    verdict, measured = v.verdict, v.measured
    diffs = np.array([2.0, 0.5, 3.0])
    from scipy import stats

    half = stats.t.ppf(0.975, 2) * diffs.std(ddof=1) / math.sqrt(3)
    assert measured["n"] == 3 and measured["value"] == pytest.approx(diffs.mean())
    assert measured["ci_low"] == pytest.approx(diffs.mean() - half)
    assert verdict == ("reproduced" if diffs.mean() - half > 0 else "inconclusive")


# ------------------------------------------------------------------ unit parameters


def test_unit_parameters_are_columns_and_keys_of_pairing():
    rows = []
    for beta, (m, b) in {0.1: (1.0, 0.0), 0.9: (5.0, 1.0)}.items():
        for seed in (0, 1, 2):
            rows += [
                (("perf", "m", seed, {"beta": beta}), "fp32", "err", m + seed),
                (("perf", "b", seed, {"beta": beta}), "fp32", "err", b + seed),
            ]
    t = table(rows)
    assert list(t.columns) == [
        "task",
        "variant",
        "seed",
        "beta",
        "precision",
        "metric",
        "value",
    ]
    assert claims.param_columns(t) == ["beta"]
    pivot = claims.wide(t, "err")
    assert len(pivot) == 6  # (seed, beta) pairs: a beta is never averaged away
    measured = PairedDifference("m", "b").evaluate(t, "err").measured
    # 6 pairs in 3 seeds: the seed is the replicate (each seed's two betas averaged)
    assert measured["n"] == 3 and measured["value"] == pytest.approx((1.0 * 3 + 4.0 * 3) / 6)


def test_units_differing_only_in_an_undeclared_parameter_are_an_error():
    t = table([(("perf", "m", 0), "fp32", "err", 1.0), (("perf", "m", 0), "fp32", "err", 2.0)])
    with pytest.raises(ValueError, match="must carry it in Unit.params"):
        claims.wide(t, "err")


def test_metrics_table_keeps_seed_free_seeds_missing():
    t = table([(("g", "lp", None), "fp32", "gap", 1.0), (("g", "lp", 2), "fp32", "gap", 2.0)])
    assert str(t.seed.dtype) == "Int64"
    assert t.seed.isna().tolist() == [True, False]


# ------------------------------------------------------------------ resolved configs


def test_resolved_files_separate_prepare_keys(monkeypatch):
    spec = registry.get("ensloss")
    narrowed = dataclasses.replace(spec, prepare_keys=("datasets", "max_rows"))
    real_get = registry.get
    monkeypatch.setattr(registry, "get", lambda s: narrowed if s == "ensloss" else real_get(s))
    raw = copy.deepcopy(GOOD)
    before = config.resolved_files(config.validate(raw))
    raw["methods"]["ensloss"]["smoke"] = {**raw["methods"]["ensloss"]["smoke"], "epochs": 9}
    after = config.resolved_files(config.validate(raw))
    assert after["ensloss.json"] != before["ensloss.json"]
    assert after["ensloss.prepare.json"] == before["ensloss.prepare.json"]
    assert set(after["ensloss.prepare.json"]["method"]) == {"datasets", "max_rows"}
    assert "asset.images.json" in after


# ------------------------------------------------------------------ config mixins, prepare fields


class _Toy(MethodConfig, ImageDataConfig, OptimConfig):
    max_rows: int = prepare_field(500, ge=0)  # redeclared and marked again: a prepare key
    split: Split = Field(default=[0.5, 0.25, 0.25])  # redeclared unmarked: not one
    lr: float = Field(default=0.1, gt=0)
    n_tasks: int = prepare_field(3, ge=1)


def _spec(**kwargs) -> MethodSpec:
    return dataclasses.replace(spec_with(Variant("m", "the method", is_method=True)), **kwargs)


def test_mixin_fields_reach_the_method_config_with_their_defaults_and_bounds():
    cfg = _Toy()
    assert (cfg.datasets, cfg.data_seed, cfg.epochs, cfg.batch_size) == (["mnist"], 0, 3, 64)
    assert (cfg.max_rows, cfg.split, cfg.lr) == (500, [0.5, 0.25, 0.25], 0.1)  # redeclared
    for bad in ({"batch_size": 0}, {"data_seed": -1}, {"split": [0.5, 0.5, 0.5]}, {"lr": 0}):
        with pytest.raises(ValidationError):
            _Toy(**bad)
    with pytest.raises(ValidationError):  # a mixin's fields are strict like the config's
        _Toy(epochs="3")
    # the methods: ttba reads every image-data and optimizer key from the mixins
    ttba = registry.get("ttba").config_model
    assert issubclass(ttba, ImageDataConfig) and issubclass(ttba, OptimConfig)
    assert {"datasets", "max_rows", "split", "data_seed", "epochs", "batch_size", "lr"} <= set(
        ttba.model_fields
    )
    assert (ttba().batch_size, ttba().max_rows) == (64, 1500)
    seeded = [
        s for s in registry.slugs() if "data_seed" in registry.get(s).config_model.model_fields
    ]
    assert all(issubclass(registry.get(s).config_model, DataSeed) for s in seeded)


def test_prepare_keys_are_the_marked_fields():
    spec = _spec(config_model=_Toy)
    assert spec.prepare_keys == prepare_fields(_Toy)
    # the fields the mixins mark and the method's own marked fields; a redeclared field
    # is a prepare key only when it is marked again
    assert set(spec.prepare_keys) == {"datasets", "max_rows", "data_seed", "n_tasks"}
    assert _Toy.model_json_schema()["properties"]["n_tasks"]["prepare"] is True
    # a spec that lists its keys keeps them
    listed = _spec(config_model=_Toy, prepare_keys=("n_tasks",))
    assert listed.prepare_keys == ("n_tasks",)


def test_a_config_without_marked_fields_has_no_prepare_keys():
    assert spec_with(Variant("m", "the method", is_method=True)).prepare_keys is None
    assert prepare_fields(MethodConfig) is None
    assert registry.get("crane").prepare_keys is None  # crane's prepare reads everything


def test_no_method_lists_its_prepare_keys_by_hand():
    for slug in registry.slugs():
        spec = registry.get(slug)
        assert spec.prepare_keys == prepare_fields(spec.config_model), slug
    assert set(registry.get("cplearn").prepare_keys) == {
        "datasets",
        "max_rows",
        "test_frac",
        "data_seed",
        "code_ratios",
    }


# the redeclarations of _Mixed, written out whole (the reference)
class _ByHand(MethodConfig, ImageDataConfig, OptimConfig):
    max_rows: int = prepare_field(700, ge=0)
    split: Split = prepare_field([0.8, 0.1, 0.1])
    epochs: int = Field(default=9, ge=1)


class _Mixed(MethodConfig, ImageDataConfig, OptimConfig):
    max_rows: int = mixin_field(ImageDataConfig, "max_rows", 700)
    split: Split = mixin_field(ImageDataConfig, "split", [0.8, 0.1, 0.1])
    epochs: int = mixin_field(OptimConfig, "epochs", 9)


def test_mixin_field_changes_the_default_and_keeps_bounds_and_marker():
    assert (_Mixed().max_rows, _Mixed().split, _Mixed().epochs) == (700, [0.8, 0.1, 0.1], 9)
    assert _Mixed().lr == OptimConfig().lr  # a field not redeclared keeps the mixin's
    for bad in ({"max_rows": -1}, {"split": [0.5, 0.5, 0.5]}, {"split": [1.0]}, {"epochs": 0}):
        with pytest.raises(ValidationError):
            _Mixed(**bad)
    # the same field, bounds, marker and order as the redeclaration written out whole;
    # the constraints of ``Split`` once, not again from the redeclared annotation
    assert list(_Mixed.model_fields) == list(_ByHand.model_fields)
    for name in ("max_rows", "split", "epochs"):
        mixed, hand = _Mixed.model_fields[name], _ByHand.model_fields[name]
        assert repr(mixed) == repr(hand), name
    assert len(_Mixed.model_fields["split"].metadata) == 3  # MinLen, MaxLen, the sum check
    assert _Mixed.model_json_schema() == {**_ByHand.model_json_schema(), "title": "_Mixed"}
    assert prepare_fields(_Mixed) == prepare_fields(_ByHand)


def test_a_mixin_names_the_assets_its_fields_read():
    """A config with the image-data mixin reads the images asset: its spec lists it
    without restating it, first, and once; other assets stay as the spec lists them."""
    assert _spec(config_model=_Toy).assets == ("images",)
    assert _spec(config_model=_Toy, assets=("smollm2", "images")).assets == ("images", "smollm2")
    assert _spec(config_model=MethodConfig, assets=("smollm2",)).assets == ("smollm2",)
    image_methods = {
        s for s in registry.slugs() if issubclass(registry.get(s).config_model, ImageDatasets)
    }
    assert image_methods == {"bdia", "cplearn", "lip_rcp", "ttba"}
    assert all(registry.get(s).assets == ("images",) for s in image_methods)


def test_distinct_values_checks_like_the_validator_written_out():
    """Against the validator it replaces, written out whole, on every short list."""
    import itertools

    class Hand(StrictConfig):
        a: list[int] = []
        b: list[int] = []

        @field_validator("a", "b")
        @classmethod
        def _check(cls, v: list[int]) -> list[int]:
            if any(x < 1 for x in v) or len(set(v)) != len(v):
                raise ValueError("distinct and >= 1")
            return sorted(v)

    class Short(StrictConfig):
        a: list[int] = []
        b: list[int] = []
        _check = distinct_values(
            "a", "b", message="distinct and >= 1", ok=lambda x: x >= 1, sort=True
        )

    def outcome(model, **kw):
        try:
            return model(**kw).model_dump()
        except ValidationError as exc:
            return [(e["loc"], e["msg"]) for e in exc.errors()]

    lists = [list(p) for n in range(4) for p in itertools.product([0, 1, 2, 3], repeat=n)]
    for v in lists:
        assert outcome(Short, a=v) == outcome(Hand, a=v), v
        assert outcome(Short, b=v) == outcome(Hand, b=v), v
    assert outcome(Short, a=[3, 1]) == {"a": [1, 3], "b": []}  # kept sorted
    assert outcome(Short, a=[1, 1]) == [(("a",), "Value error, distinct and >= 1")]

    class Unsorted(StrictConfig):
        a: list[str] = []
        _check = distinct_values("a", message="twice")

    assert Unsorted(a=["y", "x"]).a == ["y", "x"]  # any value passes; order kept
    with pytest.raises(ValidationError, match="twice"):
        Unsorted(a=["x", "x"])


def test_figures_hook_draws_the_plots_module_figures_in_order(tmp_path, monkeypatch):
    """A plots hook from :func:`figures_hook` imports the plots module beside the hooks
    module when it runs and calls each figure on the table or the hook's last argument."""
    import sys
    import types

    from reprolab.contract import Figure, Run, figures_hook

    calls = []

    def draw(tag):
        def f(source, path, **kwargs):
            calls.append((tag, source, path, kwargs))
            return path

        return f

    module = types.ModuleType("toy_figs.plots")
    module.FIGURES = (
        Figure(draw("a"), "a.png"),
        Figure(draw("b"), "b.png", "units"),
        Figure(draw("c"), "c.png", "table", {"metric": "acc"}),
    )
    module.RUNTIME_FIGURES = (Figure(draw("t"), "t.png", "units"),)
    monkeypatch.setitem(sys.modules, "toy_figs", types.ModuleType("toy_figs"))
    monkeypatch.setitem(sys.modules, "toy_figs.plots", module)
    run = Run(_spec(hooks="toy_figs.method"), MethodConfig(), (0,), tmp_path)
    table, trained = object(), object()
    paths = figures_hook()(run, table, tmp_path, trained)
    assert paths == [tmp_path / "a.png", tmp_path / "b.png", tmp_path / "c.png"]
    assert calls == [
        ("a", table, tmp_path / "a.png", {}),
        ("b", trained, tmp_path / "b.png", {}),
        ("c", table, tmp_path / "c.png", {"metric": "acc"}),
    ]
    calls.clear()
    timings = {"u": {}}
    assert figures_hook("RUNTIME_FIGURES")(run, table, tmp_path, timings) == [tmp_path / "t.png"]
    assert calls == [("t", timings, tmp_path / "t.png", {})]


def test_asset_sections_are_validated():
    raw = copy.deepcopy(GOOD)
    raw["assets"]["nosuch"] = {}
    with pytest.raises(config.ConfigError, match="assets.nosuch: unknown asset"):
        config.validate(raw)
    raw = copy.deepcopy(GOOD)
    raw["assets"]["images"] = {"smoke": {"datasets": ["cifar"]}}
    with pytest.raises(config.ConfigError, match="assets.images.smoke.datasets"):
        config.validate(raw)
    raw = copy.deepcopy(GOOD)
    raw["assets"] = {}
    with pytest.raises(config.ConfigError, match="keep at least `images: {}`"):
        config.validate(raw)


def test_missing_asset_names_the_command_that_rebuilds_it(tmp_path):
    with pytest.raises(io.CorruptDataError, match=r"dvc repro assets@images"):
        io.verified_asset(tmp_path, "images")


def test_an_asset_manifest_is_the_same_on_a_rebuild(tmp_path):
    """Timings a build reports go to MLflow, not into the versioned manifest: two builds
    of the smollm2 tokenizer asset write byte-identical manifests."""
    from reprolab.assets import smollm2
    from reprolab.stages._common import split_timings

    manifests = []
    for name in ("a", "b"):
        out = tmp_path / name
        out.mkdir()
        meta, timings = split_timings(smollm2.build(smollm2.Smollm2Config(), out, tmp_path))
        assert set(timings) == {"tokenizer_seconds"} and timings["tokenizer_seconds"] >= 0
        assert not any(k.endswith("_seconds") for k in meta)
        io.write_manifest(out, {**meta, "asset": "smollm2"})
        manifests.append((out / io.MANIFEST).read_bytes())
    assert manifests[0] == manifests[1]


def test_timings_are_split_out_of_manifest_metadata_at_any_depth():
    from reprolab.stages._common import split_timings

    meta = {
        "tasks": ["a"],
        "calibration": {"rule": "r", "seconds": 0.7, "results": {"a": {"acc": 0.5}}},
        "load_seconds": 2,
        "tokenize_ms": 12.5,
        "seconds_total": 3.0,
        "seconds_note": "kept: a timing name, but not a number",
        "cached_seconds": True,
    }
    kept, timings = split_timings(meta)
    assert kept == {
        "tasks": ["a"],
        "calibration": {"rule": "r", "results": {"a": {"acc": 0.5}}},
        "seconds_note": "kept: a timing name, but not a number",
        "cached_seconds": True,
    }
    assert timings == {
        "calibration.seconds": 0.7,
        "load_seconds": 2.0,
        "tokenize_ms": 12.5,
        "seconds_total": 3.0,
    }


def test_image_asset_without_the_dataset_names_the_params_key(tmp_path):
    from reprolab.core import datasets

    io.save_arrays(tmp_path, "digits", {"x": np.zeros((2, 4), np.uint8), "y": np.zeros(2)})
    x, _ = datasets.image_asset(tmp_path, "digits")
    assert x.shape == (2, 4)
    with pytest.raises(datasets.MissingSourceError, match="assets.images.<profile>.datasets"):
        datasets.image_asset(tmp_path, "fashion_mnist")


# ------------------------------------------------------------------ cast precisions


def test_bf16_cast_runs_in_bf16_and_stays_close_to_fp32():
    import torch

    from reprolab.core.precision import cast

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    x = torch.randn(32, 8)
    low = cast(net, "bf16")
    assert low.inner[0].weight.dtype == torch.bfloat16
    assert net[0].weight.dtype == torch.float32  # the original is untouched
    out, ref = low(x), net(x)
    assert out.dtype == torch.float32
    # bf16 keeps 8 mantissa bits: relative error ~ 2^-8 per op
    assert torch.allclose(out, ref, rtol=0.05, atol=0.05) and not torch.equal(out, ref)
    with pytest.raises(TypeError, match="needs an nn.Module"):
        cast({"keep": 1}, "bf16")


def test_run_gives_the_verified_assets_of_its_method(tmp_path):
    """Hooks get an asset's folder from their Run (no module-global stage state); the
    stage verifies it first, naming the rebuild command when it is missing."""
    from reprolab.contract import Run
    from reprolab.paths import asset_dir

    spec = dataclasses.replace(registry.get("ttba"), assets=("images",))
    cfg = config.method_config("ttba", "smoke", {}, "defaults")
    with pytest.raises(io.CorruptDataError, match=r"dvc repro assets@images"):
        io.verified_asset(tmp_path, "images")
    folder = asset_dir(tmp_path, "images")
    with io.atomic_dir(folder) as tmp:
        (tmp / "x.npz").write_bytes(b"1")
        io.write_manifest(tmp, {"asset": "images"})
    run = Run(spec, cfg, (0, 1), tmp_path, {"images": io.verified_asset(tmp_path, "images")})
    assert run.asset("images") == folder
    with pytest.raises(ValueError, match="'smollm2' is not in MethodSpec.assets"):
        run.asset("smollm2")
    assert run.trainer == cfg.trainer and run.variants == tuple(spec.variant_names())
    units = run.default_units(["b", "a"])
    assert [u.id for u in units[:2]] == [f"a__{v}__s0" for v in spec.variant_names()[:2]]
    assert len(units) == 2 * 2 * len(spec.variant_names())
