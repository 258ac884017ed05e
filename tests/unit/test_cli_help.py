"""What the command line tells a user (issue 49, item 8): ``--version``; a stage's slug
is one of the registered methods (listed in its --help, an unknown one rejected in one
line naming them) without importing a method; ``worker status`` exits 0 and says "not
running" when no worker runs; ``make help`` lists the user-facing targets and is not
the default goal."""

from __future__ import annotations

import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from reprolab import cli, registry
from tests.conftest import OWN_WORKER, ROOT, tool_env


def reprolab(cwd: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "reprolab", *args],
        cwd=cwd,
        env=tool_env({"REPROLAB_WORKER": "off", **extra}),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_version_prints_the_package_version(tmp_path: Path) -> None:
    """Routed by ``__main__`` before the worker and the portable settings: it works
    outside a project, and whatever REPROLAB_PORTABLE holds."""
    proc = reprolab(tmp_path, "--version", REPROLAB_PORTABLE="not-a-setting")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"reprolab {metadata.version('reprolab')}\n"
    assert cli.version() == metadata.version("reprolab")


def test_version_through_the_stage_router(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code in (0, None)
    assert capsys.readouterr().out == f"reprolab {cli.version()}\n"


def test_stage_help_lists_the_registered_slugs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["train", "--help"])
    assert exit_.value.code in (0, None)
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps the list
    assert "usage: reprolab train [-h] slug" in out
    assert ", ".join(registry.slugs()) in out


def test_unknown_slug_is_one_line_naming_the_slugs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["evaluate", "nosuch"])
    assert exit_.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("error: unknown method 'nosuch'; registered methods: ")
    assert lines[0].endswith(", ".join(registry.slugs()))


def test_slug_choices_import_no_method(tmp_path: Path) -> None:
    """The choices are folder names: parsing a stage's slug imports no method package,
    and a command without a slug does not even import the registry (pydantic)."""
    code = """
import contextlib, io, sys
from reprolab import cli

def run(argv):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        cli.main(argv)

run(["--help"])
run(["--version"])
print("registry" if "reprolab.registry" in sys.modules else "no registry")
run(["quantize", "--help"])
print(sorted(m for m in sys.modules if m.startswith("reprolab.methods.")))
"""
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=tool_env({"REPROLAB_WORKER": "off"}),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["no registry", "[]"]


def test_worker_status_without_a_worker_is_exit_0(tmp_path: Path) -> None:
    """The project's own socket (OWN_WORKER: not the test session's shared worker), in a
    fresh project folder where no worker was ever started."""
    root = tmp_path / "proj"
    root.mkdir()
    for name in ("params.yaml", "dvc.yaml"):
        shutil.copy2(ROOT / name, root / name)
    proc = reprolab(root, "worker", "status", **OWN_WORKER)
    assert proc.returncode == 0, proc.stderr
    assert "not running" in proc.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_help_lists_the_targets_and_is_not_the_default() -> None:
    proc = subprocess.run(
        ["make", "--no-print-directory", "-s", "help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    listed = {line.split()[1] for line in proc.stdout.splitlines() if line.strip()}
    for target in (
        "run",
        "test",
        "test-slow",
        "paper",
        "probe",
        "ui",
        "serve",
        "prefect-server",
        "trigger",
        "bench",
        "data",
        "lint",
        "format",
        "mlflow-server",
    ):
        assert target in listed, proc.stdout
    # -p prints make's database (the default goal among it); -n runs no recipe
    database = subprocess.run(
        ["make", "--no-print-directory", "-pn", "help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    goals = [line for line in database.splitlines() if line.startswith(".DEFAULT_GOAL")]
    assert goals and all(not line.endswith(" help") for line in goals), goals


def test_a_defect_is_named_as_one_with_where_it_happened(monkeypatch, capsys) -> None:
    """An unexpected exception in a stage (a bug, not bad input) exits 1 with a first
    line that says so, names the exception and the line of reprolab's code it came
    from, and then the traceback; bad input keeps its one-line error and exit 2."""
    import reprolab.stages as stages

    def broken(stage, slug, root):
        raise TypeError("unsupported operand type(s) for |: 'type' and 'tuple'")

    monkeypatch.setattr(stages, "run_stage", broken)
    monkeypatch.chdir(ROOT)
    capsys.readouterr()
    assert cli.main(["quantize", "ttba"]) == 1
    err = capsys.readouterr().err
    first = err.splitlines()[0]
    assert first.startswith("error: `python -m reprolab quantize ttba` stopped on a defect")
    assert "TypeError: unsupported operand" in first
    # the last line of reprolab's code it passed through (here the CLI's call into the
    # stage, since the raising function is this test's)
    assert "at src/reprolab/cli.py:" in first and "in main()" in first
    assert "those of its last run stand" in first
    assert "Traceback (most recent call last)" in err
