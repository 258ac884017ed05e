"""validate: check the whole params.yaml and write every stage's resolved config.

The first stage of the DAG: every other stage depends on its own file under
``data/config/``, so a bad edit of params.yaml stops `dvc repro` here, naming the key,
before DVC removes any stage's outputs; a good edit changes exactly the files of the
stages it touches (see :func:`reprolab.config.resolved_files`).

It also writes ``<slug>.code.json`` and ``<slug>.evaluate.code.json``: the SHA-256 of
every source file a method's stages run (the shared core, the stage helpers, the contract
and the method's folder): the first for prepare, train and quantize, without the modules
that only judge results (claims, plots, the claims engine; ``reprolab.core.fingerprint``),
so a claims or plots edit reruns evaluate and the report, not training; the second, all
of it, for evaluate. Both are taken
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

from pathlib import Path

from reprolab import config
from reprolab.config import CONFIG_DIR, code_fingerprint
from reprolab.config import config_files as files
from reprolab.core import io
from reprolab.core.fingerprint import SHARED_CODE, code_text

__all__ = ["CONFIG_DIR", "SHARED_CODE", "code_fingerprint", "code_text", "files", "run"]


def run(root: Path) -> dict:
    project = config.load(root / "params.yaml")
    written = files(root, project)
    with io.atomic_dir(root / CONFIG_DIR) as tmp:
        for name, content in written.items():
            io.write_json(tmp / name, content)
    return {"files": len(written), "profile": project.profile, "methods": project.slugs}
