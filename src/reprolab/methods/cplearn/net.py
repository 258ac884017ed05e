"""The networks: a small CNN encoder shared by every variant, CPLearn's hyperdimensional
projector (with its fixed +-1 codebook as a buffer) or the Barlow Twins MLP projector,
and the two-view augmentation done in torch on image tensors."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from reprolab.methods.cplearn.losses import codebook


def _side(in_dim: int) -> int:
    side = math.isqrt(in_dim)
    if side * side != in_dim:
        raise ValueError(f"images must be square; got {in_dim} pixels per row")
    return side


def encoder(in_dim: int, width: int, feat_dim: int) -> nn.Sequential:
    """Three stride-2 3x3 conv blocks (width, 2 width, 4 width channels), then a linear
    layer to the feat_dim representation h (the features the linear probe reads)."""
    side = _side(in_dim)
    layers: list[nn.Module] = []
    cin = 1
    for cout in (width, 2 * width, 4 * width):
        layers += [
            nn.Conv2d(cin, cout, 3, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(inplace=True),
        ]
        cin, side = cout, (side + 1) // 2
    layers += [
        nn.Flatten(),
        nn.Linear(cin * side * side, feat_dim, bias=False),
        nn.BatchNorm1d(feat_dim),
        nn.ReLU(inplace=True),
    ]
    return nn.Sequential(*layers)


class SSLNet(nn.Module):
    """Encoder + projector. ``forward`` takes flattened images in [0, 1] and returns
    (h, e, z): backbone features, embedding, and for CPLearn the code scores e @ W
    (None for Barlow Twins). The temperature depends on the batch size, so it is applied
    by the loss, not here (argmax assignments do not depend on it)."""

    def __init__(
        self,
        in_dim: int,
        width: int,
        feat_dim: int,
        proj_dim: int,
        n_codes: int,
        hyperdimensional: bool,
        codebook_seed: int,
    ) -> None:
        super().__init__()
        self.side = _side(in_dim)
        self.encoder = encoder(in_dim, width, feat_dim)
        self.hyperdimensional = hyperdimensional
        if hyperdimensional:  # e = tanh(BN(Linear(h))), z = e @ W
            self.projector = nn.Sequential(
                nn.Linear(feat_dim, proj_dim), nn.BatchNorm1d(proj_dim), nn.Tanh()
            )
            self.register_buffer("codes", codebook(proj_dim, n_codes, codebook_seed))
        else:  # Barlow Twins: Linear-BN-ReLU, Linear-BN-ReLU, Linear (Zbontar et al. 2021)
            self.projector = nn.Sequential(
                nn.Linear(feat_dim, proj_dim, bias=False),
                nn.BatchNorm1d(proj_dim),
                nn.ReLU(inplace=True),
                nn.Linear(proj_dim, proj_dim, bias=False),
                nn.BatchNorm1d(proj_dim),
                nn.ReLU(inplace=True),
                nn.Linear(proj_dim, proj_dim, bias=False),
            )

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(x.reshape(-1, 1, self.side, self.side))

    def forward(self, x: torch.Tensor):
        h = self.features(x)
        e = self.projector(h)
        z = e @ self.codes if self.hyperdimensional else None
        return h, e, z


def augment(
    x: torch.Tensor,
    gen: torch.Generator,
    shift: float,
    rotate_deg: float,
    scale: float,
    erase: float,
    noise: float,
) -> torch.Tensor:
    """One random view of each flattened image in ``x`` (values in [0, 1]): a random
    affine map (translation up to ``shift`` of the side, rotation up to ``rotate_deg``,
    zoom within 1 +- ``scale``), with probability ``erase`` a blanked square of a quarter
    to a third of the side (cutout), then Gaussian pixel noise of std ``noise``."""
    n, d = x.shape
    side = _side(d)
    img = x.reshape(n, 1, side, side)

    def uniform(low: float, high: float) -> torch.Tensor:
        return low + (high - low) * torch.rand(n, generator=gen)

    angle = torch.deg2rad(uniform(-rotate_deg, rotate_deg))
    zoom = uniform(1.0 - scale, 1.0 + scale)
    cos, sin = torch.cos(angle) / zoom, torch.sin(angle) / zoom
    tx, ty = uniform(-2 * shift, 2 * shift), uniform(-2 * shift, 2 * shift)  # grid is [-1, 1]
    theta = torch.stack([torch.stack([cos, -sin, tx], 1), torch.stack([sin, cos, ty], 1)], 1)
    grid = F.affine_grid(theta, list(img.shape), align_corners=False)
    out = F.grid_sample(img, grid, mode="bilinear", padding_mode="zeros", align_corners=False)

    if erase > 0:
        size = uniform(0.25, 1.0 / 3.0) * side
        cy, cx = uniform(0, side), uniform(0, side)
        coords = torch.arange(side, dtype=x.dtype) + 0.5
        inside_y = (coords[None, :] - cy[:, None]).abs() <= size[:, None] / 2
        inside_x = (coords[None, :] - cx[:, None]).abs() <= size[:, None] / 2
        box = inside_y[:, :, None] & inside_x[:, None, :]
        box &= (torch.rand(n, generator=gen) < erase)[:, None, None]
        out = out.masked_fill(box[:, None], 0.0)
    if noise > 0:
        out = out + noise * torch.randn(out.shape, generator=gen)
    return out.clamp(0.0, 1.0).reshape(n, d)
