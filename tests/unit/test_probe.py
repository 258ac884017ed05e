"""Training-signal probes (reprolab.evidence.running.probe): the signals read from checkpoint histories
against values worked out by hand, no validation or test value of a compared variant in
what a probe writes, returns or prints, overrides parsed as YAML, and a bad setting
refused before any copy or compute."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import torch
import yaml

from reprolab import registry
from reprolab.contract import Unit
from reprolab.evidence.running import probe

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
    assert first["last_train_acc"] == 1.0 and "last_train_acc" not in second
    assert second["length"] == 5 and second["stopped_early"] == 1.0  # stop_epoch wins
    # no validation quantity is read (the allow-list of training keys)
    assert not any(probe.is_held_out(k) for r in rows for k in r)
    assert not any("val" in k or "gap" in k for r in rows for k in r)
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
    assert a["last_train_loss"]["mean"] == pytest.approx((0.5 + 0.2) / 2)
    assert a["train_seconds"] == {"mean": 3.0, "min": 2.0, "max": 4.0}
    assert a["stopped_early"] == {"mean": 1.0, "min": 1.0, "max": 1.0}  # of those that say
    assert probe.by_task(rows) == {"g1": {"a": 1.0}}  # the last training accuracy
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
            "last_train_acc_by_task": {},
        }
    )
    assert "| a | 2 | 4 [3, 5] |" in text and "no validation or test metric" in text
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


#: a bdia-like probe: two compared variants on two tasks, histories with validation and
#: test quantities (values no other field of the record can hold by chance)
BDIA_UNITS = {
    Unit(task, variant, seed): (variant, task, seed)
    for variant in ("bdia", "standard")
    for task in ("mnist", "fashion_mnist")
    for seed in (100, 101)
}
HELD_OUT_NAMES = ("val_acc", "val_loss", "test_acc", "best_val", "gap_acc", "val_miou", "val acc")


def _bdia_history(variant: str, task: str, seed: int) -> list[dict]:
    k = ("bdia", "standard").index(variant) * 4 + ("mnist", "fashion_mnist").index(task) * 2
    k += seed - 100  # 0..7: a distinct value per unit
    return [
        {
            "epoch": e,
            "train_loss": 0.05 / e + k * 1e-5,
            "train_acc": 0.9 + 0.01 * e,
            "val_loss": 0.613579 + k * 0.011 + e * 1e-6,
            "val_acc": 0.724681 + k * 0.013 - e * 1e-6,
            "test_acc": 0.835791 + k * 0.007,
        }
        for e in (1, 2, 3)
    ]


def _held_out_values() -> list[float]:
    """Every validation or test value of the histories and the gap they make."""
    out = []
    for variant, task, seed in BDIA_UNITS.values():
        history = _bdia_history(variant, task, seed)
        for h in history:
            out += [h["val_loss"], h["val_acc"], h["test_acc"]]
        out.append(history[-1]["train_acc"] - history[-1]["val_acc"])
    return out


class _FakeRepro:
    """Stands in for ``dvc repro train@bdia`` (the ``subprocess`` module probe.py
    calls): writes the checkpoints and the train stage's timings the train stage would,
    and prints the train stage's per-unit line (last history entry and signals)."""

    PIPE = subprocess.PIPE
    STDOUT = subprocess.STDOUT
    CompletedProcess = subprocess.CompletedProcess

    def __init__(self):
        self.calls = []

    def _train(self, cmd, cwd) -> list[str]:
        assert cmd[:2] == ["dvc", "repro"], cmd  # nothing else runs through here
        self.calls.append(cmd)
        ckpt = Path(cwd) / "data" / "checkpoints" / "bdia"
        runtime = Path(cwd) / "data" / "runtime" / "bdia"
        ckpt.mkdir(parents=True)
        runtime.mkdir(parents=True)
        lines, seconds = [], {}
        for i, (unit, key) in enumerate(BDIA_UNITS.items()):
            history = _bdia_history(*key)
            signals = {"dist_ab_rel": 0.25, "val_miou": 0.4681357}
            torch.save(
                {"state": {}, "history": history, "signals": signals}, ckpt / f"{unit.id}.pt"
            )
            seconds[unit.id] = {"train_seconds": 10.0 + i}
            shown = ", ".join(f"{k}={v:.4g}" for k, v in {**history[-1], **signals}.items())
            lines.append(f"  {unit.id}: val nmse {signals['val_miou']}\n")  # a method's own
            lines.append(f"train@bdia [{i + 1}/{len(BDIA_UNITS)}] {unit.id}: {shown} (1.0s)\n")
        units = {"units": [u.as_json() for u in BDIA_UNITS]}
        (ckpt / "units.json").write_text(json.dumps(units))
        (runtime / "train.json").write_text(json.dumps({"units": seconds}))
        return ["Running stage 'train@bdia':\n", *lines]

    def run(self, cmd, cwd=None, **kwargs):  # how the probe ran dvc before it read its log
        for line in self._train(cmd, cwd):
            print(line, end="")
        return subprocess.CompletedProcess(cmd, 0)

    def Popen(self, cmd, cwd=None, **kwargs):  # noqa: N802 (subprocess's name)
        lines = self._train(cmd, cwd)

        class Proc:
            stdout = iter(lines)
            returncode = 0

            def wait(self):
                return 0

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

        return Proc()


def test_a_bdia_like_probe_shows_no_validation_or_test_value(tmp_path, monkeypatch, capsys):
    """The record run_probe writes (.json and .md), returns and prints holds the
    training loss of both compared variants and none of their validation or test
    values, under any name; dvc repro and the project copy are stood in for."""
    from tests.conftest import ROOT

    fake = _FakeRepro()
    work = tmp_path / "work"
    monkeypatch.setattr(probe, "subprocess", fake)
    monkeypatch.setattr(probe.scratch, "copy_project", lambda root, dest, params: None)
    monkeypatch.setattr(probe.tempfile, "mkdtemp", lambda **kw: str(work.mkdir() or work))
    logged: list[str] = []
    out = tmp_path / "probes"
    record = probe.run_probe(ROOT, "bdia", {"epochs": 3}, "blind", out=out, log=logged.append)
    assert fake.calls == [["dvc", "repro", "train@bdia"]]
    record_json = (out / "blind.json").read_text()
    record_md = (out / "blind.md").read_text()
    shown = "\n".join(logged) + capsys.readouterr().out
    outputs = {"json": record_json, "md": record_md, "returned": json.dumps(record), "shown": shown}
    # the training loss is there, for each compared variant
    rows = {v["variant"]: v for v in record["variants"]}
    assert set(rows) == {"bdia", "standard"}
    last_loss = [h[-1]["train_loss"] for h in map(lambda k: _bdia_history(*k), BDIA_UNITS.values())]
    assert rows["bdia"]["last_train_loss"]["min"] == pytest.approx(min(last_loss[:4]))
    assert rows["standard"]["last_train_loss"]["max"] == pytest.approx(max(last_loss[4:]))
    assert rows["bdia"]["length"]["mean"] == 3.0 and rows["bdia"]["dist_ab_rel"]["mean"] == 0.25
    assert "last train loss" in record_md and f"{min(last_loss[:4]):.4g}" in record_md
    # the train stage's unit lines are shown, their training values only
    assert shown.count("train@bdia [") == len(BDIA_UNITS) and "train_loss=" in shown
    # no validation or test value, in full or as the markdown and the log round it
    for name, text in outputs.items():
        for value in [*_held_out_values(), 0.4681357]:
            for form in (repr(value), f"{value:.4g}", f"{value:.3f}"):
                assert not re.search(rf"(?<![\d.]){re.escape(form)}", text), (name, value, form)
        for key in HELD_OUT_NAMES:
            assert key not in text, (name, key)


def test_a_repeated_set_keeps_every_override():
    """`--set a=1 --set b=2` is `--set a=1 b=2`: a second --set once silently dropped the
    first (a probe then ran without its candidate's change)."""
    from reprolab.evidence.running.probe import _parser, parse_overrides

    args = _parser().parse_args(
        ["safety_dims", "--name", "x", "--set", "calib_topics=4", "--set", "variants=[a, b]"]
    )
    assert parse_overrides(args.set) == {"calib_topics": 4, "variants": ["a", "b"]}
    args = _parser().parse_args(["safety_dims", "--name", "x", "--set", "calib_topics=4", "k=v"])
    assert parse_overrides(args.set) == {"calib_topics": 4, "k": "v"}
