"""Linear HyperFeatureAttention and order-3 linear HyperAttention (Ustaomeroglu & Qu,
arXiv 2506.06179), in low-rank factorised forms built from ``nn.Linear`` so int8
quantizers reach every weight, plus the paper's pairwise-interaction target."""

from __future__ import annotations

import torch
from torch import nn


class LinearSA(nn.Module):
    """SA_lin(X) = (X C X^T) X W_V with C = W_Q W_K^T of rank ``rank`` (one head, no
    softmax, no scaling): the paper's one-layer linear self-attention."""

    def __init__(self, d: int, rank: int | None = None, d_out: int | None = None):
        super().__init__()
        r = rank or d
        self.q = nn.Linear(d, r, bias=False)
        self.k = nn.Linear(d, r, bias=False)
        self.v = nn.Linear(d, d_out or d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (B, L, d)
        return (self.q(x) @ self.k(x).transpose(-1, -2)) @ self.v(x)


class LinearHFA(nn.Module):
    """HFA_lin(X) = [prod_a X C^(a) X^T] [prod_a X W_V(a)] (products are Hadamard),
    with C^(a) = W_Q^(a) W_K^(a)^T."""

    def __init__(
        self, d: int, n_factors: int = 2, rank: int | None = None, d_out: int | None = None
    ):
        super().__init__()
        r, out = rank or d, d_out or d
        self.q = nn.ModuleList(nn.Linear(d, r, bias=False) for _ in range(n_factors))
        self.k = nn.ModuleList(nn.Linear(d, r, bias=False) for _ in range(n_factors))
        self.v = nn.ModuleList(nn.Linear(d, out, bias=False) for _ in range(n_factors))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (B, L, d)
        a = v = None
        for q, k, w in zip(self.q, self.k, self.v, strict=True):
            score, value = q(x) @ k(x).transpose(-1, -2), w(x)
            a = score if a is None else a * score
            v = value if v is None else v * value
        return a @ v


class LinearHA3(nn.Module):
    """Order-3 linear HyperAttention with rank-R factors:
    C_(a z1 z2) = sum_s Q_as K1_z1s K2_z2s, W^V_(x1 x2 t) = sum_r V1_x1r V2_x2r O_rt,
    HA_it = sum_(j1,j2) A_ij1j2 V_j1j2t, evaluated in O(L R^2)."""

    def __init__(self, d: int, rank: int, d_out: int | None = None):
        super().__init__()
        self.q = nn.Linear(d, rank, bias=False)
        self.k1 = nn.Linear(d, rank, bias=False)
        self.k2 = nn.Linear(d, rank, bias=False)
        self.v1 = nn.Linear(d, rank, bias=False)
        self.v2 = nn.Linear(d, rank, bias=False)
        self.o = nn.Linear(rank, d_out or d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        m1 = torch.einsum("bjs,bjr->bsr", self.k1(x), self.v1(x))
        m2 = torch.einsum("bjs,bjr->bsr", self.k2(x), self.v2(x))
        h = torch.einsum("bis,bsr,bsr->bir", self.q(x), m1, m2)
        return self.o(h)

    def tensors(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The defining order-3 tensors C (d, d, d) and W^V (d, d, d)."""
        c = torch.einsum("sa,sy,sz->ayz", self.q.weight, self.k1.weight, self.k2.weight)
        wv = torch.einsum("rx,ry,tr->xyt", self.v1.weight, self.v2.weight, self.o.weight)
        return c, wv


def pairwise_target(types: torch.Tensor, f: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """y_i = sum_j f(s_i, s_j) w_(s_j) for types (B, L), f (N, N), w (N,)."""
    return (f[types.unsqueeze(-1), types.unsqueeze(-2)] * w[types].unsqueeze(-2)).sum(-1)
