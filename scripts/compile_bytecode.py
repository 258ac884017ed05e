"""Write the bytecode of a command-line tool's whole import closure once, at install.

The venv is installed with ``pip --no-compile`` (compiling every installed file costs
~70 s), and an environment that sets ``PYTHONDONTWRITEBYTECODE`` (CI machines, some
shells) never writes bytecode later: every ``dvc repro`` typed in such a shell would
compile DVC's modules from source again, about 0.2 s of a 1.4 s no-op
(bench/results/noop.md). This compiles the files of the named distributions and of
everything they require, recursively (package metadata, so a DVC upgrade that imports
another module is covered), in parallel.

    python scripts/compile_bytecode.py dvc [more distributions]
"""

from __future__ import annotations

import compileall
import re
import sys
import time
from importlib import metadata
from pathlib import Path


def closure(names: list[str]) -> list[metadata.Distribution]:
    """The distributions ``names`` and everything they require (extras' markers
    evaluated as pip would: only what is installed counts)."""
    seen: dict[str, metadata.Distribution] = {}
    todo = list(names)
    while todo:
        name = re.split(r"[\s;<>=!~\[(]", todo.pop().strip(), maxsplit=1)[0]
        key = name.lower().replace("_", "-")
        if not key or key in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional requirement that is not installed
        seen[key] = dist
        for req in dist.requires or []:
            if "extra ==" in req:
                continue
            todo.append(req)
    return list(seen.values())


def package_dirs(dists: list[metadata.Distribution]) -> list[Path]:
    """Top-level folders and modules the distributions install (from their RECORD)."""
    found: set[Path] = set()
    for dist in dists:
        for file in dist.files or []:
            parts = Path(file).parts
            if not parts or parts[0].endswith((".dist-info", ".data")) or ".." in parts:
                continue
            if file.suffix == ".py" or len(parts) > 1:
                found.add(Path(dist.locate_file(parts[0])))
    return sorted(p for p in found if p.suffix == ".py" or p.is_dir())


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python scripts/compile_bytecode.py DIST [DIST ...]", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    dists = closure(argv)
    paths = package_dirs(dists)
    for path in paths:
        # a file that does not compile (a Python 2 fixture inside some wheel) is one
        # the tool never imports: it does not stop the install
        if path.is_dir():
            compileall.compile_dir(path, quiet=2, workers=0)
        else:
            compileall.compile_file(path, quiet=2)
    print(
        f"compile_bytecode: {len(dists)} distributions, {len(paths)} packages "
        f"({time.perf_counter() - t0:.1f} s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
