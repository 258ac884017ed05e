"""Exact ray casting of the scenes' surfaces, independent of the Gaussian splatting code.

The teacher masks (the stand-in for SAM) should come from the scene, not from the render
arm's own renderer and Gaussians. Here every pixel centre of every view shoots a ray
into the analytic surfaces a scene was sampled from (spheres, axis-aligned boxes,
vertical cylinders; or the triangles of a mesh object), and the nearest hit names the
pixel's object. Numpy only; nothing here reads the points, sigma, opacity or
``render.py``. The camera model is the renderer's (pinhole, OpenCV axes, pixel centres
at +0.5), so a point that projects to pixel (u, v) lies on or next to that pixel's ray.

Shapes are tuples: ``("sphere", centre (3,), radius)``, ``("box", centre (3,), half
extents (3,))``, ``("cylinder", centre (3,), radius, half height)`` (axis along z), and
``("mesh", vertices (V, 3), faces (F, 3))``.
"""

from __future__ import annotations

import numpy as np

#: a hit must lie this far in front of the camera
NEAR = 1e-6


def camera_rays(R: np.ndarray, t: np.ndarray, intrinsics: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Rays through the pixel centres of one camera: origin (3,) and directions
    (H * W, 3), row-major over (v, u). A direction has camera-space z = 1, so the ray
    parameter of a hit is its camera-space depth."""
    fx, fy, cx, cy, width, height = intrinsics
    R, t = np.asarray(R, np.float64), np.asarray(t, np.float64)
    ys, xs = np.meshgrid(np.arange(int(height)), np.arange(int(width)), indexing="ij")
    dc = np.stack([(xs.ravel() + 0.5 - cx) / fx, (ys.ravel() + 0.5 - cy) / fy, np.ones(xs.size)], 1)
    return -R.T @ t, dc @ R  # world direction = R^T d_c, for every row


def _sphere(o, d, centre, r):
    oc = o - np.asarray(centre, np.float64)
    a = (d * d).sum(1)
    b = 2 * d @ oc
    c = oc @ oc - r * r
    disc = b * b - 4 * a * c
    ok = disc >= 0
    sq = np.sqrt(np.where(ok, disc, 0.0))
    s0, s1 = (-b - sq) / (2 * a), (-b + sq) / (2 * a)
    s = np.where(s0 > NEAR, s0, s1)
    return np.where(ok & (s > NEAR), s, np.inf)


def _box(o, d, centre, half):
    lo = np.asarray(centre, np.float64) - np.asarray(half, np.float64)
    hi = np.asarray(centre, np.float64) + np.asarray(half, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / d
        t1, t2 = (lo - o) * inv, (hi - o) * inv
    # a ray parallel to a slab: inside it (both nan/inf of opposite signs) or never
    t1 = np.where(np.isnan(t1), -np.inf, t1)
    t2 = np.where(np.isnan(t2), np.inf, t2)
    near = np.minimum(t1, t2).max(1)
    far = np.maximum(t1, t2).min(1)
    s = np.where(near > NEAR, near, far)
    return np.where((near <= far) & (s > NEAR), s, np.inf)


def _cylinder(o, d, centre, r, h):
    cx, cy, cz = np.asarray(centre, np.float64)
    ox, oy = o[0] - cx, o[1] - cy
    a = d[:, 0] ** 2 + d[:, 1] ** 2
    b = 2 * (ox * d[:, 0] + oy * d[:, 1])
    c = ox * ox + oy * oy - r * r
    disc = b * b - 4 * a * c
    ok = (disc >= 0) & (a > 0)
    sq = np.sqrt(np.where(ok, disc, 0.0))
    a_safe = np.where(a > 0, a, 1.0)
    best = np.full(len(d), np.inf)
    for s in ((-b - sq) / (2 * a_safe), (-b + sq) / (2 * a_safe)):  # the side wall
        z = o[2] + s * d[:, 2]
        hit = ok & (s > NEAR) & (np.abs(z - cz) <= h)
        best = np.where(hit & (s < best), s, best)
    with np.errstate(divide="ignore", invalid="ignore"):
        for zc in (cz - h, cz + h):  # the two caps
            s = (zc - o[2]) / d[:, 2]
            x, y = ox + s * d[:, 0], oy + s * d[:, 1]
            hit = (s > NEAR) & (x * x + y * y <= r * r)
            best = np.where(hit & (s < best), s, best)
    return best


def _triangles(o, d, vertices, faces, chunk: int = 256):
    """Möller-Trumbore against every triangle; rays outside the mesh's bounding sphere
    are skipped."""
    vertices = np.asarray(vertices, np.float64)
    centre = (vertices.min(0) + vertices.max(0)) / 2
    radius = float(np.linalg.norm(vertices - centre, axis=1).max())
    best = np.full(len(d), np.inf)
    cand = np.flatnonzero(np.isfinite(_sphere(o, d, centre, radius * (1 + 1e-9))))
    if len(cand) == 0:
        return best
    dd = d[cand]
    a, b, c = (vertices[faces[:, i]] for i in range(3))
    e1, e2 = b - a, c - a
    out = np.full(len(cand), np.inf)
    for lo in range(0, len(faces), chunk):
        sl = slice(lo, lo + chunk)
        p = np.cross(dd[:, None, :], e2[None, sl])  # (R, T, 3)
        det = (p * e1[None, sl]).sum(-1)
        ok = np.abs(det) > 1e-12
        inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
        tv = o[None, :] - a[sl]  # (T, 3)
        u = (p * tv[None]).sum(-1) * inv
        q = np.cross(tv, e1[sl])  # (T, 3)
        v = (dd @ q.T) * inv
        s = (e2[sl] * q).sum(-1)[None, :] * inv
        hit = ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (s > NEAR)
        out = np.minimum(out, np.where(hit, s, np.inf).min(1))
    best[cand] = out
    return best


def hit_depth(shape: tuple, o: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Ray parameter of the nearest hit of each ray (inf: none)."""
    kind = shape[0]
    if kind == "sphere":
        return _sphere(o, d, shape[1], float(shape[2]))
    if kind == "box":
        return _box(o, d, shape[1], shape[2])
    if kind == "cylinder":
        return _cylinder(o, d, shape[1], float(shape[2]), float(shape[3]))
    if kind == "mesh":
        return _triangles(o, d, shape[1], np.asarray(shape[2], np.int64))
    raise ValueError(f"unknown shape {kind!r}")


def depth_maps(shapes, R: np.ndarray, t: np.ndarray, intrinsics: tuple) -> np.ndarray:
    """Per view and object, the depth of the object's nearest surface at each pixel
    centre when it is alone in the scene: (V, H, W, n_objects), inf where it misses."""
    fx, fy, cx, cy, width, height = intrinsics
    out = np.full((len(R), int(height), int(width), len(shapes)), np.inf)
    for v in range(len(R)):
        o, d = camera_rays(R[v], t[v], intrinsics)
        for k, shape in enumerate(shapes):
            out[v, :, :, k] = hit_depth(shape, o, d).reshape(int(height), int(width))
    return out


def labels_and_occlusion(depth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """From per-object depth maps (V, H, W, n): the visible-object label image (V, H, W)
    (the nearest object at each pixel, -1: background) and per object the fraction of its
    footprint (pixels it covers alone, summed over views) that nearer objects hide."""
    hit = np.isfinite(depth)
    labels = np.where(hit.any(-1), depth.argmin(-1), -1)
    n = depth.shape[-1]
    alone = hit.reshape(-1, n).sum(0)
    visible = np.array([(labels == o).sum() for o in range(n)])
    occ = 1.0 - visible / np.maximum(alone, 1)
    return labels.astype(np.int64), np.clip(occ, 0.0, 1.0)
