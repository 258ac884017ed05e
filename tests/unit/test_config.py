"""params.yaml validation: every bad input is named, with what is allowed."""

from __future__ import annotations

import copy

import pytest
import yaml

from reprolab import config
from tests.conftest import ROOT

GOOD = yaml.safe_load((ROOT / "params.yaml").read_text())


def bad(mutate) -> str:
    raw = copy.deepcopy(GOOD)
    mutate(raw)
    with pytest.raises(config.ConfigError) as err:
        config.validate(raw)
    return str(err.value)


def test_the_committed_params_validate():
    project = config.validate(copy.deepcopy(GOOD))
    assert project.profile in config.PROFILES
    assert set(project.methods) == set(GOOD["methods"])
    assert len(project.seeds) >= 2


def test_profile_selects_its_seeds_and_defaults():
    raw = copy.deepcopy(GOOD)
    raw["profile"] = "paper"
    project = config.validate(raw)
    assert project.seeds == tuple(GOOD["seeds"]["paper"])
    assert project.method("ensloss").epochs == 30  # PROFILE_DEFAULTS['paper']


def test_override_reaches_the_typed_config():
    raw = copy.deepcopy(GOOD)
    raw["methods"]["ensloss"]["smoke"] = {"epochs": 7, "datasets": ["digits"]}
    cfg = config.validate(raw).method("ensloss")
    assert cfg.epochs == 7 and cfg.datasets == ["digits"]


def test_unknown_profile_lists_allowed_values():
    msg = bad(lambda r: r.update(profile="huge"))
    assert "profile" in msg and "smoke" in msg and "paper" in msg


def test_negative_epochs_names_the_key():
    msg = bad(lambda r: r["methods"]["ensloss"].update(smoke={"epochs": -1}))
    assert "methods.ensloss.smoke.epochs" in msg and "greater than or equal to 1" in msg


def test_wrong_type_names_the_key():
    msg = bad(lambda r: r["methods"]["ensloss"].update(paper={"lr": "fast"}))
    assert "methods.ensloss.paper.lr" in msg


def test_bad_choice_lists_allowed_values():
    msg = bad(lambda r: r["methods"]["ensloss"].update(smoke={"datasets": ["cifar10"]}))
    assert "methods.ensloss.smoke.datasets.0" in msg and "fashion_mnist" in msg


def test_unknown_method_key_lists_allowed_keys():
    msg = bad(lambda r: r["methods"]["ensloss"].update(smoke={"epoch": 3}))
    assert "methods.ensloss.smoke.epoch: unknown key" in msg and "epochs" in msg


def test_unknown_top_level_key():
    msg = bad(lambda r: r.update(sedes=[1]))
    assert "sedes: unknown key" in msg and "seeds" in msg


@pytest.mark.parametrize("key", ["profile", "seeds", "methods"])
def test_missing_top_level_key(key):
    assert f"missing key '{key}'" in bad(lambda r: r.pop(key))


def test_unknown_method_lists_registered_ones():
    msg = bad(lambda r: r["methods"].update(nosuch={}))
    assert "methods.nosuch: unknown method" in msg and "ensloss" in msg


def test_a_method_without_a_section_is_not_run():
    raw = copy.deepcopy(GOOD)
    raw["methods"].pop("ensloss")
    project = config.validate(raw)
    assert "ensloss" not in project.slugs and project.slugs
    with pytest.raises(config.ConfigError, match="methods.ensloss: .*no section"):
        project.method("ensloss")


def test_no_method_at_all_is_rejected():
    msg = bad(lambda r: r.update(methods={}))
    assert "methods: no method to run" in msg


def test_single_seed_is_rejected():
    msg = bad(lambda r: r["seeds"].update(smoke=[0]))
    assert "seeds.smoke" in msg and "at least 2 seeds" in msg


def test_duplicate_or_negative_seeds_are_rejected():
    assert "distinct" in bad(lambda r: r["seeds"].update(paper=[1, 1]))
    assert "integers >= 0" in bad(lambda r: r["seeds"].update(paper=[0, -3]))


def test_cross_field_rule_is_explained():
    msg = bad(lambda r: r["methods"]["ensloss"].update(smoke={"split": [0.5, 0.5, 0.5]}))
    assert "methods.ensloss.smoke.split" in msg and "summing to 1" in msg


def test_missing_file(tmp_path):
    with pytest.raises(config.ConfigError, match="params.yaml not found"):
        config.load(tmp_path / "params.yaml")


def test_trainer_section_reaches_every_method_and_a_method_overrides_keys():
    raw = copy.deepcopy(GOOD)
    raw["trainer"] = {"smoke": {"precision": "bf16-mixed", "devices": 2}, "paper": {}}
    raw["methods"]["ensloss"]["smoke"] = {"trainer": {"devices": 1}}
    project = config.validate(raw)
    own = project.method("ensloss").trainer
    assert (own.precision, own.devices, own.accelerator) == ("bf16-mixed", 1, "auto")
    other = project.method("lip_rcp").trainer
    assert (other.precision, other.devices) == ("bf16-mixed", 2)
    files = config.resolved_files(project)
    assert files["lip_rcp.json"]["method"]["trainer"]["devices"] == 2
    # prepare never trains: a trainer change must not rerun it
    assert "trainer" not in files["lip_rcp.prepare.json"]["method"]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda r: r.update(trainer={"smoke": {"accelerator": "tpu"}}),
            "trainer.smoke.accelerator",
        ),
        (
            lambda r: r.update(trainer={"smoke": {"gpus": 1}}),
            "trainer.smoke.gpus: unknown key; allowed keys: accelerator, devices",
        ),
        (lambda r: r.update(trainer={"nightly": {}}), "trainer.nightly: unknown key"),
        (
            lambda r: r["methods"]["ensloss"].update(smoke={"trainer": {"devcies": 2}}),
            "methods.ensloss.smoke.trainer.devcies: unknown key; allowed keys: accelerator",
        ),
    ],
)
def test_bad_trainer_keys_are_named(mutate, message):
    assert message in bad(mutate)


def test_a_device_this_machine_lacks_is_named_before_compute(monkeypatch):
    import torch

    from reprolab.contract import TrainerConfig
    from reprolab.core.devices import check_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(
        ValueError, match=r"trainer.paper: accelerator 'gpu', but this machine has no CUDA GPU"
    ):
        check_device(TrainerConfig(accelerator="gpu"), "trainer.paper")
    with pytest.raises(ValueError, match="'16-mixed' needs a CUDA GPU"):
        check_device(TrainerConfig(precision="16-mixed"), "trainer.paper")
    with pytest.raises(ValueError, match="devices 4096, but this machine has"):
        check_device(TrainerConfig(devices=4096), "trainer.paper")
    check_device(TrainerConfig(precision="bf16-mixed"), "trainer.paper")  # fine on a CPU
