"""The networks: a 1-Lipschitz MLP (Bjorck-orthonormalised linear layers and MaxMin,
Anil et al. 2019) and the plain ReLU MLP that RSCP smooths. Torch only."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils import parametrize


class MaxMin(nn.Module):
    """Sorts each pair of units: (max, min). 1-Lipschitz and gradient-norm preserving."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = x.reshape(*x.shape[:-1], -1, 2).unbind(-1)
        return torch.cat([torch.maximum(a, b), torch.minimum(a, b)], dim=-1)


class Bjorck(nn.Module):
    """W -> Bjorck iterates of W / ||W||_F. Every singular value starts in (0, 1] and the
    map s -> 1.5 s - 0.5 s^3 keeps it there, so ||W||_2 <= 1 after any number of steps
    (up to float rounding), and the iterates converge to the nearest semi-orthogonal W."""

    def __init__(self, iters: int) -> None:
        super().__init__()
        self.iters = iters

    def forward(self, w: torch.Tensor) -> torch.Tensor:
        wide = w.shape[0] <= w.shape[1]
        v = w if wide else w.T
        v = v / v.norm().clamp_min(1e-12)
        for _ in range(self.iters):
            v = 1.5 * v - 0.5 * (v @ v.T) @ v
        return v if wide else v.T


def lip_mlp(in_dim: int, hidden: int, depth: int, n_classes: int, bjorck_iters: int = 0):
    """Linear layers with ||W||_2 <= 1 and MaxMin: the logit map is 1-Lipschitz in L2.
    ``bjorck_iters > 0`` registers the parametrisation (training); 0 builds the plain
    architecture that a trained state is loaded into."""
    layers: list[nn.Module] = []
    width = in_dim
    for _ in range(depth):
        layers += [nn.Linear(width, hidden), MaxMin()]
        width = hidden
    layers.append(nn.Linear(width, n_classes))
    net = nn.Sequential(*layers)
    if bjorck_iters:
        for m in net:
            if isinstance(m, nn.Linear):
                parametrize.register_parametrization(m, "weight", Bjorck(bjorck_iters))
    return net


def freeze(net: nn.Sequential) -> nn.Sequential:
    """Replace each parametrisation by the weight it produces (plain nn.Linear layers)."""
    for m in net:
        if parametrize.is_parametrized(m):
            with torch.no_grad():
                parametrize.remove_parametrizations(m, "weight", leave_parametrized=True)
    return net


def relu_mlp(in_dim: int, hidden: int, depth: int, n_classes: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    width = in_dim
    for _ in range(depth):
        layers += [nn.Linear(width, hidden), nn.ReLU()]
        width = hidden
    layers.append(nn.Linear(width, n_classes))
    return nn.Sequential(*layers)


def float_weights(m: nn.Module) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """(weight, bias) of a linear layer as fp32 tensors, also for an int8 dynamic one."""
    if isinstance(m, nn.Linear):
        return m.weight.detach(), None if m.bias is None else m.bias.detach()
    w = getattr(m, "weight", None)
    if callable(w):  # torch.ao dynamic quantized Linear: weight() is a quantized tensor
        b = m.bias()
        return w().dequantize(), None if b is None else b.detach()
    return None


def differentiable(net: nn.Sequential) -> nn.Sequential:
    """An fp32 copy of ``net`` with the same (dequantized) weights, for attack gradients:
    int8 dynamic layers have no backward."""
    layers: list[nn.Module] = []
    for m in net:
        wb = float_weights(m)
        if wb is None:
            layers.append(m)
            continue
        w, b = wb
        lin = nn.Linear(w.shape[1], w.shape[0], bias=b is not None)
        with torch.no_grad():
            lin.weight.copy_(w)
            if b is not None:
                lin.bias.copy_(b)
        layers.append(lin)
    return nn.Sequential(*layers).eval()


def lipschitz_bound(net: nn.Sequential) -> float:
    """Product of the layers' spectral norms (MaxMin and ReLU are 1-Lipschitz)."""
    bound = 1.0
    for m in net:
        wb = float_weights(m)
        if wb is not None:
            bound *= float(torch.linalg.matrix_norm(wb[0].double(), 2))
    return bound
