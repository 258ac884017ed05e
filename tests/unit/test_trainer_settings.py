"""params.yaml's trainer section reaches Lightning Fabric (core.training.make_fabric)."""

from __future__ import annotations

import torch

from reprolab import contract, registry
from reprolab.contract import TrainerConfig
from reprolab.core import training


def test_make_fabric_uses_the_running_stages_settings(tmp_path):
    try:
        contract.enter_stage(
            registry.get("ensloss"), tmp_path, TrainerConfig(precision="bf16-mixed")
        )
        fabric = training.make_fabric()
        assert type(fabric._precision).__name__ == "MixedPrecision"
        assert fabric._precision.precision == "bf16-mixed"
        expected = "cuda" if torch.cuda.is_available() else "cpu"
        assert fabric.device.type == expected  # auto
        assert fabric.world_size == 1
    finally:
        contract._STAGE.clear()
    outside = training.make_fabric()  # outside a stage: the defaults
    assert type(outside._precision).__name__ == "Precision"
