"""Slow tier (`make test-slow`): the default smoke profile as `make run` runs it (every
method of params.yaml through `dvc repro`), and the paper profile's data path with the
real Fashion-MNIST package."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from reprolab.core import io
from tests.conftest import ROOT, copy_project, run

pytestmark = pytest.mark.slow


def test_default_smoke_profile_end_to_end(tmp_path):
    """EnsLoss at its committed smoke defaults, and every other method of params.yaml
    (at its tiny test config) in the same DAG: the fast tier runs one or two methods
    through DVC, this runs them all."""
    methods = tuple(yaml.safe_load((ROOT / "params.yaml").read_text())["methods"])
    root = copy_project(tmp_path / "project", ensloss={}, methods=methods)
    run(["dvc", "repro"], root)
    report = (root / "data/reports/claims.md").read_text()
    for slug in methods:
        for claim in json.loads((root / f"data/eval/{slug}/claims.json").read_text()):
            assert f"| {slug} | {claim['id']} | {claim['precision']} |" in report
    units = json.loads((root / "data/checkpoints/ensloss/units.json").read_text())["units"]
    assert len(units) == 2 * 2 * 4 * 2  # datasets x pairs x losses x seeds
    claims = json.loads((root / "data/eval/ensloss/claims.json").read_text())
    assert len(claims) == 2 * 4 * 2  # settings x claims x precisions
    summary = json.loads((root / "data/eval/ensloss/metrics.json").read_text())
    # every loss learns the easy digit pairs; int8 costs at most a point of accuracy
    for variant, by_precision in summary["variants"].items():
        assert by_precision["fp32"]["test_acc"] > 0.9, variant
    assert abs(summary["quantized_minus_fp32"]["int8_dynamic"]["test_acc"]) < 0.01
    assert "Data and pipelines are up to date" in run(["dvc", "repro"], root).stdout


def test_paper_profile_prepares_fashion_mnist_pairs(tmp_path):
    root = copy_project(tmp_path / "project", ensloss={})
    run(["make", "data"], root, timeout=600)
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["profile"] = "paper"
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    run(["python", "-m", "reprolab", "prepare", "ensloss"], root)
    folder = root / "data/prepared/ensloss"
    manifest = io.verify_folder(folder, "")
    tasks = manifest["meta"]["tasks"]
    assert len([t for t in tasks if t.startswith("fashion_mnist-")]) == 8
    assert len([t for t in tasks if t.startswith("mnist-")]) == 8
    assert "breast_cancer" in tasks
    pair = io.load_arrays(folder / f"{sorted(t for t in tasks if t.startswith('fashion'))[0]}.npz")
    assert pair["x_train"].shape == (1500, 784) and pair["x_train"].dtype == np.uint8
    # 20% of training labels flipped, validation and test labels clean
    flipped = (pair["y_train"] != pair["y_train_clean"]).mean()
    assert 0.15 < flipped < 0.25
