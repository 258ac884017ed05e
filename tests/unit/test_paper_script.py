"""scripts/paper.py: the params it runs the paper profile with (no compute here)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("paper_script", ROOT / "scripts/paper.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _params() -> dict:
    return yaml.safe_load((ROOT / "params.yaml").read_text())


def test_paper_params_keep_the_methods_sections_and_switch_the_profile():
    params = _params()
    out = _script().paper_params(params, ["ensloss", "dp_noise"], None)
    assert out["profile"] == "paper"
    assert list(out["methods"]) == ["ensloss", "dp_noise"]
    assert out["methods"]["ensloss"] == params["methods"]["ensloss"]
    assert out["seeds"] == params["seeds"]
    # ensloss reads the images asset; no other asset is built
    assert list(out["assets"]) == ["images"]


def test_a_seed_set_replaces_only_the_paper_seeds():
    params = _params()
    out = _script().paper_params(params, ["dp_noise"], [5, 6, 7])
    assert out["seeds"]["paper"] == [5, 6, 7]
    assert out["seeds"]["smoke"] == params["seeds"]["smoke"]


def test_methods_without_assets_build_the_placeholder_asset_cheaply():
    from reprolab import config

    out = _script().paper_params(_params(), ["dp_noise"], None)
    # dvc.yaml's foreach needs one asset; it must not need `make data` (Fashion-MNIST)
    assert list(out["assets"]) == ["images"]
    cfg = config.asset_config("images", "paper", out["assets"]["images"]["paper"], "params.yaml")
    assert "fashion_mnist" not in cfg.datasets


def test_an_unknown_method_is_named_before_any_compute():
    with pytest.raises(SystemExit, match="nosuchmethod"):
        _script().paper_params(_params(), ["nosuchmethod"], None)


def test_compare_verdicts_counts_what_differs(tmp_path):
    import json

    def run(folder, seeds, verdicts):
        folder.mkdir()
        (folder / "run.json").write_text(json.dumps({"seeds": seeds}))
        claims = [
            {"id": cid, "precision": "fp32", "verdict": v, "measured": {"value": 0.1}}
            for cid, v in verdicts.items()
        ]
        (folder / "claims.json").write_text(json.dumps(claims))

    run(tmp_path / "a", [0, 1, 2], {"c1": "reproduced", "c2": "inconclusive", "c3": "reproduced"})
    run(tmp_path / "b", [5, 6, 7], {"c1": "reproduced", "c2": "reproduced", "c3": "not_reproduced"})
    text, differ = _script().compare_verdicts(tmp_path / "a", tmp_path / "b")
    assert differ == 2
    assert "reproduced in one and not reproduced in the other: 1" in text
    assert "| c1 | fp32 | reproduced | reproduced |" in text
