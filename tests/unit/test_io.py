"""Atomic writes leave nothing half-written; checksums catch damaged files."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.core import io


def test_atomic_path_keeps_old_content_on_failure(tmp_path):
    target = tmp_path / "out.json"
    io.write_json(target, {"v": 1})
    with pytest.raises(RuntimeError), io.atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("killed")
    assert io.read_json(target) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_atomic_dir_swaps_whole_folders(tmp_path):
    target = tmp_path / "d"
    with io.atomic_dir(target) as tmp:
        (tmp / "a").write_text("1")
    with pytest.raises(ValueError), io.atomic_dir(target) as tmp:
        (tmp / "b").write_text("2")
        raise ValueError
    assert sorted(p.name for p in target.iterdir()) == ["a"]
    with io.atomic_dir(target) as tmp:
        (tmp / "c").write_text("3")
    assert sorted(p.name for p in target.iterdir()) == ["c"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]


def prepared(tmp_path):
    folder = tmp_path / "prep"
    folder.mkdir()
    io.save_arrays(folder, "t", {"x": np.arange(1000, dtype=np.float32), "y": np.ones(3)})
    io.write_manifest(folder, {"k": 1})
    return folder


def test_round_trip_and_manifest(tmp_path):
    folder = prepared(tmp_path)
    manifest = io.verify_folder(folder, "hint")
    assert manifest["meta"] == {"k": 1}
    arrays = io.load_arrays(folder / "t.npz")
    np.testing.assert_array_equal(arrays["x"], np.arange(1000, dtype=np.float32))


def test_truncated_file_is_named(tmp_path):
    folder = prepared(tmp_path)
    path = folder / "t.npz"
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(io.CorruptDataError) as err:
        io.verify_folder(folder, "Regenerate it.")
    assert str(path) in str(err.value) and "Regenerate it." in str(err.value)


def test_flipped_byte_is_caught(tmp_path):
    folder = prepared(tmp_path)
    path = folder / "t.npz"
    data = bytearray(path.read_bytes())
    data[-50] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(io.CorruptDataError, match="checksum"):
        io.verify_folder(folder, "")


def test_missing_manifest(tmp_path):
    folder = prepared(tmp_path)
    (folder / io.MANIFEST).unlink()
    with pytest.raises(io.CorruptDataError, match="manifest.json is missing"):
        io.verify_folder(folder, "")


@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_atomic_writes_get_the_mode_a_plain_open_gives(tmp_path, mask):
    import os
    import stat

    old = os.umask(mask)
    try:
        plain = tmp_path / "plain.txt"
        plain.write_text("x")  # the reference: open() under this umask
        plain_dir = tmp_path / "plain_dir"
        plain_dir.mkdir()
        io.write_text(tmp_path / "report.md", "x")
        with io.atomic_dir(tmp_path / "folder") as tmp:
            (tmp / "a").write_text("x")
    finally:
        os.umask(old)

    def mode(p):
        return stat.S_IMODE(p.stat().st_mode)

    assert mode(tmp_path / "report.md") == mode(plain) == 0o666 & ~mask
    assert mode(tmp_path / "folder") == mode(plain_dir) == 0o777 & ~mask
