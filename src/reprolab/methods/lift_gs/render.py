"""Differentiable Gaussian splatting in pure PyTorch (CPU), with a brute-force reference.

Isotropic Gaussians (mean, world-space sigma, opacity, C-channel features), pinhole cameras
(intrinsics fx, fy, cx, cy; world-to-camera rotation R and translation t), depth ordering and
front-to-back alpha compositing.  ``Renderer`` is the interface a CUDA backend (gsplat) could
implement; only the torch backend exists here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


@dataclass
class Camera:
    fx: float
    fy: float
    cx: float
    cy: float
    R: torch.Tensor  # (3, 3) world -> camera
    t: torch.Tensor  # (3,)
    width: int
    height: int


def project(means: torch.Tensor, cam: Camera) -> tuple[torch.Tensor, torch.Tensor]:
    """Pixel coordinates (N, 2) and camera-space depth (N,) of world points (N, 3)."""
    xc = means @ cam.R.T.to(means) + cam.t.to(means)
    z = xc[:, 2]
    u = cam.fx * xc[:, 0] / z + cam.cx
    v = cam.fy * xc[:, 1] / z + cam.cy
    return torch.stack([u, v], dim=1), z


class Renderer:
    """Backend interface: render(means, sigmas, opacities, features, cam) -> (H, W, C)."""

    def render(self, means, sigmas, opacities, features, cam: Camera) -> torch.Tensor:
        raise NotImplementedError


class TorchRenderer(Renderer):
    """Vectorised splatting: per-pixel alphas of all Gaussians, depth-sorted, composited."""

    def __init__(self, alpha_max: float = 0.99, near: float = 1e-3):
        self.alpha_max = alpha_max
        self.near = near

    def render(self, means, sigmas, opacities, features, cam: Camera) -> torch.Tensor:
        uv, z = project(means, cam)
        s2d = cam.fx * sigmas / z.clamp_min(self.near)  # isotropic screen-space sigma
        order = torch.argsort(z.detach())
        keep = order[z.detach()[order] > self.near]
        uv, s2d, op, f = uv[keep], s2d[keep], opacities[keep], features[keep]
        ys, xs = torch.meshgrid(
            torch.arange(cam.height, dtype=means.dtype),
            torch.arange(cam.width, dtype=means.dtype),
            indexing="ij",
        )
        pix = torch.stack([xs.reshape(-1) + 0.5, ys.reshape(-1) + 0.5], dim=1)  # (P, 2)
        d2 = ((pix[:, None, :] - uv[None, :, :]) ** 2).sum(-1)  # (P, N)
        alpha = (op[None, :] * torch.exp(-0.5 * d2 / s2d[None, :] ** 2)).clamp(max=self.alpha_max)
        trans = torch.cumprod(torch.cat([torch.ones_like(alpha[:, :1]), 1 - alpha[:, :-1]], 1), 1)
        out = (trans * alpha) @ f  # (P, C)
        return out.reshape(cam.height, cam.width, -1)


def render_bruteforce(means, sigmas, opacities, features, cam: Camera, alpha_max=0.99, near=1e-3):
    """Per-pixel reference: loop over pixels and depth-sorted Gaussians (numpy, float64)."""
    m = means.detach().double().numpy()
    R, t = cam.R.double().numpy(), cam.t.double().numpy()
    sig, op, f = (x.detach().double().numpy() for x in (sigmas, opacities, features))
    out = np.zeros((cam.height, cam.width, f.shape[1]))
    cams = [(R @ p + t) for p in m]
    order = sorted(range(len(m)), key=lambda i: cams[i][2])
    for y in range(cam.height):
        for x in range(cam.width):
            T = 1.0
            for i in order:
                cx_, cy_, cz = cams[i]
                if cz <= near:
                    continue
                u, v = cam.fx * cx_ / cz + cam.cx, cam.fy * cy_ / cz + cam.cy
                s = cam.fx * sig[i] / cz
                a = min(
                    alpha_max,
                    op[i] * np.exp(-0.5 * ((x + 0.5 - u) ** 2 + (y + 0.5 - v) ** 2) / s**2),
                )
                out[y, x] += T * a * f[i]
                T *= 1 - a
    return out


def hungarian(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from scipy.optimize import linear_sum_assignment

    return linear_sum_assignment(cost)


def iou_3d(pred: np.ndarray, target: np.ndarray) -> float:
    """IoU of two boolean point masks (1.0 when both are empty)."""
    pred, target = np.asarray(pred, bool), np.asarray(target, bool)
    union = (pred | target).sum()
    return 1.0 if union == 0 else float((pred & target).sum() / union)


def look_at(eye, target, up=(0.0, 0.0, 1.0)) -> tuple[np.ndarray, np.ndarray]:
    """World-to-camera (R, t) of a camera at ``eye`` looking at ``target`` (OpenCV axes:
    x right, y down, z forward; ``up`` is the world's up direction)."""
    eye, target, up = (np.asarray(v, dtype=np.float64) for v in (eye, target, up))
    f = target - eye
    f /= np.linalg.norm(f)
    r = np.cross(f, up)
    r /= np.linalg.norm(r)
    d = np.cross(f, r)
    R = np.stack([r, d, f])
    return R, -R @ eye


def render_views(
    means: torch.Tensor,
    sigmas: torch.Tensor,
    opacities: torch.Tensor,
    features: torch.Tensor,
    R: torch.Tensor,
    t: torch.Tensor,
    intrinsics: tuple[float, float, float, float, int, int],
    alpha_max: float = 0.99,
    near: float = 1e-3,
) -> torch.Tensor:
    """``TorchRenderer.render`` for V cameras at once (same intrinsics): (V, H, W, C).

    ``R`` (V, 3, 3) and ``t`` (V, 3) are world-to-camera; Gaussians behind ``near`` get
    zero opacity instead of being dropped, which composites to the same image."""
    fx, fy, cx, cy, width, height = intrinsics
    xc = torch.einsum("vij,nj->vni", R.to(means), means) + t.to(means)[:, None, :]
    z = xc[..., 2]
    zs = z.clamp_min(near)
    u = fx * xc[..., 0] / zs + cx
    v = fy * xc[..., 1] / zs + cy
    s2d = fx * sigmas[None, :] / zs  # (V, N)
    op = torch.where(z > near, opacities[None, :].expand_as(z), torch.zeros_like(z))
    order = torch.argsort(z.detach(), dim=1)
    u, v, s2d, op = (torch.gather(a, 1, order) for a in (u, v, s2d, op))
    f = features[order]  # (V, N, C)
    ys, xs = torch.meshgrid(
        torch.arange(height, dtype=means.dtype),
        torch.arange(width, dtype=means.dtype),
        indexing="ij",
    )
    px, py = xs.reshape(-1) + 0.5, ys.reshape(-1) + 0.5  # (P,)
    d2 = (px[None, :, None] - u[:, None, :]) ** 2 + (py[None, :, None] - v[:, None, :]) ** 2
    alpha = (op[:, None, :] * torch.exp(-0.5 * d2 / s2d[:, None, :] ** 2)).clamp(max=alpha_max)
    trans = torch.cumprod(torch.cat([torch.ones_like(alpha[..., :1]), 1 - alpha[..., :-1]], -1), -1)
    out = torch.bmm(trans * alpha, f)  # (V, P, C)
    return out.reshape(len(R), height, width, -1)
