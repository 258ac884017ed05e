"""EnsLoss's CNN setting (the paper's regime): symmetric label noise at its nominal rate,
the prepared class pairs (shapes, labels, which labels are noisy), a network with far
more parameters than training images at the paper config, int8 on its convolutions,
claims that read only their own setting, and the metrics of how well noisy labels fit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from reprolab import config
from reprolab.contract import Run, Unit
from reprolab.core import datasets, io, quant
from reprolab.methods.ensloss import SPEC
from reprolab.methods.ensloss import method as hooks
from reprolab.methods.ensloss.net import cnn, n_parameters
from reprolab.stages._common import select_units
from reprolab.stages.evaluate import metrics_table


def fake_images(folder: Path, name: str, per_class: int, side: int = 28) -> Path:
    """An images asset whose pixel 0 of every image is its class (noise elsewhere), so a
    prepared label can be checked against the image it belongs to."""
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(10), per_class)
    x = rng.integers(0, 256, (len(y), side * side), dtype=np.uint8)
    x[:, 0] = y
    folder.mkdir(parents=True, exist_ok=True)
    io.save_arrays(folder, name, {"x": x, "y": y.astype(np.int64)})
    return folder


def cnn_config(profile: str = "smoke", **over):
    return config.method_config("ensloss", profile, {"settings": ["cnn"], **over}, "test")


def test_flip_symmetric_flips_the_nominal_share_of_each_class():
    y = np.array([0] * 600 + [1] * 400)
    noisy = hooks.flip_symmetric(y, 0.2, np.random.default_rng(0))
    assert ((noisy != y) & (y == 0)).sum() == 120 and ((noisy != y) & (y == 1)).sum() == 80
    assert set(np.unique(noisy)) == {0, 1}
    again = hooks.flip_symmetric(y, 0.2, np.random.default_rng(0))
    assert np.array_equal(noisy, again)  # a function of the generator's seed
    other = hooks.flip_symmetric(y, 0.2, np.random.default_rng(1))
    assert not np.array_equal(noisy, other)
    assert np.array_equal(hooks.flip_symmetric(y, 0.0, np.random.default_rng(0)), y)


def test_prepare_makes_noisy_cnn_pairs_with_true_clean_labels(tmp_path):
    folder = fake_images(tmp_path / "images", "mnist", per_class=200)
    cfg = cnn_config(
        cnn_datasets=["mnist"], cnn_n_pairs=3, cnn_max_rows=400, cnn_split=[0.25, 0.25, 0.5]
    )
    tasks, meta = hooks.prepare(Run(SPEC, cfg, (0, 1), tmp_path, {"images": folder}), tmp_path)
    pairs = hooks.class_pairs(3, cfg.pair_seed)
    assert set(tasks) == {f"cnn-mnist-{a}v{b}" for a, b in pairs}  # no MLP task
    for a, b in pairs:
        data = tasks[f"cnn-mnist-{a}v{b}"]
        for part, n in (("train", 100), ("val", 100), ("test", 200)):
            x = data[f"x_{part}"]
            assert x.shape == (n, 784) and x.dtype == np.uint8
            assert set(np.unique(x[:, 0])) == {a, b}  # only the pair's images
        truth = {p: (data[f"x_{p}"][:, 0] == b).astype(np.int64) for p in ("train", "val", "test")}
        assert np.array_equal(data["y_train_clean"], truth["train"])
        assert np.array_equal(data["y_val"], truth["val"])  # evaluation labels are clean
        assert np.array_equal(data["y_test"], truth["test"])
        flipped = data["y_train"] != truth["train"]
        for label in (0, 1):  # symmetric: 20% of each class, exactly
            in_class = truth["train"] == label
            assert flipped[in_class].sum() == round(0.2 * in_class.sum())
        assert meta["label_noise"][f"cnn-mnist-{a}v{b}"] == pytest.approx(0.2, abs=0.01)
        x, y = datasets.part_tensors(data, "train")  # what training reads: noisy labels
        assert x.shape == (100, 784) and float(x.max()) <= 1.0
        assert torch.equal(y, torch.from_numpy(data["y_train"]))


def test_cnn_units_carry_their_setting_and_the_first_looks_seeds(tmp_path):
    # The CNN's own seed cap is gone: units() gives every unit every seed it is given,
    # and the stage's selection (evidence.first) cuts every setting to the first look.
    cfg = config.method_config(
        "ensloss", "smoke", {"settings": ["mlp", "cnn"], "evidence": {"first": 1}}, "test"
    )
    tasks = ["digits-0v1", *hooks.cnn_tasks(cfg)]
    units = hooks.units(Run(SPEC, cfg, (0, 1), tmp_path), tasks)
    cnn_units = [u for u in units if hooks.setting_of(u) == "cnn"]
    assert {u.task for u in cnn_units} == set(hooks.cnn_tasks(cfg))
    assert {u.seed for u in cnn_units} == {0, 1} and all(
        u.param == {"setting": "cnn"} for u in cnn_units
    )
    mlp_units = [u for u in units if u.task == "digits-0v1"]
    assert {u.seed for u in mlp_units} == {0, 1} and all(u.params == () for u in mlp_units)
    base = cfg.evidence.base_seeds((0, 1))
    assert base == [0]
    kept = select_units(SPEC, units, base, cfg)
    assert {u.seed for u in kept} == {0}
    assert sorted(kept, key=lambda u: u.id) == sorted(
        (u for u in units if u.seed == 0), key=lambda u: u.id
    )
    kept_cnn = [u for u in kept if hooks.setting_of(u) == "cnn"]
    assert {u.task for u in kept_cnn} == set(hooks.cnn_tasks(cfg))


def test_paper_cnn_has_far_more_parameters_than_training_images(tmp_path):
    folder = fake_images(tmp_path / "images", "fashion_mnist", per_class=1000)
    cfg = config.method_config("ensloss", "paper", {"settings": ["cnn"]}, "test")
    tasks, meta = hooks.prepare(Run(SPEC, cfg, (0, 1, 2), tmp_path, {"images": folder}), tmp_path)
    assert len(tasks) == 8 and set(meta["sizes"].values()) == {250}
    unit = Unit(next(iter(tasks)), "ensloss", 0, {"setting": "cnn"})
    net = hooks.build_net(unit, cfg, 784)
    assert n_parameters(net) == 206_017
    assert n_parameters(net) > 500 * max(meta["sizes"].values())
    # every seed it is given (no CNN seed cap; the stage applies evidence.first)
    assert len(hooks.units(Run(SPEC, cfg, (0, 1, 2, 3, 4), tmp_path), sorted(tasks))) == 8 * 4 * 5


def test_int8_runs_both_convolutions_of_the_cnn():
    torch.manual_seed(0)
    net = cnn(28, (16, 32), 128).eval()
    calib = torch.rand(64, 784)
    qnet = quant.quantize(net, "int8_dynamic", calibration=[calib])
    assert sum(isinstance(m, quant.Int8Conv) for m in qnet.modules()) == 2
    covered = quant.coverage(net, qnet)
    assert covered["share"] == 1.0 and covered["full_precision"] == {}
    x = torch.rand(32, 784)
    with torch.inference_mode():
        ref, out = net(x), qnet(x)
    assert float((out - ref).norm() / ref.norm()) < 0.1


def _table(cnn_better: bool, with_cnn: bool = True) -> pd.DataFrame:
    """EnsLoss 0.05 ahead of every baseline on 6 MLP pairs; on 6 CNN pairs 0.05 ahead
    (``cnn_better``) or behind. Seed noise is small, so every pair is decided."""
    rng = np.random.default_rng(0)
    rows = []
    settings = [("mlp", True), ("cnn", cnn_better)] if with_cnn else [("mlp", True)]
    for setting, better in settings:
        params = {} if setting == "mlp" else {"setting": "cnn"}
        for t in range(6):
            for seed in range(3):
                for variant in ("ensloss", "bce", "hinge", "exp"):
                    unit = Unit(f"{setting}-{t}", variant, seed, params)
                    acc = 0.8 + (0.05 if better else -0.05) * (variant == "ensloss")
                    for metric in ("test_acc", "val_acc"):
                        rows.append((unit, "fp32", metric, acc + rng.normal(0, 0.002)))
    return metrics_table(rows)


def test_each_claim_reads_only_its_setting():
    verdicts = {c.id: c.evaluate(_table(cnn_better=False), "fp32", "paper") for c in SPEC.claims}
    assert len(verdicts) == 8
    for cid, result in verdicts.items():
        expected = "not_reproduced" if cid.startswith("cnn_") else "reproduced"
        assert result["verdict"] == expected, (cid, result["measured"]["summary"])
        assert result["measured"]["n_tasks"] == 6  # the other setting's pairs are not pooled
    flipped = {c.id: c.evaluate(_table(cnn_better=True), "fp32", "paper") for c in SPEC.claims}
    assert all(r["verdict"] == "reproduced" for r in flipped.values())


def test_cnn_claims_say_not_tested_without_cnn_units():
    table = _table(cnn_better=True, with_cnn=False)
    assert "setting" not in table.columns
    for claim in SPEC.claims:
        result = claim.evaluate(table, "fp32", "smoke")
        if claim.id.startswith("cnn_"):
            assert result["verdict"] == "inconclusive"
            assert result["measured"]["summary"].startswith("not tested")
        else:
            assert result["measured"]["n_tasks"] == 6


class Memoriser(torch.nn.Module):
    """Scores each input by the (noisy) label of its nearest training image: a model that
    has memorised its training labels, flipped ones included."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor):
        super().__init__()
        self.x, self.y = x, y

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        nearest = torch.cdist(x, self.x).argmin(dim=1)
        return (2.0 * self.y[nearest] - 1.0).unsqueeze(1)


def test_evaluate_measures_the_fit_of_noisy_and_clean_labels(tmp_path):
    folder = fake_images(tmp_path / "images", "mnist", per_class=100)
    cfg = cnn_config(cnn_datasets=["mnist"], cnn_n_pairs=1, cnn_max_rows=200)
    run = Run(SPEC, cfg, (0,), tmp_path, {"images": folder})
    tasks, meta = hooks.prepare(run, tmp_path)
    ((task, data),) = tasks.items()
    unit = Unit(task, "bce", 0, {"setting": "cnn"})
    rho = meta["label_noise"][task]
    m = hooks.evaluate_unit(run, Memoriser(*datasets.part_tensors(data, "train")), unit, data, [])
    assert m["train_acc_noisy"] == 1.0 and m["noise_fit"] == 1.0
    assert m["train_acc"] == pytest.approx(1 - rho)
    torch.manual_seed(0)  # an untrained CNN: train accuracy on noisy and clean labels
    net = hooks.build_net(unit, cfg, 784).eval()  # differ by exactly rho (2 noise_fit - 1)
    m = hooks.evaluate_unit(run, net, unit, data, [])
    assert m["train_acc_noisy"] - m["train_acc"] == pytest.approx(rho * (2 * m["noise_fit"] - 1))
