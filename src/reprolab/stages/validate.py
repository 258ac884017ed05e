"""validate: check the whole params.yaml and write every stage's resolved config.

The first stage of the DAG: every other stage depends on its own file under
``data/config/``, so a bad edit of params.yaml stops `dvc repro` here, naming the key,
before DVC removes any stage's outputs; a good edit changes exactly the files of the
stages it touches (see :func:`reprolab.config.resolved_files`).

It also writes ``<slug>.code.json``: the SHA-256 of every source file a method's stages
run (the shared core, the stage helpers, the contract and the method's folder), taken
over the code without its comments (:func:`code_text`) and leaving out documentation
(``*.md``): editing a README or a comment reruns no stage, since neither can change
what a stage computes; a docstring is still code (a program can read it). The
per-method stages depend on that one file instead of on the folders themselves, so DVC
hashes the source tree once per ``dvc repro`` (in this stage, which depends on all of it)
rather than once per stage (~80 stages with 19 methods): a no-op ``dvc repro`` stays fast,
and caching stays exact, since a stage reruns exactly when a file it runs changes. The
file lists every path with its hash, so ``git diff``-style comparison of two versions
shows which source file made a stage rerun.
"""

from __future__ import annotations

import hashlib
import io as _io
import json
import tokenize
from pathlib import Path

from reprolab import config
from reprolab.core import io

CONFIG_DIR = Path("data") / "config"
# What every per-method stage runs besides its own stage module (which stays a direct
# dependency in dvc.yaml) and the method's folder. Keep in step with dvc.yaml's
# validate deps, which must cover all of it.
SHARED_CODE = ("src/reprolab/core", "src/reprolab/stages/_common.py", "src/reprolab/contract.py")
IGNORED = ("__pycache__",)
#: documentation in the fingerprinted folders: no stage reads it
DOCS = (".md",)
#: tokens that are not code: a line holding only these is dropped from :func:`code_text`
_NOT_CODE = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENCODING,
    tokenize.ENDMARKER,
}


def _files(root: Path, rel: str) -> list[Path]:
    path = root / rel
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise FileNotFoundError(f"{rel}: source path missing under {root} (dvc.yaml depends on it)")
    return sorted(
        p
        for p in path.rglob("*")
        if p.is_file()
        and not p.name.endswith(".pyc")
        and p.suffix not in DOCS
        and not set(p.relative_to(root).parts) & set(IGNORED)
    )


def code_text(data: bytes) -> bytes:
    """A Python source without what cannot change what it computes: comments, lines
    holding nothing but comments or whitespace, and trailing whitespace. Lines inside
    a string literal are kept as they are, trailing white space included (a blank line
    in a prompt is data). A file that does not tokenize is returned unchanged."""
    try:
        tokens = list(tokenize.tokenize(_io.BytesIO(data).readline))
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError):
        return data
    lines = data.decode(tokens[0].string if tokens else "utf-8").splitlines()
    code_lines: set[int] = set()
    in_literal: set[int] = set()  # lines whose end lies inside a multi-line token
    comment_at: dict[int, int] = {}
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            comment_at[tok.start[0]] = tok.start[1]
        elif tok.type not in _NOT_CODE:
            code_lines.update(range(tok.start[0], tok.end[0] + 1))
            in_literal.update(range(tok.start[0], tok.end[0]))
    kept = []
    for number, line in enumerate(lines, 1):
        if number not in code_lines:
            continue
        if number in comment_at:
            line = line[: comment_at[number]]
        # trailing white space inside a string literal is data, elsewhere layout
        kept.append(line if number in in_literal else line.rstrip())
    return "\n".join(kept).encode() + b"\n"


def code_fingerprint(root: Path, slug: str) -> dict:
    """SHA-256 of each source file the stages of ``slug`` run, by path (sorted): of
    :func:`code_text` for a Python file, of the bytes otherwise; documentation is left
    out."""
    rels = (*SHARED_CODE, f"src/reprolab/methods/{slug}")
    files = {}
    for rel in rels:
        for path in _files(root, rel):
            data = path.read_bytes()
            text = code_text(data) if path.suffix == ".py" else data
            files[path.relative_to(root).as_posix()] = hashlib.sha256(text).hexdigest()
    digest = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
    return {"slug": slug, "digest": digest, "files": files}


def run(root: Path) -> dict:
    project = config.load(root / "params.yaml")
    files = config.resolved_files(project)
    for slug in project.slugs:
        files[f"{slug}.code.json"] = code_fingerprint(root, slug)
    with io.atomic_dir(root / CONFIG_DIR) as tmp:
        for name, content in files.items():
            io.write_json(tmp / name, content)
    return {"files": len(files), "profile": project.profile, "methods": project.slugs}
