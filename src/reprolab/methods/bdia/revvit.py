"""A RevViT-style reversible stack (Mangalam et al., CVPR 2022), the paper's other
memory-saving baseline.

Two residual streams, both started at the embedding ``h``: block k maps
``(X1, X2)`` to ``Y1 = X1 + F_k(X2)``, ``Y2 = X2 + G_k(Y1)`` with ``F_k`` the attention
half (``attn(ln1 .)``) and ``G_k`` the MLP half (``mlp(ln2 .)``) of the same
``core.transformer.Block``; the features are ``(Y1 + Y2) / 2``. It changes the
architecture (two streams), so it is its own network at inference too. Backward
reconstructs ``X2 = Y2 - G_k(Y1)``, ``X1 = Y1 - F_k(X2)`` in floating point (not bit
exact: the float error is what BDIA's fixed point removes) and keeps only the last
pair of streams for backward.
"""

from __future__ import annotations

import torch


def attn_half(block, x: torch.Tensor) -> torch.Tensor:
    return block.attn(block.ln1(x))


def mlp_half(block, x: torch.Tensor) -> torch.Tensor:
    return block.mlp(block.ln2(x))


def rev_forward(blocks, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x1, x2 = h, h
    for block in blocks:
        x1 = x1 + attn_half(block, x2)
        x2 = x2 + mlp_half(block, x1)
    return x1, x2


class RevStack(torch.autograd.Function):
    @staticmethod
    def forward(ctx, h, blocks, *params):
        with torch.no_grad():
            y1, y2 = rev_forward(blocks, h)
        ctx.blocks = blocks
        ctx.save_for_backward(y1, y2)
        return (y1 + y2) / 2

    @staticmethod
    def backward(ctx, grad_out):
        blocks = ctx.blocks
        y1, y2 = ctx.saved_tensors
        params = [p for b in blocks for p in b.parameters()]
        pgrads = {id(p): torch.zeros_like(p) for p in params}
        d1, d2 = grad_out / 2, grad_out / 2
        for block in reversed(blocks):
            attn_p = [*block.ln1.parameters(), *block.attn.parameters()]
            mlp_p = [*block.ln2.parameters(), *block.mlp.parameters()]
            with torch.enable_grad():
                a = y1.detach().requires_grad_(True)
                g = mlp_half(block, a)
                ga, *gp = torch.autograd.grad(g, [a, *mlp_p], d2)
            for p, q in zip(mlp_p, gp, strict=True):
                pgrads[id(p)] += q
            x2 = y2 - g.detach()
            d1 = d1 + ga
            with torch.enable_grad():
                b = x2.detach().requires_grad_(True)
                f = attn_half(block, b)
                gb, *gp = torch.autograd.grad(f, [b, *attn_p], d1)
            for p, q in zip(attn_p, gp, strict=True):
                pgrads[id(p)] += q
            x1 = y1 - f.detach()
            d2 = d2 + gb
            y1, y2 = x1, x2
        return (d1 + d2, None, *[pgrads[id(p)] for p in params])


def revvit_features(blocks, h: torch.Tensor) -> torch.Tensor:
    """Training forward: activations recomputed by inversion in backward."""
    params = [p for b in blocks for p in b.parameters()]
    return RevStack.apply(h, blocks, *params)


class RevViT(torch.nn.Module):
    """The two-stream network at inference (the trained ``Encoder``'s parameters)."""

    def __init__(self, net) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y1, y2 = rev_forward(self.net.blocks, self.net.embed(x))
        return self.net.readout((y1 + y2) / 2)
