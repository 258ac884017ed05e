"""Data parallelism from params (``trainer: {devices: 2, strategy: ddp_spawn}``): one
unit trained by 2 CPU processes (gloo) through ``core.training.fit`` ends where a plain
single-process fit ends at the same effective batch size (2 x 16 vs 32), to float
reduction order (stated: 1e-5 on every weight, identical predictions).

Under DDP, Fabric feeds each process through a DistributedSampler that keeps an
unshuffled loader unshuffled: rank r gets every other sample, so step k of the two ranks
together sees the 32 samples of the single process's step k."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow

SCRIPT = r"""
import json
import torch
from torch.utils.data import DataLoader, TensorDataset
from reprolab.contract import TrainerConfig
from reprolab.core.training import ClassifierModule, fit


def run(devices, batch, strategy, epochs):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(256, 10, generator=gen)
    y = (x[:, 0] + x[:, 1] > 0).long() + (x[:, 2] > 1).long()
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.Tanh(), torch.nn.Linear(32, 3))
    module = ClassifierModule(net, lr=0.01, epochs=epochs)
    settings = TrainerConfig(accelerator="cpu", devices=devices, strategy=strategy)
    state = fit(module, DataLoader(TensorDataset(x, y), batch_size=batch), None, epochs,
                trainer=settings)
    with torch.no_grad():
        pred = module.net(x).argmax(-1)
    return module.net, pred, state.world_size, state.global_step


if __name__ == "__main__":
    import sys
    epochs = int(sys.argv[1])
    one, pred1, w1, s1 = run(1, 32, "auto", epochs)
    two, pred2, w2, s2 = run(2, 16, "ddp_spawn", epochs)
    diff = max(float((a - b).detach().abs().max()) for a, b in zip(one.parameters(), two.parameters()))
    print("RESULT " + json.dumps({
        "world_sizes": [w1, w2], "steps": [s1, s2], "max_weight_diff": diff,
        "same_predictions": bool(torch.equal(pred1, pred2)),
    }))
"""


def ddp_check(folder, epochs: int) -> dict:
    """Train one process at batch 32 and two gloo processes at batch 16 each for
    ``epochs`` epochs of 8 steps; the two runs' world sizes, steps, largest weight
    difference and whether their predictions agree."""
    script = folder / "ddp_check.py"
    script.write_text(SCRIPT)
    proc = subprocess.run(
        [sys.executable, str(script), str(epochs)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-4000:]
    return json.loads(lines[-1][len("RESULT ") :])


def test_two_process_ddp_matches_one_process_at_the_same_effective_batch(tmp_path):
    out = ddp_check(tmp_path, 4)
    assert out["world_sizes"] == [1, 2]
    assert out["steps"] == [32, 32]  # 4 epochs x 8 steps in both
    assert out["max_weight_diff"] < 1e-5, out
    assert out["same_predictions"]
