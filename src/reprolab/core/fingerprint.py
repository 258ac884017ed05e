"""Code fingerprints: which source files a method's stages run, hashed without what
cannot change what they compute (comments, blank lines, documentation).

Two sets per method, so that a stage reruns exactly when code it runs changes:

- **build** (prepare, train, quantize): the method's folder except its judging modules
  (``claims.py``, ``plots.py``), the shared code except what judges (:data:`JUDGE_SHARED`)
  and what only evaluation runs (:data:`EVALUATE_SHARED`), the contract and the stage
  helpers. Editing a claim or a plot, or the claims engine (``evidence/judging``),
  retrains nothing.
- **evaluate**: everything the method's folder, the core and the judging half of the
  evidence engine hold: evaluation runs the trained objects (build code), the claims,
  the plots and the sandbox.

A build module must not import a judging module (``tests/unit/test_code_fingerprint.py``
checks every method): training code that read a claim would otherwise escape its
fingerprint. Training may still import the method's ``SPEC`` (whose claims are data).
"""

from __future__ import annotations

import hashlib
import io as _io
import json
import tokenize
from pathlib import Path

#: what every per-method stage runs besides its stage module and the method's folder
SHARED_CODE = (
    "src/reprolab/core",
    "src/reprolab/evidence/judging",
    "src/reprolab/stages/_common.py",
    "src/reprolab/contract.py",
)
#: the method's modules that judge results (claims as data and their checks, figures)
JUDGE_METHOD = ("claims.py", "plots.py")
#: the shared modules that judge results: the claims engine, its statistics and plan
#: (the judging half of the evidence engine; its ``entries``, the verdicts' vocabulary,
#: is build code: tracking reads it) and the core's figures
JUDGE_SHARED = (
    "src/reprolab/evidence/judging/claims.py",
    "src/reprolab/evidence/judging/sequential.py",
    "src/reprolab/evidence/judging/stats.py",
    "src/reprolab/core/plots.py",
)
#: shared modules only evaluation runs (the sandbox that scores model-written programs)
EVALUATE_SHARED = ("src/reprolab/core/sandbox.py",)
IGNORED = ("__pycache__",)
#: documentation in the fingerprinted folders: no stage reads it
DOCS = (".md",)
STAGE_SETS = ("build", "evaluate")
_NOT_CODE = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENCODING,
    tokenize.ENDMARKER,
}


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


def package_root() -> Path:
    """The project folder of the running package (``<root>/src/reprolab``): the code a
    stage runs is hashed where it is imported from."""
    return Path(__file__).resolve().parents[3]


def in_set(rel: str, slug: str, which: str) -> bool:
    """Whether the file at ``rel`` (a path under the project root) is in the ``which``
    set of method ``slug``."""
    if which == "evaluate":
        return True
    name = rel.rsplit("/", 1)[-1]
    if rel.startswith(f"src/reprolab/methods/{slug}/"):
        return rel.count("/") > 4 or name not in JUDGE_METHOD
    return rel not in (*JUDGE_SHARED, *EVALUATE_SHARED)


def method_files(root: Path, slug: str, which: str = "evaluate") -> list[Path]:
    """The source files of ``slug``'s ``which`` set (see the module doc)."""
    if which not in STAGE_SETS:
        raise ValueError(f"unknown code set {which!r}; sets: {', '.join(STAGE_SETS)}")
    out = []
    for rel in (*SHARED_CODE, f"src/reprolab/methods/{slug}"):
        for path in _files(root, rel):
            if in_set(path.relative_to(root).as_posix(), slug, which):
                out.append(path)
    return out


def file_hash(path: Path) -> str:
    data = path.read_bytes()
    return hashlib.sha256(code_text(data) if path.suffix == ".py" else data).hexdigest()


def fingerprint(root: Path, slug: str, which: str = "evaluate", extra: tuple = ()) -> dict:
    """SHA-256 of each file of the set (and of ``extra`` files), by path, and their
    digest."""
    files = {
        p.relative_to(root).as_posix(): file_hash(p)
        for p in (*method_files(root, slug, which), *(root / e for e in extra))
    }
    digest = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
    return {"slug": slug, "set": which, "digest": digest, "files": files}
