"""`python -m reprolab status`: the stages a `dvc repro` would run, on a throwaway DVC
repository (real git, real DVC; no mocks)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from reprolab.ops import dvcstate

DVC = Path(sys.executable).with_name("dvc")
DVC_YAML = """\
stages:
  first:
    cmd: cp in.txt a.txt
    deps: [in.txt]
    outs: [a.txt]
  second:
    cmd: cp a.txt b.txt
    deps: [a.txt]
    outs: [b.txt]
  third:
    foreach: [x, y]
    do:
      cmd: cp b.txt "c-${item}.txt"
      deps: [b.txt]
      outs: ["c-${item}.txt"]
  side:
    cmd: cp other.txt side.txt
    deps: [other.txt]
    outs: [side.txt]
"""


def _sh(cwd: Path, *args: str) -> str:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A reproduced 3-stage chain (first -> second -> third@x, third@y) and an unrelated
    stage (side), in a git + DVC repository."""
    monkeypatch.delenv("REPROLAB_ROOT", raising=False)
    _sh(tmp_path, "git", "init", "-q")
    _sh(tmp_path, str(DVC), "init", "-q")
    (tmp_path / "dvc.yaml").write_text(DVC_YAML)
    (tmp_path / "params.yaml").write_text("{}\n")  # what makes it a project root
    (tmp_path / "in.txt").write_text("1\n")
    (tmp_path / "other.txt").write_text("o\n")
    _sh(tmp_path, str(DVC), "repro", "-q")
    return tmp_path


def test_up_to_date_runs_nothing(repo):
    p = dvcstate.pending(repo)
    assert p.changed == {} and p.rerun == [] and p.total == 5
    assert "up to date" in dvcstate.format_pending(p)


def test_a_change_to_the_first_stage_lists_everything_downstream(repo, monkeypatch, capsys):
    (repo / "in.txt").write_text("2\n")
    # dvc status itself names only the first stage
    assert set(dvcstate.status(repo, "first")) == {"first"}
    assert dvcstate.status(repo, "second") == {}

    p = dvcstate.pending(repo)
    assert list(p.changed) == ["first"] and "in.txt" in p.changed["first"]
    assert p.rerun == ["first", "second", "third@x", "third@y"]  # side is not reached
    assert p.why == {"second": "after first", "third@x": "after second", "third@y": "after second"}

    monkeypatch.chdir(repo)
    assert dvcstate.main([]) == 0
    out = capsys.readouterr().out
    assert "would run 4 of 5 stages" in out
    assert "\n  first\n  second\n  x: third\n  y: third\n" in out
    assert "side" not in out


def test_a_change_in_the_middle_leaves_the_stages_above_out(repo):
    (repo / "b.txt").write_text("edited by hand\n")  # second's output: second is changed
    p = dvcstate.pending(repo)
    assert p.rerun == ["second", "third@x", "third@y"]


def test_validate_writes_names_the_config_files_a_params_edit_changes(tmp_path):
    """The project's own validate stage: what it would write is compared, file by file,
    with data/config on disk, without writing (here a copy in tmp_path)."""
    from reprolab.core import io
    from reprolab.stages import validate

    root = Path(__file__).resolve().parents[2]
    for name, content in validate.files(root).items():
        io.write_json(tmp_path / name, content)
    assert dvcstate.validate_writes(root, tmp_path) == (set(), "")

    slug = sorted(p.name for p in tmp_path.glob("*.prepare.json"))[0].split(".")[0]
    (tmp_path / f"{slug}.json").write_text("{}\n")  # as if params.yaml had changed it
    (tmp_path / "gone.json").write_text("{}\n")  # written before, not any more
    changed, stops = dvcstate.validate_writes(root, tmp_path)
    assert changed == {f"data/config/{slug}.json", "data/config/gone.json"} and stops == ""
