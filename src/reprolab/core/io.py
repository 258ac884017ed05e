"""Atomic writes and checksummed datasets.

Every output is written to a temporary sibling first and moved into place with
``os.replace``, so a killed process leaves either the old file or the new one, never
half of one. Prepared datasets carry a manifest of SHA-256 sums that is checked on
every load, so a truncated or corrupted file is named before any compute starts.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

MANIFEST = "manifest.json"


class CorruptDataError(RuntimeError):
    """A prepared file is missing, truncated or does not match its manifest."""


def sha256(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def md5(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.md5()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _publish_mode(path: Path, directory: bool = False) -> None:
    """The mode a plain ``open``/``mkdir`` would have given (0644/0755 under the usual
    umask): ``mkstemp`` and ``mkdtemp`` create 0600/0700, which would make every report
    and data file private to its writer."""
    os.chmod(path, (0o777 if directory else 0o666) & ~_umask())


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temporary path in the same folder; move it onto ``path`` on success."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        _publish_mode(tmp_path)
        os.replace(tmp_path, path)
    finally:
        tmp_path.unlink(missing_ok=True)


def save_torch(obj: Any, path: Path) -> None:
    """``torch.save`` to ``path`` atomically and byte-identically for identical objects:
    saved by path, torch names the archive after the (temporary, random) file name, so
    the same weights would hash differently on every run. Through a file object the
    archive is always named 'archive'."""
    import torch

    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        torch.save(obj, fh)


def json_text(obj: Any) -> str:
    """``obj`` as :func:`write_json` writes it."""
    return json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n"


def write_json(path: Path, obj: Any) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json_text(obj))


def write_text(path: Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise CorruptDataError(f"{path} is missing") from exc
    except json.JSONDecodeError as exc:
        raise CorruptDataError(f"{path} is not valid JSON ({exc})") from exc


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"cannot serialise {type(obj).__name__} to JSON")


@contextlib.contextmanager
def atomic_dir(path: Path) -> Iterator[Path]:
    """Build a folder under a temporary name; swap it in for ``path`` on success."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        _publish_mode(tmp, directory=True)
        if path.exists():
            old = path.with_name(f".{path.name}.old-{os.getpid()}")
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def save_arrays(folder: Path, name: str, arrays: dict[str, np.ndarray]) -> Path:
    """Write ``name.npz`` into ``folder`` (atomically) and return its path.

    Byte-identical for identical arrays: ``np.savez`` stamps every member with the
    current time, which would give DVC a new hash for the same data on every run."""
    import zipfile

    path = folder / f"{name}.npz"
    with atomic_path(path) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as zf:
        for key, value in arrays.items():
            info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            with zf.open(info, "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, np.asanyarray(value), allow_pickle=False)
    return path


def write_manifest(folder: Path, meta: dict[str, Any]) -> None:
    """Record a SHA-256 of every data file in ``folder`` plus free-form metadata."""
    files = {
        p.name: {"sha256": sha256(p), "bytes": p.stat().st_size}
        for p in sorted(folder.iterdir())
        if p.is_file() and p.name != MANIFEST and not p.name.startswith(".")
    }
    write_json(folder / MANIFEST, {"files": files, "meta": meta})


def verify_folder(folder: Path, hint: str) -> dict[str, Any]:
    """Check every file of a prepared folder against its manifest; return the manifest.

    ``hint`` says how to regenerate the folder; it is part of every error message.
    """
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        raise CorruptDataError(f"{manifest_path} is missing: the folder is incomplete. {hint}")
    manifest = read_json(manifest_path)
    for name, entry in manifest["files"].items():
        path = folder / name
        if not path.is_file():
            raise CorruptDataError(f"{path} is missing. {hint}")
        if path.stat().st_size != entry["bytes"] or sha256(path) != entry["sha256"]:
            raise CorruptDataError(
                f"{path} is truncated or corrupt (its checksum does not match "
                f"{manifest_path}). {hint}"
            )
    return manifest


def array_hashes(path: Path) -> dict[str, str]:
    """SHA-256 of every array of an ``.npz`` written by :func:`save_arrays`, by array
    name (each member's stored bytes: its header, dtype and shape included)."""
    import zipfile

    out = {}
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                digest = hashlib.sha256()
                with zf.open(info) as fh:
                    while block := fh.read(1 << 20):
                        digest.update(block)
                out[info.filename.removesuffix(".npy")] = digest.hexdigest()
    except (OSError, zipfile.BadZipFile) as exc:
        raise CorruptDataError(f"{path} cannot be read ({exc})") from exc
    return out


def load_arrays(path: Path) -> dict[str, np.ndarray]:
    """Load an ``.npz`` written by :func:`save_arrays` (call :func:`verify_folder` first)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            return {key: data[key] for key in data.files}
    except (OSError, ValueError, EOFError) as exc:
        raise CorruptDataError(f"{path} cannot be read ({exc})") from exc


def rebuild_hint(name: str) -> str:
    """How to rebuild shared asset ``name``."""
    return f"Rebuild it with `dvc repro assets@{name}`."


def verified_asset(root: Path, name: str) -> Path:
    """The folder of a built shared asset of project ``root``, after checking every file
    against its manifest (a missing or corrupt one is named with its rebuild command)."""
    from reprolab.paths import asset_dir

    folder = asset_dir(root, name)
    verify_folder(folder, rebuild_hint(name))
    return folder
