"""The scorer f(x): an MLP with one output (torch only, so evaluation needs no Lightning)."""

from __future__ import annotations

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


def accuracy(net: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Share of rows with sign(f(x)) equal to y (labels 0/1; f(x) = 0 counts as class 0)."""
    with torch.inference_mode():
        pred = (net(x).flatten() > 0).long()
    return float((pred == y).float().mean())
