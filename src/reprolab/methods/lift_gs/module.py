"""The Lightning module: one network, one of three training signals."""

from __future__ import annotations

import numpy as np
import torch

from reprolab.core.training import HistoryModule
from reprolab.methods.lift_gs.net import matched_mask_loss
from reprolab.methods.lift_gs.render import render_views

#: ``unproj`` has the depth test when ``unproj_depth_tolerance`` is set; ``unproj_naive``
#: never has it
SIGNALS = ("render", "unproj", "unproj_naive", "sup3d")


def unprojected_targets(
    points: torch.Tensor,
    R: torch.Tensor,
    t: torch.Tensor,
    masks: torch.Tensor,
    intrinsics: tuple,
    depth_tolerance: float | None = None,
    depth: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Unprojection of one view's 2D masks (M, H, W) to points (N, 3): a point in front
    of the camera and inside the image takes the mask value of the pixel it projects to.
    Naive (``depth_tolerance`` None): whatever lies in front of it. Depth-aware: only a
    point within ``depth_tolerance`` (relative) of the depth seen at its pixel is
    labelled, the rest are left out. The depth seen is the view's depth map ``depth``
    (H, W; inf where no surface), as an RGB-D frame gives it (the lifting of 2D masks the
    paper's kind of baselines do); without one, the nearest point projecting to the
    pixel (a z-buffer over the points). Returns (labelled point mask (N,), targets
    (M, n_labelled))."""
    fx, fy, cx, cy, width, height = intrinsics
    xc = points @ R.T + t
    z = xc[:, 2]
    zs = z.clamp_min(1e-3)
    u = torch.floor(fx * xc[:, 0] / zs + cx).long()
    v = torch.floor(fy * xc[:, 1] / zs + cy).long()
    inside = (z > 1e-3) & (u >= 0) & (u < width) & (v >= 0) & (v < height)
    if depth_tolerance is not None:
        pixel = (v * int(width) + u).clamp(0, int(width) * int(height) - 1)
        if depth is None:
            nearest = torch.full((int(width) * int(height),), float("inf"), dtype=z.dtype)
            nearest = nearest.scatter_reduce(0, pixel[inside], z[inside], reduce="amin")
            inside = inside & (z <= nearest[pixel] * (1.0 + depth_tolerance))
        else:
            seen = depth.reshape(-1).to(z.dtype)[pixel]
            near = (z - seen).abs() <= depth_tolerance * seen
            inside = inside & torch.isfinite(seen) & near
    pix = (v * int(width) + u)[inside]
    return inside, masks.reshape(masks.shape[0], int(width) * int(height))[:, pix].float()


class LiftModule(HistoryModule):
    """``net`` trained with one signal on the training scenes ``scenes`` (indices into the
    task's training arrays); a batch holds positions in ``scenes``."""

    def __init__(self, net, signal: str, data: dict, scenes: np.ndarray, cfg, seed: int) -> None:
        super().__init__()
        if signal not in SIGNALS:
            raise ValueError(f"unknown training signal {signal!r}; one of {SIGNALS}")
        self.net, self.signal, self.seed = net, signal, seed
        self.lr, self.empty_weight = cfg.lr, cfg.empty_weight
        self.depth_tolerance = None if signal == "unproj_naive" else cfg.unproj_depth_tolerance
        self.views_per_step = cfg.views_per_step
        self.intrinsics = tuple(float(x) for x in np.asarray(data["intrinsics"]))
        self.intrinsics = (*self.intrinsics[:4], int(self.intrinsics[4]), int(self.intrinsics[5]))

        def part(name, dtype=None):
            a = torch.from_numpy(np.ascontiguousarray(np.asarray(data[f"train_{name}"])[scenes]))
            return a if dtype is None else a.to(dtype)

        # plain attributes (not buffers): the data stays out of the checkpoint
        self.points, self.ids = part("points", torch.float32), part("ids")
        self.n_objects, self.sigma = part("n_objects"), part("sigma", torch.float32)
        self.R, self.t = part("R", torch.float32), part("t", torch.float32)
        self.masks, self.mask_count = part("masks"), part("mask_count")
        # the views' depth maps (ray-cast surfaces, as an RGB-D frame gives them) for the
        # depth test of unprojection; None: the z-buffer over the points
        sensor = cfg.unproj_depth == "sensor" and self.depth_tolerance is not None
        self.depth = part("depth", torch.float32) if sensor else None
        self.opacity = float(np.asarray(data["opacity"])[0])
        self._loss_sum, self._batches = 0.0, 0

    def forward(self, points: torch.Tensor) -> torch.Tensor:
        return self.net(points)

    def _scene_loss(self, b: int, probs: torch.Tensor) -> torch.Tensor:
        """Loss of one scene: probs (N, K) of its points."""
        w = self.empty_weight
        if self.signal == "sup3d":
            target = torch.nn.functional.one_hot(self.ids[b], int(self.n_objects[b]))
            return matched_mask_loss(probs.T, target.T.float(), w)
        # both 2D signals see the same views: a few per step, drawn from (seed, step, scene)
        gen = torch.Generator().manual_seed(
            (self.seed * 1_000_003 + self.global_step) * 1009 + int(b)
        )
        views = torch.randperm(self.R.shape[1], generator=gen)[: self.views_per_step]
        if self.signal in ("unproj", "unproj_naive"):
            losses = []
            for v in views.tolist():
                m = self.masks[b, v, : self.mask_count[b, v]]
                inside, target = unprojected_targets(
                    self.points[b], self.R[b, v], self.t[b, v], m, self.intrinsics,
                    self.depth_tolerance, None if self.depth is None else self.depth[b, v],
                )  # fmt: skip
                losses.append(matched_mask_loss(probs[inside].T, target, w))
            return torch.stack(losses).mean()
        n = self.points.shape[1]
        img = render_views(
            self.points[b],
            self.sigma[b].expand(n),
            torch.full((n,), self.opacity),
            probs,
            self.R[b, views],
            self.t[b, views],
            self.intrinsics,
        )  # (v, H, W, K)
        losses = []
        for j, v in enumerate(views.tolist()):
            m = self.masks[b, v, : self.mask_count[b, v]].flatten(1)
            pred = img[j].reshape(-1, img.shape[-1]).T
            losses.append(matched_mask_loss(pred, m.float(), w))
        return torch.stack(losses).mean()

    def training_step(self, batch, batch_idx):
        (idx,) = batch
        probs = torch.sigmoid(self.net(self.points[idx]))
        loss = torch.stack([self._scene_loss(int(b), probs[i]) for i, b in enumerate(idx)]).mean()
        self._loss_sum += float(loss.detach())
        self._batches += 1
        return loss

    def on_train_epoch_end(self) -> None:
        self.history.append(
            {"epoch": self.current_epoch, "train_loss": self._loss_sum / max(self._batches, 1)}
        )
        self._loss_sum, self._batches = 0.0, 0

    def configure_optimizers(self):
        return torch.optim.Adam(self.net.parameters(), lr=self.lr)
