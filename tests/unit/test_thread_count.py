"""Results do not depend on the number of torch threads.

The stages set torch's intra-op threads from ``REPROLAB_THREADS`` (default: every
core it may run on), so the same params on a 2-core laptop and a 64-core server must give the same
numbers. One unit of a network method (EnsLoss, the method variant, at its tiny test
config: the first unit is its CNN setting's, so convolutions are on the path) is
trained, restored and evaluated, at full precision and with each of its quantization
schemes (Bit-DGDM's decomposition included), through the method's hooks, once with 1
thread and once with 2, each in a fresh process (torch's thread pool is per process).
Metrics must match exactly. The weights and the per-epoch history match within 1e-6,
the tolerance allowed where a kernel is not deterministic: the convolution's backward
reduces in a thread-dependent order (measured: 2e-10 on the weights after training);
without convolutions (the MLP setting) every kernel gives identical bits, and
``test_bitdgdm_decomposition_does_not_depend_on_the_thread_count`` checks the one
quantizer that did not (its SVD now runs on one thread).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.conftest import ROOT, tool_env

SLUG = "ensloss"

# One unit through the hooks, as the train / quantize / evaluate stages call them.
# Hooks gain optional trailing arguments as the contract grows (prepare's shared assets,
# evaluate_unit's history): `call` passes the ones a hook takes.
SCRIPT = r"""
import importlib, inspect, json, sys
from pathlib import Path

import torch

threads, slug, work, shared = int(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
overrides = json.loads(sys.argv[5])
torch.set_num_threads(threads)

from reprolab import config, registry
from reprolab.contract import Run
from reprolab.core import quant


spec = registry.get(slug)
hooks = registry.hooks(slug)
cfg = config.method_config(slug, "smoke", {**spec.test_overrides, **overrides}, "test")
seeds = (0, 1)
# The shared assets it reads, built as assets@<name> does (smoke defaults), by the first
# process; the second reads the same files.
assets = {}
for name in getattr(spec, "assets", ()):
    target = shared / "assets" / name
    if not target.is_dir():
        asset = registry.asset(name)
        module, func = asset.build.split(":")
        target.mkdir(parents=True)
        build = getattr(importlib.import_module(module), func)
        build(config.asset_config(name, "smoke", {}, "defaults"), target, shared / "raw")
    assets[name] = target
run = Run(spec, cfg, seeds, work, assets)
datasets, _ = hooks.prepare(run, shared / "raw")
method = next(v.name for v in spec.variants if v.is_method)
unit = next(u for u in hooks.units(run, sorted(datasets)) if u.variant == method and u.seed == 0)
data = datasets[unit.task]
trained = hooks.train_unit(run, unit, data, work / "resume", lambda m: None)
threads_after_training = torch.get_num_threads()
model = hooks.restore(run, unit, data, trained.state)
metrics = {"fp32": hooks.evaluate_unit(run, model, unit, data, trained.history)}
example = hooks.example_input(run, unit, data)
calib = (
    hooks.calibration_inputs(run, unit, data, model)
    if hasattr(hooks, "calibration_inputs")
    else [example]
)
for scheme in spec.schemes(cfg):
    qmodel = quant.quantize(model, scheme, calibration=calib)
    metrics[scheme] = hooks.evaluate_unit(run, qmodel, unit, data, trained.history)
torch.save(
    {
        "unit": unit.id,
        "threads": threads,
        "threads_after_training": threads_after_training,
        "threads_at_end": torch.get_num_threads(),
        "metrics": {p: {k: float(v) for k, v in m.items()} for p, m in metrics.items()},
        "history": trained.history,
        "state": {k: v.detach().clone() for k, v in trained.state.items()},
    },
    work / "result.pt",
)
"""


def run_unit(threads: int, work: Path, shared: Path, overrides: dict | None = None) -> dict:
    """One unit with ``threads`` torch threads in a fresh process (``overrides`` on top
    of the method's test_overrides)."""
    work.mkdir(parents=True)
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            SCRIPT,
            str(threads),
            SLUG,
            str(work),
            str(shared),
            json.dumps(overrides or {}),
        ],
        cwd=ROOT,
        env=tool_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, (
        f"--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-5000:]}"
    )
    return torch.load(work / "result.pt", weights_only=True)


def test_one_and_two_threads_give_identical_results(tmp_path: Path):
    one = run_unit(1, tmp_path / "t1", tmp_path)
    two = run_unit(2, tmp_path / "t2", tmp_path)
    # The thread count really was 1 and 2 throughout (nothing reset it, Lightning included).
    for res, n in ((one, 1), (two, 2)):
        assert res["threads_after_training"] == res["threads_at_end"] == n, res["threads"]
    assert one["unit"] == two["unit"]
    assert one["metrics"].keys() == two["metrics"].keys() and len(one["metrics"]) >= 2
    assert one["metrics"] == two["metrics"]  # exact: fp32 and every quantization scheme
    assert len(one["history"]) == len(two["history"])  # per-epoch values
    for h1, h2 in zip(one["history"], two["history"], strict=True):
        assert h1 == pytest.approx(h2, abs=1e-6)
    assert one["state"].keys() == two["state"].keys()
    for name, tensor in one["state"].items():
        torch.testing.assert_close(tensor, two["state"][name], rtol=0, atol=1e-6, msg=name)


def test_bitdgdm_decomposition_does_not_depend_on_the_thread_count():
    """The low-rank + sparse split behind Bit-DGDM's weights: identical at 1 and 2 torch
    threads (a multi-threaded SVD moved it by up to 1e-3 through the top-k selection)."""
    import torch

    from reprolab.core.quant import decompose

    before = torch.get_num_threads()
    w = torch.randn(256, 128, generator=torch.Generator().manual_seed(0))
    try:
        torch.set_num_threads(1)
        one = decompose(w, 8, 0.01)
        torch.set_num_threads(2)
        two = decompose(w, 8, 0.01)
    finally:
        torch.set_num_threads(before)
    for a, b in zip(one, two, strict=True):
        assert torch.equal(a, b)
    assert torch.get_num_threads() == before


def test_default_threads_follow_the_cpu_affinity():
    """A stage pinned to one core (``taskset -c 0``) gets one thread, not the machine's
    count; ``REPROLAB_THREADS`` still wins."""
    import os
    import shutil

    if shutil.which("taskset") is None:
        pytest.fail("taskset (util-linux) is needed for this test")
    code = "from reprolab.core.threads import set_threads; print(set_threads())"
    env = {k: v for k, v in os.environ.items() if k != "REPROLAB_THREADS"}
    pinned = subprocess.run(
        ["taskset", "-c", "0", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert pinned.stdout.strip() == "1"
    free = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert int(free.stdout) == len(os.sched_getaffinity(0))
    forced = subprocess.run(
        ["taskset", "-c", "0", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**env, "REPROLAB_THREADS": "3"},
        check=True,
    )
    assert forced.stdout.strip() == "3"
