"""The denoiser: a small DiGress-style graph transformer, and the diffusion model around it.

Every projection is an ``nn.Linear`` (input and output MLPs, Q / K / V, edge FiLM,
attention output, feed-forward blocks, time conditioning), so a post-training quantizer
that swaps ``nn.Linear`` layers sees the whole network. ``forward`` takes positional
tensors only: ``(X, E, t, node_mask)`` -> ``(node logits, edge logits)``.

Layer (DiGress's ``NodeEdgeBlock``, without its global-feature update): per-dimension
attention scores ``Y_ij = Q_i * K_j / sqrt(d_head)`` are modulated by the edge features
(``Y <- Y (1 + E1_ij) + E2_ij``), feed the new edge features through a linear map, and,
after a softmax over j per dimension, weight the values ``V_j``. The time step and the
node count enter by FiLM on nodes and edges. Structural features of the noisy graph
(degree, bond-order valence, triangles through each node) are appended to the node
input, as DiGress's extra features do (cheap subset: no spectral or 4-6 cycle features).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from reprolab.methods.bit_dgdm import diffusion


def mlp(d_in: int, d_hidden: int, d_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, d_hidden), nn.ReLU(), nn.Linear(d_hidden, d_out))


class NodeEdgeLayer(nn.Module):
    def __init__(self, dx: int, de: int, dy: int, heads: int) -> None:
        super().__init__()
        self.heads, self.df = heads, dx // heads
        self.q, self.k, self.v = nn.Linear(dx, dx), nn.Linear(dx, dx), nn.Linear(dx, dx)
        self.e_mul, self.e_add = nn.Linear(de, dx), nn.Linear(de, dx)
        self.y_x, self.y_e = nn.Linear(dy, 2 * dx), nn.Linear(dy, 2 * de)
        self.x_out, self.e_out = nn.Linear(dx, dx), nn.Linear(dx, de)
        self.ff_x, self.ff_e = mlp(dx, 2 * dx, dx), mlp(de, 2 * de, de)
        self.norm_x1, self.norm_x2 = nn.LayerNorm(dx), nn.LayerNorm(dx)
        self.norm_e1, self.norm_e2 = nn.LayerNorm(de), nn.LayerNorm(de)

    def forward(self, x, e, y, node_mask, pair_mask):
        xm = node_mask[..., None].float()
        q, k, v = self.q(x), self.k(x), self.v(x)
        scores = q[:, :, None] * k[:, None] / math.sqrt(self.df)  # (B, n, n, dx)
        scores = scores * (self.e_mul(e) + 1) + self.e_add(e)
        y_mul, y_add = self.y_e(y)[:, None, None].chunk(2, -1)
        new_e = self.e_out(scores) * (1 + y_mul) + y_add
        keys = node_mask[:, None, :, None]
        attn = torch.softmax(scores.masked_fill(~keys, float("-inf")), dim=2)
        attn = torch.nan_to_num(attn) * xm[:, :, None]  # padding rows attend to nothing
        agg = (attn * v[:, None]).sum(2)
        y_mul, y_add = self.y_x(y)[:, None].chunk(2, -1)
        new_x = self.x_out(agg) * (1 + y_mul) + y_add
        pm = pair_mask[..., None].float()
        x = self.norm_x1(x + new_x) * xm
        x = self.norm_x2(x + self.ff_x(x)) * xm
        e = self.norm_e1(e + new_e) * pm
        e = self.norm_e2(e + self.ff_e(e)) * pm
        return x, e


class GraphTransformer(nn.Module):
    """Denoiser of DiGress: noisy one-hot graph + time -> logits of the clean types."""

    def __init__(
        self, kx: int, ke: int, n_max: int, dx: int, de: int, dy: int, layers: int, heads: int
    ) -> None:
        super().__init__()
        if dx % heads:
            raise ValueError(f"hidden width {dx} is not a multiple of heads={heads}")
        self.kx, self.ke, self.n_max = kx, ke, n_max
        self.in_x = mlp(kx + 3, dx, dx)
        self.in_e = mlp(ke + 2, de, de)
        self.in_y = mlp(3, dy, dy)
        self.layers = nn.ModuleList(NodeEdgeLayer(dx, de, dy, heads) for _ in range(layers))
        self.out_x = mlp(dx, dx, kx)
        self.out_e = mlp(de, de, ke)

    def structure(self, e: torch.Tensor, node_mask: torch.Tensor):
        """Node features (degree, valence, triangles; / n_max), edge features (entries of
        N^2 and N^3, N = D^-1/2 A D^-1/2) and global features (node count / n_max, edge
        density) of the noisy graph ``e`` (one-hot, zero diagonal and padding)."""
        adj = e[..., 1:].sum(-1)
        order = torch.arange(1, self.ke, dtype=e.dtype, device=e.device)
        deg = adj.sum(-1)
        valence = (e[..., 1:] * order).sum((-1, -2))
        a3 = adj @ adj @ adj
        tri = torch.diagonal(a3, dim1=-2, dim2=-1) / 2
        node = torch.stack([deg, valence, tri], -1) / self.n_max
        inv_sqrt = deg.clamp_min(1).rsqrt()
        norm = inv_sqrt[:, :, None] * adj * inv_sqrt[:, None, :]
        norm2 = norm @ norm
        edge = torch.stack([norm2, norm2 @ norm], -1)
        n = node_mask.sum(-1).float()
        density = adj.sum((-1, -2)) / (n * (n - 1)).clamp_min(1)
        return node, edge, torch.stack([n / self.n_max, density], -1)

    def forward(self, X, E, t, node_mask):
        node_mask = node_mask.bool()
        pair_mask = diffusion.node_pair_mask(node_mask)
        feats, pair_feats, glob = self.structure(E, node_mask)
        xm, pm = node_mask[..., None].float(), pair_mask[..., None].float()
        x = self.in_x(torch.cat([X, feats], -1)) * xm
        e = self.in_e(torch.cat([E, pair_feats], -1))
        e = (e + e.transpose(1, 2)) / 2 * pm
        y = self.in_y(torch.cat([t.reshape(-1, 1).float(), glob], -1))
        for layer in self.layers:
            x, e = layer(x, e, y, node_mask, pair_mask)
        logits_x = (self.out_x(x) + X) * xm
        logits_e = self.out_e(e) + E
        logits_e = (logits_e + logits_e.transpose(1, 2)) / 2 * pm
        return logits_x, logits_e


class GraphDiffusion(nn.Module):
    """The denoiser plus what sampling needs, as buffers (so a quantized copy, whose
    linear layers were swapped, still carries them): the noise schedule, the type
    marginals of the training graphs and their node-count distribution."""

    def __init__(self, kx: int, ke: int, n_max: int, steps: int, **net) -> None:
        super().__init__()
        self.net = GraphTransformer(kx, ke, n_max, **net)
        alpha, abar = diffusion.cosine_schedule(steps)
        self.register_buffer("alpha", alpha)
        self.register_buffer("abar", abar)
        self.register_buffer("m_x", torch.full((kx,), 1.0 / kx))
        self.register_buffer("m_e", torch.full((ke,), 1.0 / ke))
        self.register_buffer("n_dist", torch.full((n_max + 1,), 1.0 / (n_max + 1)))

    @property
    def steps(self) -> int:
        return self.alpha.numel() - 1

    def forward(self, X, E, t, node_mask):
        return self.net(X, E, t, node_mask)
