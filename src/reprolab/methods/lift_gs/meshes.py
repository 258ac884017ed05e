"""Scenes built from meshes that ship offline: pyvista's bundled example meshes (airplane,
ant, nut; PLY files) and trimesh primitives (torus, capsule, cone). Each object is a mesh
normalised to a unit bounding sphere, rotated at random, scaled, set on the ground and
sampled uniformly over its surface (area-weighted triangles, uniform barycentric
coordinates); the scene dict is the same as ``scenes.make_scene``'s, so cameras, teacher
masks and occlusion come from ``scenes.build_split`` unchanged.

pyvista is only *located* (``importlib.util.find_spec``), never imported: importing it
needs VTK, and the project reads its mesh files with trimesh instead. Install both with
``pip install --no-deps pyvista==0.49.2`` and ``pip install trimesh==5.2.0`` (pinned in
the lock files).
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path

import numpy as np

from reprolab.methods.lift_gs.scenes import SceneParams, _allocate

PYVISTA = "pyvista==0.49.2"
TRIMESH = "trimesh==5.2.0"
#: pyvista's bundled PLY meshes (pyvista/examples/<name>.ply)
PYVISTA_MESHES = ("airplane", "ant", "nut")
#: trimesh primitives (built, not read)
PRIMITIVES = ("torus", "capsule", "cone")
CATALOGUE = PYVISTA_MESHES + PRIMITIVES
#: a mesh's bounding radius is this multiple of a primitive's size draw (SceneParams
#: min_size..max_size is a sphere's radius; a mesh fills less of its bounding sphere)
MESH_SCALE = 1.3


def _trimesh():
    try:
        import trimesh
    except ImportError as exc:
        raise ModuleNotFoundError(
            f"lift_gs mesh scenes read meshes with trimesh, which is not installed: "
            f"pip install {TRIMESH} (or set n_train_meshes: 0 to run the procedural scenes "
            "alone)"
        ) from exc
    return trimesh


def pyvista_examples() -> Path:
    """The folder of pyvista's bundled example files, found without importing pyvista."""
    spec = importlib.util.find_spec("pyvista")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "lift_gs mesh scenes read the example meshes bundled with pyvista, which is not "
            f"installed: pip install --no-deps {PYVISTA} (its files are read with trimesh; "
            "pyvista itself and VTK are never imported)"
        )
    return Path(spec.submodule_search_locations[0]) / "examples"


def load_mesh(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (V, 3) float64 and triangles (F, 3) int64 of a catalogue mesh, as stored
    (PLY files are read without merging or reordering anything)."""
    trimesh = _trimesh()
    if name in PYVISTA_MESHES:
        path = pyvista_examples() / f"{name}.ply"
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing: pip install --no-deps {PYVISTA}")
        mesh = trimesh.load(path, process=False, force="mesh")
    elif name == "torus":
        mesh = trimesh.creation.torus(major_radius=1.0, minor_radius=0.35)
    elif name == "capsule":
        mesh = trimesh.creation.capsule(height=1.2, radius=0.5)
    elif name == "cone":
        mesh = trimesh.creation.cone(radius=0.7, height=1.3)
    else:
        raise ValueError(f"unknown mesh {name!r}; one of {CATALOGUE}")
    return np.asarray(mesh.vertices, np.float64), np.asarray(mesh.faces, np.int64)


def face_areas(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    a, b, c = (vertices[faces[:, i]] for i in range(3))
    return 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)


def normalise(vertices: np.ndarray, faces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Centred on its bounding-box centre, scaled to bounding radius 1, degenerate
    (zero-area) triangles dropped."""
    v = vertices - (vertices.min(0) + vertices.max(0)) / 2
    v = v / np.linalg.norm(v, axis=1).max()
    keep = face_areas(v, faces) > 1e-12
    return v, faces[keep]


@lru_cache(maxsize=1)
def catalogue() -> tuple[tuple[str, np.ndarray, np.ndarray], ...]:
    """(name, vertices, faces) of every catalogue mesh, normalised."""
    return tuple((n, *normalise(*load_mesh(n))) for n in CATALOGUE)


def sample_surface(
    vertices: np.ndarray, faces: np.ndarray, n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` points uniform over the mesh surface: a triangle with probability
    proportional to its area, then uniform barycentric coordinates (the square-root
    map). Returns points (n, 3) and the triangle of each (n,)."""
    areas = face_areas(vertices, faces)
    face = rng.choice(len(faces), size=n, p=areas / areas.sum())
    r1, r2 = np.sqrt(rng.random(n)), rng.random(n)
    w = np.stack([1 - r1, r1 * (1 - r2), r1 * r2], 1)  # (n, 3), each row sums to 1
    return np.einsum("nk,nkd->nd", w, vertices[faces[face]]), face


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    """A uniformly random rotation (QR of a Gaussian matrix, signs fixed, det +1)."""
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q


def make_mesh_scene(
    rng: np.random.Generator, p: SceneParams, meshes: tuple | None = None
) -> dict[str, np.ndarray]:
    """One scene of ``min_objects..max_objects`` catalogue meshes (distinct up to the
    catalogue's size, then repeats, each with its own draws), each randomly rotated, scaled to a bounding radius of MESH_SCALE x U(min_size, max_size), resting
    on the ground (z = 0) without overlapping another object's footprint. Same keys as
    ``scenes.make_scene`` (points, ids, n_objects, sigma, shapes: the placed meshes)."""
    meshes = catalogue() if meshes is None else meshes
    n_obj = int(rng.integers(p.min_objects, p.max_objects + 1))
    picks = rng.permutation(len(meshes))[:n_obj]
    if n_obj > len(meshes):  # every mesh once, then repeats (another rotation and size)
        extra = rng.choice(len(meshes), size=n_obj - len(meshes))
        picks = np.concatenate([picks, extra])
    placed: list[tuple[np.ndarray, float]] = []
    objects = []
    for k in picks:
        _, v, f = meshes[int(k)]
        v = v @ random_rotation(rng).T * (MESH_SCALE * rng.uniform(p.min_size, p.max_size))
        bound = float(np.linalg.norm(v[:, :2], axis=1).max())
        for _attempt in range(200):  # rejection: footprints do not intersect
            xy = rng.uniform(-1, 1, 2) * p.spread
            if all(np.linalg.norm(xy - c) > bound + b + p.gap for c, b in placed):
                break
        else:  # no free place found: the last draw intersects another object
            if not p.allow_overlap:
                continue  # left out of the scene instead
        placed.append((xy, bound))
        objects.append((v + np.array([xy[0], xy[1], -v[:, 2].min()]), f))
    n_obj = len(objects)
    areas = np.array([face_areas(v, f).sum() for v, f in objects])
    counts = _allocate(p.n_points, areas)
    pts, ids = [], []
    for i, ((v, f), n) in enumerate(zip(objects, counts, strict=True)):
        pts.append(sample_surface(v, f, int(n), rng)[0])
        ids.append(np.full(n, i))
    sigma = p.gaussian_scale * np.sqrt(areas.sum() / p.n_points)
    return {
        "points": np.concatenate(pts).astype(np.float32),
        "ids": np.concatenate(ids).astype(np.int64),
        "n_objects": n_obj,
        "sigma": np.float32(sigma),
        "shapes": [("mesh", v, f) for v, f in objects],
    }
