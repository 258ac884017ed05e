"""The victim network: a small CNN on flat rows in [0, 1] (no Lightning import, so the
quantize and evaluate stages can rebuild it cheaply).

The first layer reshapes a row to a one-channel square image, so the attacks, the oracle
and the quantizer all work on plain ``(n, side * side)`` tensors.
"""

from __future__ import annotations

import math

from torch import nn


def side_of(in_dim: int) -> int:
    side = math.isqrt(in_dim)
    if side * side != in_dim or side % 4:
        raise ValueError(f"inputs of {in_dim} pixels are not a square image with side % 4 == 0")
    return side


def cnn(in_dim: int, channels: tuple[int, int], hidden: int, n_classes: int = 10) -> nn.Sequential:
    """conv3-ReLU-pool, conv3-ReLU-pool, linear-ReLU, linear (the official repo's MNIST
    net has the same shape with more channels: ``arch/mnist_model.py``)."""
    side = side_of(in_dim)
    c1, c2 = channels
    return nn.Sequential(
        nn.Unflatten(1, (1, side, side)),
        nn.Conv2d(1, c1, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(c1, c2, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(c2 * (side // 4) ** 2, hidden),
        nn.ReLU(),
        nn.Linear(hidden, n_classes),
    )
