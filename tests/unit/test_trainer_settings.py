"""params.yaml's trainer section reaches Lightning (core.training.make_trainer)."""

from __future__ import annotations

import torch

from reprolab import contract, registry
from reprolab.contract import TrainerConfig
from reprolab.core import training


def test_make_trainer_uses_the_running_stages_settings(tmp_path):
    try:
        contract.enter_stage(
            registry.get("ensloss"), tmp_path, TrainerConfig(precision="bf16-mixed")
        )
        trainer = training.make_trainer(1, None)
        assert trainer.precision == "bf16-mixed"
        expected = "CUDAAccelerator" if torch.cuda.is_available() else "CPUAccelerator"
        assert type(trainer.accelerator).__name__ == expected  # auto
        assert trainer.num_devices == 1
    finally:
        contract._STAGE.clear()
    assert training.make_trainer(1, None).precision == "32-true"  # outside a stage
