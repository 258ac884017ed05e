"""validate: check the whole params.yaml and write every stage's resolved config.

The first stage of the DAG: every other stage depends on its own file under
``data/config/``, so a bad edit of params.yaml stops `dvc repro` here, naming the key,
before DVC removes any stage's outputs; a good edit changes exactly the files of the
stages it touches (see :func:`reprolab.config.resolved_files`).

It also writes ``<slug>.code.json``: the SHA-256 of every source file a method's stages
run (the shared core, the stage helpers, the contract and the method's folder). The
per-method stages depend on that one file instead of on the folders themselves, so DVC
hashes the source tree once per ``dvc repro`` (in this stage, which depends on all of it)
rather than once per stage (~80 stages with 19 methods): a no-op ``dvc repro`` stays fast,
and caching stays exact, since a stage reruns exactly when a file it runs changes. The
file lists every path with its hash, so ``git diff``-style comparison of two versions
shows which source file made a stage rerun.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from reprolab import config
from reprolab.core import io

CONFIG_DIR = Path("data") / "config"
# What every per-method stage runs besides its own stage module (which stays a direct
# dependency in dvc.yaml) and the method's folder. Keep in step with dvc.yaml's
# validate deps, which must cover all of it.
SHARED_CODE = ("src/reprolab/core", "src/reprolab/stages/_common.py", "src/reprolab/contract.py")
IGNORED = ("__pycache__",)


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
        and not set(p.relative_to(root).parts) & set(IGNORED)
    )


def code_fingerprint(root: Path, slug: str) -> dict:
    """SHA-256 of each source file the stages of ``slug`` run, by path (sorted)."""
    rels = (*SHARED_CODE, f"src/reprolab/methods/{slug}")
    files = {}
    for rel in rels:
        for path in _files(root, rel):
            files[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
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
