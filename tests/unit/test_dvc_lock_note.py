"""scripts/dvc_lock_note.py (the end of `make run`): why dvc.lock differs from the
commit, on a throwaway git repository."""

from __future__ import annotations

import copy
import importlib.util
import subprocess
from pathlib import Path

import yaml

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "dvc_lock_note.py"
_spec = importlib.util.spec_from_file_location("dvc_lock_note", SCRIPT)
lock_note = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lock_note)

LOCK = {
    "schema": "2.0",
    "stages": {
        "train@m": {
            "cmd": "python -m reprolab train m",
            "deps": [
                {"path": "data/config/m.json", "md5": "c1"},
                {"path": "src/reprolab/stages/train.py", "md5": "s1"},
            ],
            "outs": [{"path": "data/checkpoints/m", "md5": "k1.dir"}],
        },
        "evaluate@m": {
            "cmd": "python -m reprolab evaluate m",
            "deps": [{"path": "data/checkpoints/m", "md5": "k1.dir"}],
            "outs": [{"path": "data/eval/m/claims.json", "md5": "e1"}],
        },
    },
}


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, timeout=60)


def _repo(tmp_path: Path) -> Path:
    tmp_path = tmp_path / "repo"
    tmp_path.mkdir()
    _git(tmp_path, "init", "-q")
    (tmp_path / "dvc.lock").write_text(yaml.safe_dump(LOCK))
    _git(tmp_path, "add", "dvc.lock")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "lock")
    return tmp_path


def _write(root: Path, lock: dict) -> None:
    (root / "dvc.lock").write_text(yaml.safe_dump(lock))


def test_nothing_to_say_when_dvc_lock_is_unchanged(tmp_path):
    assert lock_note.note(_repo(tmp_path)) == ""
    outside = tmp_path / "outside"
    outside.mkdir()
    assert lock_note.note(outside) == ""  # not a git repository of its own


def test_other_bits_from_the_same_inputs_need_no_commit(tmp_path, capsys):
    root = _repo(tmp_path)
    lock = copy.deepcopy(LOCK)
    train, evaluate = lock["stages"]["train@m"], lock["stages"]["evaluate@m"]
    train["outs"][0]["md5"] = "k2.dir"  # the same inputs, other bits
    evaluate["deps"][0]["md5"] = "k2.dir"  # follows from it
    evaluate["outs"][0]["md5"] = "e2"
    _write(root, lock)
    assert lock_note.classify(LOCK, lock) == (["train@m"], [])
    assert lock_note.main([str(root)]) == 0
    out = capsys.readouterr().out
    assert "dvc.lock differs from the committed one" in out
    assert "1 stage(s) wrote other output hashes from the same inputs: train@m" in out
    assert "Committing it is not needed" in out and "Commit dvc.lock together" not in out


def test_an_edited_input_says_commit_it_with_the_change(tmp_path):
    root = _repo(tmp_path)
    lock = copy.deepcopy(LOCK)
    lock["stages"]["train@m"]["deps"][1]["md5"] = "s2"  # the stage's code was edited
    lock["stages"]["train@m"]["outs"][0]["md5"] = "k2.dir"
    lock["stages"]["evaluate@m"]["deps"][0]["md5"] = "k2.dir"
    _write(root, lock)
    bits, edits = lock_note.classify(LOCK, lock)
    assert bits == [] and edits == ["train@m: src/reprolab/stages/train.py"]
    text = lock_note.note(root)
    assert "Inputs changed against the commit: train@m: src/reprolab/stages/train.py" in text
    assert "Commit dvc.lock together with that change" in text
    assert "not needed" not in text
