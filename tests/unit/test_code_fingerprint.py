"""The per-method code fingerprint that replaces per-stage source deps in dvc.yaml."""

from __future__ import annotations

import ast
import hashlib
import shutil
from pathlib import Path

import yaml

from reprolab.stages import validate

ROOT = Path(__file__).resolve().parents[2]


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    for rel in (
        *validate.SHARED_CODE,
        "src/reprolab/methods/ensloss",
        "src/reprolab/methods/dp_noise",
    ):
        src, dest = ROOT / rel, root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dest)
    return root


def test_fingerprint_hashes_every_file_it_lists(tmp_path):
    root = _tree(tmp_path)
    fp = validate.code_fingerprint(root, "ensloss")
    assert "src/reprolab/contract.py" in fp["files"]
    assert any(p.startswith("src/reprolab/methods/ensloss/") for p in fp["files"])
    assert not any("dp_noise" in p for p in fp["files"])
    assert not any(p.endswith(".md") for p in fp["files"])  # documentation is no input
    for rel, sha in fp["files"].items():
        data = (root / rel).read_bytes()
        text = validate.code_text(data)
        assert sha == hashlib.sha256(text).hexdigest()
        # independent reference: Python's own parser sees the same program
        assert ast.dump(ast.parse(text)) == ast.dump(ast.parse(data)), rel


def test_fingerprint_changes_exactly_with_the_code_a_method_runs(tmp_path):
    root = _tree(tmp_path)
    before = {s: validate.code_fingerprint(root, s)["digest"] for s in ("ensloss", "dp_noise")}
    # bytecode caches are not inputs (DVC ignores them too, see .dvcignore)
    cache = root / "src/reprolab/methods/ensloss/__pycache__"
    cache.mkdir(exist_ok=True)
    (cache / "x.cpython-311.pyc").write_bytes(b"\0")
    assert validate.code_fingerprint(root, "ensloss")["digest"] == before["ensloss"]
    # documentation and comments cannot change what a stage computes
    (root / "src/reprolab/methods/ensloss/README.md").write_text("edited\n")
    losses = root / "src/reprolab/methods/ensloss/losses.py"
    code = losses.read_text()
    losses.write_text(
        "# a new comment\n\n" + code.replace("annotations\n", "annotations  # note\n", 1)
    )
    assert validate.code_fingerprint(root, "ensloss")["digest"] == before["ensloss"]
    # a method's own code changes its fingerprint only
    losses.write_text(code + "\nEXTRA = 1\n")
    after = {s: validate.code_fingerprint(root, s)["digest"] for s in ("ensloss", "dp_noise")}
    assert after["ensloss"] != before["ensloss"]
    assert after["dp_noise"] == before["dp_noise"]
    # a shared core file changes every method's
    core = next((root / "src/reprolab/core").glob("*.py"))
    core.write_text(core.read_text() + "\nEDITED = True\n")
    again = {s: validate.code_fingerprint(root, s)["digest"] for s in ("ensloss", "dp_noise")}
    assert again["ensloss"] != after["ensloss"] and again["dp_noise"] != after["dp_noise"]


def test_code_text_keeps_strings_and_code_drops_comments():
    src = b'x = 1  # why\n\n# a note\ns = """a\n\n# data, not a comment\n"""\n'
    assert validate.code_text(src) == b'x = 1\ns = """a\n\n# data, not a comment\n"""\n'
    # a blank line inside a string literal is data: it changes the text
    other = src.replace(b'"""a\n\n#', b'"""a\n#')
    assert validate.code_text(other) != validate.code_text(src)
    # so is white space at the end of a line inside one; outside, it is layout
    spaced = src.replace(b'"""a\n', b'"""a  \n')
    assert validate.code_text(spaced) != validate.code_text(src)
    assert validate.code_text(src.replace(b"x = 1", b"x = 1   ")) == validate.code_text(src)
    # a file that does not tokenize is hashed as it is
    assert validate.code_text(b"def (:\n  'open") == b"def (:\n  'open"


def test_missing_source_is_named(tmp_path):
    root = _tree(tmp_path)
    shutil.rmtree(root / "src/reprolab/methods/dp_noise")
    try:
        validate.code_fingerprint(root, "dp_noise")
    except FileNotFoundError as err:
        assert "src/reprolab/methods/dp_noise" in str(err)
    else:
        raise AssertionError("a missing method folder must be named")


def test_dvc_yaml_validate_covers_what_the_fingerprints_hash():
    """Exactness: validate must rerun whenever a fingerprinted file changes, and the
    per-method stages must depend on their fingerprint (and their own stage module)."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    vdeps = set(stages["validate"]["deps"])
    for rel in (*validate.SHARED_CODE, "src/reprolab/methods"):
        assert rel in vdeps, rel
    for name in ("prepare", "train", "quantize", "evaluate"):
        deps = stages[name]["do"]["deps"]
        assert "data/config/${key}.code.json" in deps, name
        assert f"src/reprolab/stages/{name}.py" in deps, name


def test_train_resume_digest_ignores_comments_and_follows_code(tmp_path):
    from reprolab.stages._common import code_digest

    folder = tmp_path / "m"
    shutil.copytree(
        ROOT / "src/reprolab/methods/dp_noise", folder, ignore=shutil.ignore_patterns("__pycache__")
    )
    before = code_digest(folder)
    path = folder / "method.py"
    text = path.read_text()
    future = "from __future__ import annotations\n"
    assert future in text
    path.write_text("# a new comment line\n" + text.replace(future, future[:-1] + "  # note\n"))
    assert code_digest(folder) == before
    path.write_text(text + "\nEXTRA = 1\n")
    assert code_digest(folder) != before
