"""Seeded procedural scenes: primitives as surface point clouds with object ids, posed
cameras on a ring, ground-truth visible-object masks rendered by the splatting renderer,
and noisy, unordered 2D teacher masks standing in for a 2D foundation model (SAM).

Numpy only, except the renderer (torch) that draws the masks."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SHAPES = ("sphere", "box", "cylinder")


@dataclass(frozen=True)
class SceneParams:
    n_points: int = 256
    min_objects: int = 3
    max_objects: int = 4
    spread: float = 0.75  # object centres in a square of this half-width
    min_size: float = 0.25
    max_size: float = 0.42
    n_views: int = 8
    image_size: int = 24
    focal: float = 1.2  # fx = fy = focal * image_size
    cam_distance: float = 3.2
    cam_height: tuple[float, float] = (0.9, 1.5)
    gaussian_scale: float = 0.8  # sigma = gaussian_scale * mean point spacing
    opacity: float = 0.9
    #: an object with no free place after 200 draws: placed anyway, intersecting another
    #: (True, the results on file) or left out of the scene (False)
    allow_overlap: bool = True
    #: the least clearance between two objects' footprint circles
    gap: float = 0.05


# ---------------------------------------------------------------- geometry


def _sample_sphere(rng, n, centre, r):
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return centre + r * d


def _sample_box(rng, n, centre, half):
    a, b, c = half
    areas = np.array([b * c, b * c, a * c, a * c, a * b, a * b])
    face = rng.choice(6, size=n, p=areas / areas.sum())
    p = rng.uniform(-1, 1, size=(n, 3))
    axis, sign = face // 2, np.where(face % 2 == 0, 1.0, -1.0)
    p[np.arange(n), axis] = sign
    return centre + p * np.asarray(half)


def _sample_cylinder(rng, n, centre, r, h):
    side, cap = 2 * np.pi * r * 2 * h, np.pi * r * r
    kind = rng.choice(3, size=n, p=np.array([side, cap, cap]) / (side + 2 * cap))
    phi = rng.uniform(0, 2 * np.pi, n)
    rad = np.where(kind == 0, r, r * np.sqrt(rng.uniform(0, 1, n)))
    z = np.where(kind == 0, rng.uniform(-h, h, n), np.where(kind == 1, h, -h))
    return centre + np.stack([rad * np.cos(phi), rad * np.sin(phi), z], 1)


def _area(shape, dims):
    if shape == "sphere":
        return 4 * np.pi * dims[0] ** 2
    if shape == "box":
        a, b, c = dims
        return 8 * (a * b + b * c + a * c)
    r, h = dims
    return 2 * np.pi * r * 2 * h + 2 * np.pi * r * r


def _allocate(total: int, weights: np.ndarray, minimum: int = 8) -> np.ndarray:
    """Integer counts summing to ``total``, proportional to ``weights`` (largest
    remainder), each at least ``minimum``."""
    spare = total - minimum * len(weights)
    raw = spare * weights / weights.sum()
    counts = np.floor(raw).astype(int)
    counts[np.argsort(counts - raw)[: spare - counts.sum()]] += 1
    return counts + minimum


def make_scene(rng: np.random.Generator, p: SceneParams) -> dict[str, np.ndarray]:
    """One scene: ``points`` (N, 3), ``ids`` (N,) object index, ``n_objects``,
    ``sigma`` (the Gaussians' world-space scale) and ``shapes``, the analytic surface
    of each object that its points were sampled from (``raycast``'s shape tuples)."""
    n_obj = int(rng.integers(p.min_objects, p.max_objects + 1))
    placed: list[tuple[np.ndarray, float]] = []
    objects = []
    for _ in range(n_obj):
        shape = SHAPES[int(rng.integers(len(SHAPES)))]
        size = rng.uniform(p.min_size, p.max_size)
        if shape == "sphere":
            dims, bound, height = (size,), size, size
        elif shape == "box":
            dims = tuple(size * rng.uniform(0.6, 1.0, 3))
            bound, height = float(np.hypot(dims[0], dims[1])), dims[2]
        else:
            dims = (size * rng.uniform(0.6, 0.9), size * rng.uniform(0.7, 1.3))
            bound, height = dims[0], dims[1]
        for _attempt in range(200):  # rejection: objects do not intersect
            xy = rng.uniform(-1, 1, 2) * p.spread
            if all(np.linalg.norm(xy - c) > bound + b + p.gap for c, b in placed):
                break
        else:  # no free place found: the last draw intersects another object
            if not p.allow_overlap:
                continue  # left out of the scene instead
        placed.append((xy, bound))
        objects.append((shape, dims, np.array([xy[0], xy[1], height])))
    n_obj = len(objects)
    areas = np.array([_area(s, d) for s, d, _ in objects])
    counts = _allocate(p.n_points, areas)
    pts, ids = [], []
    for i, ((shape, dims, centre), n) in enumerate(zip(objects, counts, strict=True)):
        if shape == "sphere":
            pts.append(_sample_sphere(rng, n, centre, dims[0]))
        elif shape == "box":
            pts.append(_sample_box(rng, n, centre, dims))
        else:
            pts.append(_sample_cylinder(rng, n, centre, *dims))
        ids.append(np.full(n, i))
    points = np.concatenate(pts)
    sigma = p.gaussian_scale * np.sqrt(areas.sum() / p.n_points)
    return {
        "points": points.astype(np.float32),
        "ids": np.concatenate(ids).astype(np.int64),
        "n_objects": n_obj,
        "sigma": np.float32(sigma),
        "shapes": [
            (shape, centre, dims) if shape == "box" else (shape, centre, *dims)
            for shape, dims, centre in objects
        ],
    }


def make_cameras(rng: np.random.Generator, p: SceneParams) -> tuple[np.ndarray, np.ndarray]:
    """``n_views`` cameras evenly on a ring (random phase and heights), looking at the
    scene centre: R (V, 3, 3), t (V, 3)."""
    from reprolab.methods.lift_gs.render import look_at

    phase = rng.uniform(0, 2 * np.pi)
    Rs, ts = [], []
    for k in range(p.n_views):
        az = phase + 2 * np.pi * k / p.n_views
        h = rng.uniform(*p.cam_height)
        eye = [p.cam_distance * np.cos(az), p.cam_distance * np.sin(az), h]
        R, t = look_at(eye, [0.0, 0.0, 0.25])
        Rs.append(R)
        ts.append(t)
    return np.stack(Rs).astype(np.float32), np.stack(ts).astype(np.float32)


def intrinsics(p: SceneParams) -> tuple[float, float, float, float, int, int]:
    f, s = p.focal * p.image_size, p.image_size
    return (f, f, s / 2, s / 2, s, s)


# ---------------------------------------------------------------- masks


def object_masks(points, ids, n_obj, sigma, R, t, p: SceneParams, only=None) -> np.ndarray:
    """Visible-object label image per view, (V, H, W) int (-1: background): the argmax
    of the rendered one-hot object ids where the rendered coverage exceeds 1/2.
    ``only``: render that object alone (its unoccluded footprint)."""
    import torch

    from reprolab.methods.lift_gs.render import render_views

    keep = np.ones(len(ids), bool) if only is None else ids == only
    means = torch.from_numpy(points[keep]).float()
    onehot = torch.nn.functional.one_hot(torch.from_numpy(ids[keep]), n_obj).float()
    n = int(keep.sum())
    with torch.no_grad():
        img = render_views(
            means,
            torch.full((n,), float(sigma)),
            torch.full((n,), p.opacity),
            onehot,
            torch.from_numpy(R),
            torch.from_numpy(t),
            intrinsics(p),
        ).numpy()
    return np.where(img.sum(-1) > 0.5, img.argmax(-1), -1)


def _shift_or(m: np.ndarray) -> np.ndarray:
    out = m.copy()
    out[1:] |= m[:-1]
    out[:-1] |= m[1:]
    out[:, 1:] |= m[:, :-1]
    out[:, :-1] |= m[:, 1:]
    return out


def teacher_masks(
    labels: np.ndarray, n_obj: int, rng: np.random.Generator, drop: float, edge_noise: float
) -> tuple[np.ndarray, np.ndarray]:
    """Noisy, unordered per-view masks from label images (V, H, W): each visible object's
    mask is dropped with probability ``drop`` (a missed object), every pixel on its
    boundary is redrawn with probability ``edge_noise`` (ragged edges), and the masks of
    a view are shuffled (no ids shared across views). Returns masks (V, M, H, W) uint8
    with M = n_obj slots and the number of masks per view (V,)."""
    V, H, W = labels.shape
    out = np.zeros((V, n_obj, H, W), np.uint8)
    counts = np.zeros(V, np.int64)
    for v in range(V):
        masks = []
        for o in rng.permutation(n_obj):
            m = labels[v] == o
            if m.sum() == 0 or rng.random() < drop:
                continue
            grown = _shift_or(m)
            shrunk = ~_shift_or(~m)
            edge = grown & ~shrunk
            redraw = edge & (rng.random((H, W)) < edge_noise)
            m = np.where(redraw, rng.random((H, W)) < 0.5, m)
            if m.sum() >= 2:
                masks.append(m)
        for j, m in enumerate(masks):
            out[v, j] = m
        counts[v] = len(masks)
    return out, counts


def occlusion(points, ids, n_obj, sigma, R, t, p: SceneParams, labels=None) -> np.ndarray:
    """Per object, the fraction of its unoccluded footprint (summed over views) that
    other objects hide: 1 - visible pixels / pixels when rendered alone."""
    if labels is None:
        labels = object_masks(points, ids, n_obj, sigma, R, t, p)
    out = np.zeros(n_obj)
    for o in range(n_obj):
        alone = (object_masks(points, ids, n_obj, sigma, R, t, p, only=o) == o).sum()
        out[o] = 1.0 - (labels == o).sum() / max(alone, 1)
    return np.clip(out, 0.0, 1.0)


def build_split(
    n_scenes: int,
    p: SceneParams,
    seed: int,
    drop: float,
    edge_noise: float,
    with_occlusion: bool,
    make=make_scene,
    teacher: str = "splat",
) -> dict[str, np.ndarray]:
    """``n_scenes`` scenes with cameras, ground-truth labels and teacher masks, stacked.
    ``make(rng, p)`` builds one scene's points (procedural primitives by default;
    ``meshes.make_mesh_scene`` for mesh scenes).

    ``teacher``: where the visible-object label images (and so the teacher masks and the
    occlusion of each object) come from. ``splat``: the splatting renderer over the
    scene's Gaussians, the same renderer and Gaussians the render arm trains through
    (the results on file). ``raycast``: exact ray casting of the analytic surfaces the
    points were sampled from (``raycast.py``), independent of the points, the Gaussians
    and the renderer; the views' depth maps of the surfaces come with it (``depth``,
    what an RGB-D frame gives, for the depth-aware unprojection)."""
    rng = np.random.default_rng(seed)
    M, S, V = p.max_objects, p.image_size, p.n_views
    out = {
        "points": np.zeros((n_scenes, p.n_points, 3), np.float32),
        "ids": np.zeros((n_scenes, p.n_points), np.int64),
        "n_objects": np.zeros(n_scenes, np.int64),
        "sigma": np.zeros(n_scenes, np.float32),
        "R": np.zeros((n_scenes, V, 3, 3), np.float32),
        "t": np.zeros((n_scenes, V, 3), np.float32),
        "masks": np.zeros((n_scenes, V, M, S, S), np.uint8),
        "mask_count": np.zeros((n_scenes, V), np.int64),
        "labels": np.zeros((n_scenes, V, S, S), np.int8),
    }
    if with_occlusion:
        out["occlusion"] = np.full((n_scenes, M), np.nan, np.float32)
    if teacher == "raycast":  # the views' depth maps of the surfaces (inf: no surface)
        out["depth"] = np.full((n_scenes, V, S, S), np.inf, np.float32)
    for i in range(n_scenes):
        sc = make(rng, p)
        R, t = make_cameras(rng, p)
        n_obj = int(sc["n_objects"])
        if teacher == "raycast":
            from reprolab.methods.lift_gs.raycast import depth_maps, labels_and_occlusion

            depth = depth_maps(sc["shapes"], R, t, intrinsics(p))
            labels, occ = labels_and_occlusion(depth)
            out["depth"][i] = depth.min(-1)
        elif teacher == "splat":
            labels = object_masks(sc["points"], sc["ids"], n_obj, sc["sigma"], R, t, p)
        else:
            raise ValueError(f"unknown teacher {teacher!r}; one of splat, raycast")
        masks, counts = teacher_masks(labels, n_obj, rng, drop, edge_noise)
        out["points"][i], out["ids"][i] = sc["points"], sc["ids"]
        out["n_objects"][i], out["sigma"][i] = n_obj, sc["sigma"]
        out["R"][i], out["t"][i], out["labels"][i] = R, t, labels
        out["masks"][i, :, :n_obj], out["mask_count"][i] = masks, counts
        if with_occlusion and teacher == "raycast":
            out["occlusion"][i, :n_obj] = occ
        elif with_occlusion:
            out["occlusion"][i, :n_obj] = occlusion(
                sc["points"], sc["ids"], n_obj, sc["sigma"], R, t, p, labels
            )
    return out
