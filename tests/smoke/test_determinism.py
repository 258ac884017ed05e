"""Versioned outputs hash the same when the pipeline runs again.

DVC records an md5 of every output in dvc.lock; a committed dvc.lock stays current only
if prepared data, checkpoints, quantized models, metrics, claims, plots and the report's
CSVs are byte-identical when the same stages run again. Wall-clock measurements and
MLflow ids differ on every run, so they live in data/runtime/ and MLflow (checked here
too: they must not leak into the versioned files).

The fixture was built through the test session's shared stage worker (tests/conftest.py)
and the rerun runs in-process (``REPROLAB_WORKER=off``), so the same check proves that
the worker changes no output.
"""

from __future__ import annotations

import os
import shutil

import pytest
import yaml

from tests.conftest import BUILT_BY, run

pytestmark = pytest.mark.pipeline


def out_hashes(lock: dict) -> dict[str, str]:
    """stage -> {out path: md5} from a dvc.lock."""
    return {
        name: {o["path"]: o.get("md5") for o in stage.get("outs", [])}
        for name, stage in lock["stages"].items()
    }


def test_forced_rerun_reproduces_every_versioned_output(reproduced, tmp_path):
    project = tmp_path / "project"
    shutil.copytree(reproduced, project, symlinks=True)  # the fixture stays read-only
    before = yaml.safe_load((project / "dvc.lock").read_text())
    built_by = (reproduced / BUILT_BY).read_text()
    if os.environ.get("REPROLAB_TEST_WORKER", "on") != "off":
        assert built_by == "worker"  # so the comparison is worker against in-process
    repro = run(["dvc", "repro", "-f"], project, env={"REPROLAB_WORKER": "off"})
    assert "Running stage 'train@ensloss'" in repro.stdout
    after = yaml.safe_load((project / "dvc.lock").read_text())
    changed = {
        f"{stage}: {path}"
        for stage, outs in out_hashes(after).items()
        for path, md5 in outs.items()
        if out_hashes(before).get(stage, {}).get(path) != md5
    }
    assert not changed, f"outputs that differ on a rerun: {sorted(changed)}"
    # what does differ is kept apart, and it really was measured again
    runtime = project / "data" / "runtime"
    assert any(runtime.glob("*/evaluate.json")) and any(runtime.glob("*/train.json"))
    for claims in (project / "data" / "eval").glob("*/claims.json"):
        assert "mlflow_run_id" not in claims.read_text()
