"""Training-signal probes (reprolab.probe): the signals read from checkpoint histories
against values worked out by hand, overrides parsed as YAML, and a bad setting refused
before any copy or compute."""

from __future__ import annotations

import json

import pytest
import torch
import yaml

from reprolab import probe, registry
from reprolab.contract import Unit

HISTORIES = {
    Unit("g1", "a", 0): [
        {"epoch": 1, "train_loss": 2.0, "train_acc": 0.5, "val_loss": 1.5, "val_acc": 0.4},
        {"epoch": 2, "train_loss": 1.0, "train_acc": 0.9, "val_loss": 1.2, "val_acc": 0.6},
        {"epoch": 3, "train_loss": 0.5, "train_acc": 1.0, "val_loss": 1.4, "val_acc": 0.5},
    ],
    Unit("g1", "a", 1): [
        {"epoch": 1, "train_loss": 1.0, "val_acc": 0.7, "val_loss": 0.9},
        {
            "epoch": 5,
            "train_loss": 0.2,
            "val_acc": 0.8,
            "val_loss": 1.1,
            "stop_epoch": 5,
            "stopped_early": 1.0,
        },
    ],
    Unit("g2", "b", 0): [{"step": 10, "train_sse": 3.0}],
}


@pytest.fixture
def trained(tmp_path):
    ckpt, runtime = tmp_path / "checkpoints", tmp_path / "runtime"
    ckpt.mkdir()
    runtime.mkdir()
    for unit, history in HISTORIES.items():
        saved = {"state": {}, "history": history}
        if unit.task == "g2":  # a method's own weight-side signals (TrainedUnit.signals)
            saved["signals"] = {"dist_ab_rel": 0.25}
        torch.save(saved, ckpt / f"{unit.id}.pt")
    (ckpt / "units.json").write_text(json.dumps({"units": [u.as_json() for u in HISTORIES]}))
    seconds = {u.id: {"train_seconds": s} for u, s in zip(HISTORIES, (2.0, 4.0, 1.0), strict=True)}
    (runtime / "train.json").write_text(json.dumps({"units": seconds}))
    return ckpt, runtime


def test_unit_signals_and_their_summary_match_the_histories(trained):
    rows = probe.unit_signals(*trained)
    first, second, third = rows
    assert first["length"] == 3 and first["last_train_loss"] == 0.5
    assert first["mid_train_loss"] == 1.0 and second["mid_train_loss"] == 1.0  # entries 1, 0
    assert first["best_val_loss"] == 1.2 and first["best_val_acc"] == 0.6
    assert first["gap_acc"] == pytest.approx(1.0 - 0.5)
    assert second["length"] == 5 and second["stopped_early"] == 1.0  # stop_epoch wins
    assert "gap_acc" not in second  # no train accuracy in its history
    assert third == {
        "unit": third["unit"],
        "task": "g2",
        "variant": "b",
        "seed": 0,
        "train_seconds": 1.0,
        "length": 10.0,
        "dist_ab_rel": 0.25,
    }
    a, b = probe.summarise(rows)
    assert (a["variant"], a["units"], b["units"]) == ("a", 2, 1)
    assert a["length"] == {"mean": 4.0, "min": 3.0, "max": 5.0}
    assert a["best_val_acc"]["mean"] == pytest.approx((0.6 + 0.8) / 2)
    assert a["train_seconds"] == {"mean": 3.0, "min": 2.0, "max": 4.0}
    assert a["stopped_early"] == {"mean": 1.0, "min": 1.0, "max": 1.0}  # of those that say
    assert probe.by_task(rows) == {"g1": {"a": pytest.approx(0.7)}}
    text = probe.to_markdown(
        {
            "name": "x",
            "method": "m",
            "seeds": [100, 101],
            "overrides": {"epochs": 3},
            "units": 3,
            "dvc_repro_seconds": 1.0,
            "date": "d",
            "commit": "c" * 40,
            "dirty": False,
            "machine": {},
            "variants": [a, b],
            "best_val_acc_by_task": {},
        }
    )
    assert "| a | 2 | 4 [3, 5] |" in text and "no test metric" in text
    # the method's own signal gets a column of its own, empty for variants without it
    header = next(line for line in text.splitlines() if line.startswith("| variant"))
    assert header.endswith("| dist_ab_rel |")
    assert "| b | 1 | 10 [10, 10] |" in text and text.rstrip().endswith("0.25 [0.25, 0.25] |")
    # the last training accuracy gets a per-task table when a method has tasks
    sig = [
        {"unit": "u1", "task": "t1", "variant": "a", "seed": 0, "last_train_acc": 1.0},
        {"unit": "u2", "task": "t1", "variant": "a", "seed": 1, "last_train_acc": 0.5},
        {"unit": "u3", "task": "t2", "variant": "b", "seed": 0, "last_train_acc": 0.25},
        {"unit": "u4", "task": "graph", "variant": "b", "seed": 0, "train_seconds": 1.0},
    ]
    table = probe.by_task(sig, "last_train_acc")
    assert table == {"t1": {"a": 0.75}, "t2": {"b": 0.25}}
    record = {
        "name": "x",
        "method": "m",
        "seeds": [100],
        "overrides": {},
        "units": 4,
        "dvc_repro_seconds": 1.0,
        "date": "d",
        "commit": "c" * 40,
        "dirty": False,
        "machine": {},
        "variants": probe.summarise(sig),
        "last_train_acc_by_task": table,
    }
    lines = probe.to_markdown(record).splitlines()
    assert "| t1 | 0.750 |  |" in lines and "| t2 |  | 0.250 |" in lines


def test_overrides_are_yaml_values():
    got = probe.parse_overrides(["epochs=2000", "grok_init=reference", "homophilies=[0.1, 0.9]"])
    assert got == {"epochs": 2000, "grok_init": "reference", "homophilies": [0.1, 0.9]}
    with pytest.raises(probe.ProbeError, match="expected key=value"):
        probe.parse_overrides(["epochs"])


def test_a_bad_setting_is_refused_before_any_copy(tmp_path, monkeypatch):
    from tests.conftest import ROOT

    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    with pytest.raises(probe.ProbeError, match="no_such_key"):
        probe.probe_params(raw, "grokformer", {"no_such_key": 1}, [100, 101])
    with pytest.raises(probe.ProbeError, match="epochs"):
        probe.probe_params(raw, "grokformer", {"epochs": -5}, [100, 101])
    copies = []
    monkeypatch.setattr(probe.scratch, "copy_project", lambda *a, **k: copies.append(a))
    with pytest.raises(probe.ProbeError):
        probe.run_probe(ROOT, "grokformer", {"epochs": 0}, "bad", out=tmp_path)
    assert copies == [] and not any(tmp_path.iterdir())
    with pytest.raises(probe.ProbeError, match="one word"):
        probe.run_probe(ROOT, "grokformer", {}, "a/b", out=tmp_path)


def test_a_probe_is_one_look_at_its_seeds_whatever_the_evidence_plan():
    """cot_order's paper profile asks for 3 seeds in its first look (code default); a
    probe on 2 seeds is still valid, and a probe never plans more rounds."""
    from reprolab import config
    from tests.conftest import ROOT

    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert registry.get("cot_order").profile_defaults["paper"]["evidence"]["first"] == 3
    params = probe.probe_params(raw, "cot_order", {"max_new_tokens": 64}, [100, 101])
    assert params["methods"]["cot_order"]["paper"]["evidence"] == {"first": 2, "max_seeds": 2}
    section = params["methods"]["cot_order"]["paper"]
    cfg = config.method_config(
        "cot_order", "paper", section, "probe", evidence=params.get("evidence", {}).get("paper")
    )
    assert cfg.evidence.seeds(params["seeds"]["paper"]) == [100, 101]
    assert cfg.max_new_tokens == 64
