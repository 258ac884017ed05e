"""Faults fail cleanly: a message that names the problem, before any compute, and no
partial output (no data/ folders, no MLflow runs) left behind.

Most cases call the CLI in-process (``reprolab.cli.main``) on a tiny project copy, which
is what ``python -m reprolab`` runs; the exit-code path, the tracking-server timing and
DVC itself are exercised through real subprocesses. The copies run EnsLoss only: the
checks are the same code for every method.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import sys
import time
from pathlib import Path

import pytest
import yaml

from reprolab import cli
from reprolab.core import datasets
from tests.conftest import TINY_ENSLOSS, copy_project, run

pytestmark = pytest.mark.pipeline

# Variables the stages read or set (mlflow.env is loaded with os.environ.setdefault).
ENV_KEYS = (
    "MLFLOW_TRACKING_URI",
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES",
    "MLFLOW_HTTP_REQUEST_TIMEOUT",
    "REPROLAB_MLFLOW_UI",
    "REPROLAB_ROOT",
    "REPROLAB_PARENT_RUN_ID",
    "REPROLAB_PREFECT_FLOW_RUN_ID",
)


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again when the socket is


def mlflow_runs(root: Path) -> int:
    """Runs in the copy's default SQLite store (0 when there is no store yet)."""
    db = root / ".mlflow" / "mlflow.db"
    if not db.is_file():
        return 0
    with sqlite3.connect(db) as con:
        tables = {r[0] for r in con.execute("select name from sqlite_master where type='table'")}
        return con.execute("select count(*) from runs").fetchone()[0] if "runs" in tables else 0


def data_entries(root: Path) -> list[str]:
    """Everything under data/ (relative paths), hidden work folders included."""
    data = root / "data"
    return sorted(p.relative_to(data).as_posix() for p in data.rglob("*")) if data.is_dir() else []


def set_params(root: Path, edit) -> None:
    params = yaml.safe_load((root / "params.yaml").read_text())
    edit(params)
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


@pytest.fixture
def cli_in(monkeypatch, capsys):
    """``cli_in(root, *argv) -> (exit code, stderr)``: the CLI in-process, in ``root``,
    with a clean environment per call (mlflow.env is re-read every time)."""
    saved = dict(os.environ)

    def call(root: Path, *argv: str) -> tuple[int, str]:
        for key in ENV_KEYS:
            os.environ.pop(key, None)
        monkeypatch.chdir(root)
        capsys.readouterr()
        code = cli.main(list(argv))
        return code, capsys.readouterr().err

    yield call
    os.environ.clear()
    os.environ.update(saved)


def test_unknown_method_cli_exit_2(project: Path):
    proc = run([sys.executable, "-m", "reprolab", "train", "nosuch"], project, check=False)
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip()
    assert err.startswith("error: ") and "Traceback" not in proc.stderr
    assert "nosuch" in err and "registered methods:" in err
    assert "ensloss" in err.split("registered methods:")[1]
    assert data_entries(project) == []
    assert not (project / ".mlflow").exists()


def _edit_methods(key, value):
    return lambda p: p["methods"]["ensloss"]["smoke"].__setitem__(key, value)


PARAM_FAULTS = {
    "wrong_type": (
        _edit_methods("epochs", "many"),
        ["methods.ensloss.smoke.epochs", "valid integer", "'many'"],
    ),
    "negative_epochs": (
        _edit_methods("epochs", -3),
        ["methods.ensloss.smoke.epochs", "greater than or equal to 1", "-3"],
    ),
    "bad_literal": (
        _edit_methods("variants", ["ensloss", "mse"]),
        ["methods.ensloss.smoke.variants", "ensloss, bce, hinge, exp", "'mse'"],
    ),
    "missing_profile": (
        lambda p: p.pop("profile"),
        ["missing key 'profile'", "profile, seeds, methods"],
    ),
    "bad_profile": (
        lambda p: p.__setitem__("profile", "fast"),
        ["profile: 'fast' is not allowed", "allowed values: smoke, paper"],
    ),
    "unknown_top_key": (
        lambda p: p.__setitem__("epochs", 3),
        # (the list may grow, e.g. by an optional `assets`)
        ["epochs: unknown key", "allowed keys: profile, seeds, ", "methods"],
    ),
    "unknown_method_key": (
        _edit_methods("epoch", 5),
        ["methods.ensloss.smoke.epoch: unknown key", "allowed keys:", "epochs"],
    ),
    "unknown_method_section": (
        lambda p: p["methods"].__setitem__("nosuch", {}),
        ["methods.nosuch: unknown method", "registered methods:", "ensloss"],
    ),
    "too_few_seeds": (
        lambda p: p["seeds"].__setitem__("smoke", [0]),
        ["seeds.smoke", "at least 2 seeds"],
    ),
}


@pytest.mark.parametrize("case", sorted(PARAM_FAULTS))
def test_bad_params_named_before_compute(project: Path, cli_in, case: str):
    edit, expected = PARAM_FAULTS[case]
    set_params(project, edit)
    for stage in ("prepare", "train"):
        code, err = cli_in(project, stage, "ensloss")
        assert code == 2, (stage, err)
        assert err.startswith("error: ") and "params.yaml" in err
        for text in expected:
            assert text in err, (stage, text, err)
    code, err = cli_in(project, "check")
    assert code == 2 and all(text in err for text in expected), err
    assert data_entries(project) == []
    assert not (project / ".mlflow").exists()


def build_assets(root: Path, cli_in) -> None:
    """Build the shared assets of the copy (EnsLoss reads `images`), as assets@ does."""
    params = yaml.safe_load((root / "params.yaml").read_text())
    for name in params.get("assets") or {}:
        code, err = cli_in(root, "asset", name)
        assert code == 0, err


def test_missing_data_package_says_make_data(tmp_path: Path, cli_in, monkeypatch):
    root = copy_project(tmp_path / "p", {**TINY_ENSLOSS, "datasets": ["fashion_mnist"]})
    assert not (root / "data/raw/fashion-mnist").exists()
    # nor installed system-wide (scripts/system_deps.sh --paper installs the Debian package)
    monkeypatch.setattr(datasets, "FASHION_SYSTEM_DIR", tmp_path / "no-system-package")
    # the images are read from the shared asset, which builds them from the packages
    set_params(
        root, lambda p: p["assets"]["images"].__setitem__("smoke", {"datasets": ["fashion_mnist"]})
    )
    code, err = cli_in(root, "asset", "images")
    assert code == 2, err
    assert "Fashion-MNIST" in err and "make data" in err
    assert "apt-get install -y dataset-fashion-mnist" in err
    assert str(root / "data/raw/fashion-mnist") in err
    assert data_entries(root) == []
    assert mlflow_runs(root) == 0


def test_truncated_prepared_file_named_before_training(project: Path, cli_in):
    build_assets(project, cli_in)
    assert cli_in(project, "prepare", "ensloss")[0] == 0
    prepared = project / "data/prepared/ensloss"
    victim = sorted(prepared.glob("*.npz"))[0]
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    before_data, before_runs = data_entries(project), mlflow_runs(project)
    assert before_runs >= 1

    code, err = cli_in(project, "train", "ensloss")
    assert code == 2, err
    assert str(victim) in err and "truncated or corrupt" in err
    assert "dvc repro -f prepare@ensloss" in err
    assert not (project / "data/checkpoints/ensloss").exists()
    assert not (project / "data/.partial").exists()
    assert data_entries(project) == before_data
    assert mlflow_runs(project) == before_runs


def test_unreachable_tracking_server_fails_fast(project: Path):
    uri = f"http://127.0.0.1:{_closed_port()}"
    (project / "mlflow.env").write_text(
        f"MLFLOW_TRACKING_URI={uri}\nMLFLOW_HTTP_REQUEST_MAX_RETRIES=0\n"
    )
    started = time.monotonic()
    proc = run([sys.executable, "-m", "reprolab", "prepare", "ensloss"], project, check=False)
    elapsed = time.monotonic() - started
    assert proc.returncode == 2, proc.stderr
    assert elapsed < 20, f"took {elapsed:.1f}s to report an unreachable server"
    assert uri in proc.stderr and "not reachable" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert data_entries(project) == []
    assert not (project / ".mlflow").exists()


def test_unreachable_tracking_server_before_training_writes_nothing(project: Path, cli_in):
    build_assets(project, cli_in)
    assert cli_in(project, "prepare", "ensloss")[0] == 0
    before_data, before_runs = data_entries(project), mlflow_runs(project)
    uri = f"http://127.0.0.1:{_closed_port()}"
    (project / "mlflow.env").write_text(f"MLFLOW_TRACKING_URI={uri}\n")
    started = time.monotonic()
    code, err = cli_in(project, "train", "ensloss")
    assert code == 2, err
    assert time.monotonic() - started < 20
    assert uri in err and "not reachable" in err
    assert not (project / "data/.partial").exists()
    assert not (project / "data/checkpoints").exists()
    assert data_entries(project) == before_data
    assert mlflow_runs(project) == before_runs


def test_dvc_repro_with_bad_params_writes_no_outputs(tmp_path: Path):
    root = copy_project(tmp_path / "p", {**TINY_ENSLOSS, "epochs": -1})
    proc = run(["dvc", "repro"], root, check=False, timeout=300)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "methods.ensloss.smoke.epochs" in out and "greater than or equal to 1" in out
    assert data_entries(root) == []
    assert not (root / "dvc.lock").exists()
    assert mlflow_runs(root) == 0


# A bad edit after a good run: each names its key, and DVC removes nothing, because the
# `validate` stage (upstream of every stage) fails before any stage's outputs go.
BAD_EDITS = {
    "negative epochs": (
        lambda p: p["methods"]["ensloss"]["smoke"].update(epochs=-2),
        "methods.ensloss.smoke.epochs",
    ),
    "unknown key": (
        lambda p: p["methods"]["dp_noise"]["smoke"].update(nosuch=1),
        "methods.dp_noise.smoke.nosuch",
    ),
    "unknown scheme": (
        lambda p: p["methods"]["ensloss"]["smoke"].update(quantization=["int3_magic"]),
        "methods.ensloss.smoke.quantization",
    ),
    "unknown variant": (
        lambda p: p["methods"]["ensloss"]["smoke"].update(variants=["ensloss", "mse"]),
        "methods.ensloss.smoke.variants",
    ),
    "bad asset dataset": (
        lambda p: p["assets"]["images"]["smoke"].update(datasets=["cifar10"]),
        "assets.images.smoke.datasets",
    ),
}


def snapshot(root: Path) -> dict[str, int]:
    data = root / "data"
    return {p.relative_to(data).as_posix(): p.stat().st_mtime_ns for p in data.rglob("*")}


def test_bad_edit_after_a_good_run_leaves_data_exactly_as_it_was(reproduced, tmp_path):
    import shutil

    root = tmp_path / "p"
    shutil.copytree(reproduced, root, symlinks=True)  # the fixture stays read-only
    good = (root / "params.yaml").read_text()
    before, lock = snapshot(root), (root / "dvc.lock").read_bytes()
    assert any(k.startswith("checkpoints/ensloss/") for k in before)
    for case, (edit, key) in BAD_EDITS.items():
        (root / "params.yaml").write_text(good)
        set_params(root, edit)
        proc = run(["dvc", "repro"], root, check=False, timeout=300)
        assert proc.returncode != 0, case
        assert key in proc.stdout + proc.stderr, (case, proc.stderr[-2000:])
        assert snapshot(root) == before, case
        assert (root / "dvc.lock").read_bytes() == lock, case
