"""The scorers f(x), one output each (torch only, so evaluation needs no Lightning):
an MLP (the MLP setting) and a small convolutional network (the paper's regime)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn


def mlp(in_dim: int, hidden: int, depth: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    width = in_dim
    for _ in range(depth):
        layers += [nn.Linear(width, hidden), nn.ReLU()]
        width = hidden
    layers.append(nn.Linear(width, 1))
    return nn.Sequential(*layers)


def _strided(side: int, kernel: int, padding: int) -> int:
    """Side of a square feature map after a stride-2 convolution."""
    return (side + 2 * padding - kernel) // 2 + 1


def cnn(side: int, channels: Sequence[int], hidden: int) -> nn.Sequential:
    """Flattened ``side`` x ``side`` grey images -> a 5x5 and a 3x3 convolution, both
    with stride 2 and ReLU, -> a fully connected layer of ``hidden`` units -> f(x).
    Most parameters sit in the fully connected layer (28x28 inputs, channels (16, 32),
    hidden 128: 206,017 parameters); integer zero padding keeps both convolutions on
    the int8 kernel (``core.quant``)."""
    c1, c2 = channels
    out = _strided(_strided(side, 5, 2), 3, 1)
    return nn.Sequential(
        nn.Unflatten(1, (1, side, side)),
        nn.Conv2d(1, c1, 5, stride=2, padding=2),
        nn.ReLU(),
        nn.Conv2d(c1, c2, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(c2 * out * out, hidden),
        nn.ReLU(),
        nn.Linear(hidden, 1),
    )


def image_side(n_features: int) -> int:
    """Side of the square images whose flattened rows have ``n_features`` pixels."""
    side = round(n_features**0.5)
    if side * side != n_features:
        raise ValueError(f"{n_features} features are not a square image")
    return side


def n_parameters(net: nn.Module) -> int:
    return sum(p.numel() for p in net.parameters())


def predict(net: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """0/1 predictions sign(f(x)) (f(x) = 0 counts as class 0)."""
    with torch.inference_mode():
        return (net(x).flatten() > 0).long()


def accuracy(net: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Share of rows with sign(f(x)) equal to y (labels 0/1; f(x) = 0 counts as class 0)."""
    return float((predict(net, x) == y).float().mean())
