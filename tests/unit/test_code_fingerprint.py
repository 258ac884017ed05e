"""The per-method code fingerprint that replaces per-stage source deps in dvc.yaml."""

from __future__ import annotations

import ast
import hashlib
import shutil
from pathlib import Path

import yaml

from reprolab.core.fingerprint import JUDGE_SHARED
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
        code = "evaluate.code.json" if name == "evaluate" else "code.json"
        assert f"data/config/${{key}}.{code}" in deps, name
        assert f"src/reprolab/stages/{name}.py" in deps, name


def test_train_resume_digest_ignores_comments_and_follows_code(tmp_path, monkeypatch):
    """Train's resume and unit-reuse digest is the method's build code as the running
    package has it: a comment edit keeps it, a code edit changes it."""
    from reprolab.core import fingerprint
    from reprolab.stages._common import code_digest

    root = _tree(tmp_path)
    monkeypatch.setattr(fingerprint, "package_root", lambda: root)
    before = code_digest("dp_noise", "build")
    path = root / "src/reprolab/methods/dp_noise/method.py"
    text = path.read_text()
    future = "from __future__ import annotations\n"
    assert future in text
    path.write_text("# a new comment line\n" + text.replace(future, future[:-1] + "  # note\n"))
    assert code_digest("dp_noise", "build") == before
    claims = root / "src/reprolab/methods/dp_noise/claims.py"
    claims.write_text(claims.read_text() + "\nEXTRA = 1\n")  # judging code: not trained on
    assert code_digest("dp_noise", "build") == before
    path.write_text(text + "\nEXTRA = 1\n")
    assert code_digest("dp_noise", "build") != before


def test_judging_code_is_in_the_evaluate_set_only(tmp_path):
    """A claims or plots edit, or one of the core's claims engine, changes the evaluate
    fingerprint and not the build one (prepare, train, quantize): it retrains nothing."""
    root = _tree(tmp_path)

    def both(slug):
        return tuple(
            validate.code_fingerprint(root, slug, w)["digest"] for w in ("build", "evaluate")
        )

    build = validate.code_fingerprint(root, "ensloss", "build")["files"]
    full = validate.code_fingerprint(root, "ensloss", "evaluate")["files"]
    assert "src/reprolab/methods/ensloss/claims.py" in full
    assert "src/reprolab/methods/ensloss/claims.py" not in build
    assert (
        "src/reprolab/evidence/judging/claims.py" not in build
        and "src/reprolab/core/sandbox.py" not in build
    )
    assert set(build) < set(full)
    before = {s: both(s) for s in ("ensloss", "dp_noise")}
    claims = root / "src/reprolab/methods/ensloss/claims.py"
    claims.write_text(claims.read_text() + "\nEXTRA = 1\n")
    after = {s: both(s) for s in ("ensloss", "dp_noise")}
    assert after["ensloss"][0] == before["ensloss"][0]  # build: unchanged
    assert after["ensloss"][1] != before["ensloss"][1]  # evaluate: changed
    assert after["dp_noise"] == before["dp_noise"]
    engine = root / "src/reprolab/evidence/judging/claims.py"
    engine.write_text(engine.read_text() + "\nEXTRA = 1\n")
    again = {s: both(s) for s in ("ensloss", "dp_noise")}
    for s in ("ensloss", "dp_noise"):
        assert again[s][0] == after[s][0] and again[s][1] != after[s][1]


def _module(rel: str) -> str:
    return rel.removeprefix("src/").removesuffix(".py").replace("/", ".")


#: what the build fingerprint leaves out as judging code, as module names
JUDGING = {_module(rel) for rel in JUDGE_SHARED}


#: hooks that only evaluation calls: they may import judging code (the figures)
EVALUATION_HOOKS = ("plots", "runtime_plots")


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at any depth (lazy imports inside functions too),
    except inside the evaluation-only hooks."""
    tree = ast.parse(path.read_text())
    skipped = {
        id(n)
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef) and f.name in EVALUATION_HOOKS
        for n in ast.walk(f)
    }
    out = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


def test_build_code_never_imports_judging_code():
    """What the build fingerprint leaves out, build code must not run: no module of a
    method but its claims, plots and spec (whose claims are data) imports the method's
    claims or plots, nor the core's claims engine, statistics or plots (outside the
    evaluation-only hooks, which draw the figures); no core module in the build set
    imports them either."""
    from reprolab.core.fingerprint import JUDGE_METHOD

    methods = ROOT / "src/reprolab/methods"
    offenders = []
    for folder in sorted(p for p in methods.iterdir() if (p / "__init__.py").is_file()):
        judging = {f"reprolab.methods.{folder.name}.{m[:-3]}" for m in JUDGE_METHOD} | JUDGING
        for path in sorted(folder.rglob("*.py")):
            if path.name in (*JUDGE_METHOD, "__init__.py"):
                continue
            bad = _imports(path) & judging
            if bad:
                offenders.append(f"{path.relative_to(ROOT)}: {sorted(bad)}")
    shared = [
        p for d in ("core", "evidence/judging") for p in (ROOT / "src/reprolab" / d).glob("*.py")
    ]
    for path in sorted(shared):
        if path.relative_to(ROOT).as_posix() not in JUDGE_SHARED:
            bad = _imports(path) & JUDGING
            if bad:
                offenders.append(f"{path.relative_to(ROOT)}: {sorted(bad)}")
    assert not offenders, "build code imports judging code:\n" + "\n".join(offenders)
