"""validate: check the whole params.yaml and write every stage's resolved config.

The first stage of the DAG: every other stage depends on its own file under
``data/config/``, so a bad edit of params.yaml stops `dvc repro` here, naming the key,
before DVC removes any stage's outputs; a good edit changes exactly the files of the
stages it touches (see :func:`reprolab.config.resolved_files`).
"""

from __future__ import annotations

from pathlib import Path

from reprolab import config
from reprolab.core import io

CONFIG_DIR = Path("data") / "config"


def run(root: Path) -> dict:
    project = config.load(root / "params.yaml")
    files = config.resolved_files(project)
    with io.atomic_dir(root / CONFIG_DIR) as tmp:
        for name, content in files.items():
            io.write_json(tmp / name, content)
    return {"files": len(files), "profile": project.profile, "methods": project.slugs}
