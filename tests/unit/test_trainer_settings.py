"""params.yaml's trainer section reaches Lightning Fabric (core.training.make_fabric)."""

from __future__ import annotations

import torch

from reprolab import registry
from reprolab.contract import TrainerConfig
from reprolab.core import training


def test_make_fabric_uses_the_given_settings(tmp_path):
    """The trainer settings come in explicitly (a method passes its Run.trainer)."""
    from reprolab import config
    from reprolab.contract import Run

    cfg = config.method_config("ensloss", "smoke", {"trainer": {"precision": "bf16-mixed"}}, "test")
    run = Run(registry.get("ensloss"), cfg, (0,), tmp_path)
    fabric = training.make_fabric(run.trainer)
    assert type(fabric._precision).__name__ == "MixedPrecision"
    assert fabric._precision.precision == "bf16-mixed"
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert fabric.device.type == expected  # auto
    assert fabric.world_size == 1
    plain = training.make_fabric(TrainerConfig())  # the defaults
    assert type(plain._precision).__name__ == "Precision"
