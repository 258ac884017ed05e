"""LIFT-GS teacher masks by exact ray casting, checked against closed forms (hand-built
scenes whose masks and depths are known analytically), and the new setting's plumbing:
depth-map unprojection, validation signals, the naive baseline next to the depth-aware
one."""

import numpy as np
import pytest
import torch

from reprolab.contract import Run
from reprolab.methods.lift_gs import SPEC, raycast, scenes
from reprolab.methods.lift_gs.config import LiftGSConfig
from reprolab.methods.lift_gs.method import split_miou, units, val_signals
from reprolab.methods.lift_gs.module import unprojected_targets
from reprolab.methods.lift_gs.net import PointQueryNet
from reprolab.methods.lift_gs.render import look_at

# a camera at the origin looking down +z (R = I, t = 0); an odd image size puts the
# centre pixel's ray exactly on the optical axis
W = 21
INTR = (10.0, 10.0, W / 2, W / 2, W, W)
R0, T0 = np.eye(3)[None], np.zeros((1, 3))


def _pixel_slopes():
    """Per pixel (H, W): the ray's x/z and y/z slopes through the pixel centre."""
    ys, xs = np.meshgrid(np.arange(W), np.arange(W), indexing="ij")
    return (xs + 0.5 - W / 2) / 10.0, (ys + 0.5 - W / 2) / 10.0


def test_sphere_on_the_axis_matches_the_closed_form():
    D, r = 6.0, 2.0
    depth = raycast.depth_maps([("sphere", np.array([0.0, 0.0, D]), r)], R0, T0, INTR)[0, ..., 0]
    a, b = _pixel_slopes()
    q = 1 + a * a + b * b  # |direction|^2
    # the ray x = s (a, b, 1) meets |x - (0, 0, D)| = r where q s^2 - 2 D s + D^2 - r^2 = 0
    disc = D * D - q * (D * D - r * r)
    want = np.where(disc >= 0, (D - np.sqrt(np.clip(disc, 0, None))) / q, np.inf)
    assert np.isfinite(depth).sum() == np.isfinite(want).sum() > 20
    np.testing.assert_allclose(depth[np.isfinite(want)], want[np.isfinite(want)], rtol=1e-9)
    assert depth[W // 2, W // 2] == pytest.approx(D - r)  # the axis: the nearest point


def test_box_facing_the_camera_shows_its_front_face():
    D, half = 6.0, np.array([2.03, 1.02, 0.5])
    depth = raycast.depth_maps([("box", np.array([0.0, 0.0, D]), half)], R0, T0, INTR)[0, ..., 0]
    a, b = _pixel_slopes()
    front = D - half[2]  # the silhouette is the front face (the side faces lie behind it)
    inside = (np.abs(a * front) <= half[0]) & (np.abs(b * front) <= half[1])
    assert (np.isfinite(depth) == inside).all() and inside.sum() == 7 * 3
    np.testing.assert_allclose(depth[inside], front)


def test_cylinder_seen_along_its_axis_shows_its_near_cap():
    D, r, h = 6.0, 1.63, 0.7  # axis along z = the optical axis
    shape = ("cylinder", np.array([0.0, 0.0, D]), r, h)
    depth = raycast.depth_maps([shape], R0, T0, INTR)[0, ..., 0]
    a, b = _pixel_slopes()
    cap = D - h
    inside = (a * cap) ** 2 + (b * cap) ** 2 <= r * r
    assert (np.isfinite(depth) == inside).all() and inside.sum() > 10
    np.testing.assert_allclose(depth[inside], cap)


def _box_mesh(centre, half):
    """The 8 corners and 12 outward triangles of an axis-aligned box, by hand."""
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    faces = [t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))]
    return centre + corners * half, np.array(faces)


def test_a_box_as_triangles_casts_the_same_depth_as_the_analytic_box():
    R, t = look_at([3.0, -2.2, 1.7], [0.1, 0.2, 0.3])
    R, t = R[None], t[None]
    centre, half = np.array([0.1, 0.2, 0.35]), np.array([0.4, 0.25, 0.35])
    intr = (60.0, 60.0, 16.0, 16.0, 32, 32)
    box = raycast.depth_maps([("box", centre, half)], R, t, intr)
    mesh = raycast.depth_maps([("mesh", *_box_mesh(centre, half))], R, t, intr)
    assert np.isfinite(box).sum() > 50
    assert (np.isfinite(box) == np.isfinite(mesh)).all()
    np.testing.assert_allclose(mesh[np.isfinite(mesh)], box[np.isfinite(box)], rtol=1e-9)


def test_a_front_sphere_hides_the_back_one_where_their_discs_overlap():
    front = ("sphere", np.array([0.3, 0.0, 4.0]), 0.8)
    back = ("sphere", np.array([-0.3, 0.0, 7.0]), 1.2)
    depth = raycast.depth_maps([front, back], R0, T0, INTR)
    labels, occ = raycast.labels_and_occlusion(depth)
    alone = np.isfinite(depth[0])  # (H, W, 2): each sphere's own silhouette
    want = np.where(alone[..., 0], 0, np.where(alone[..., 1], 1, -1))
    assert (labels[0] == want).all()
    hidden = (alone[..., 0] & alone[..., 1]).sum() / alone[..., 1].sum()
    assert occ[0] == 0.0 and occ[1] == pytest.approx(hidden) and 0.1 < hidden < 0.9


def test_scene_shapes_are_the_surfaces_their_points_were_sampled_from():
    """Every point lies on its own object's analytic surface (all three primitives are
    convex): a ray started just outside it, aimed through it at the object's centre,
    enters the surface right at the point."""
    rng = np.random.default_rng(3)
    p = scenes.SceneParams(n_points=200, min_objects=4, max_objects=4)
    sc = scenes.make_scene(rng, p)
    step = 1e-4
    for k, shape in enumerate(sc["shapes"]):
        pts = sc["points"][sc["ids"] == k].astype(np.float64)
        for x in pts[:20]:
            d = shape[1] - x
            d /= np.linalg.norm(d)
            s = raycast.hit_depth(shape, x - step * d, d[None])[0]
            assert s == pytest.approx(step, abs=1e-5), (shape[0], x)


def test_raycast_teacher_never_calls_the_splatting_renderer(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("the splatting renderer was called")

    monkeypatch.setattr(scenes, "object_masks", forbidden)
    monkeypatch.setattr("reprolab.methods.lift_gs.render.render_views", forbidden)
    p = scenes.SceneParams(n_points=64, image_size=12, n_views=3)
    split = scenes.build_split(2, p, 0, 0.0, 0.0, with_occlusion=True, teacher="raycast")
    rng = np.random.default_rng(0)  # the same draws: the labels are the ray-cast ones
    sc = scenes.make_scene(rng, p)
    R, t = scenes.make_cameras(rng, p)
    depth = raycast.depth_maps(sc["shapes"], R, t, scenes.intrinsics(p))
    labels, occ = raycast.labels_and_occlusion(depth)
    assert (split["labels"][0] == labels).all()
    np.testing.assert_allclose(split["depth"][0], depth.min(-1))
    np.testing.assert_allclose(split["occlusion"][0, : sc["n_objects"]], occ, rtol=1e-6)


def test_mesh_scenes_keep_their_placed_meshes_and_repeat_meshes_past_the_catalogue():
    from reprolab.methods.lift_gs.meshes import make_mesh_scene

    v, f = _box_mesh(np.zeros(3), np.ones(3))
    cat = (("a", v / np.sqrt(3), f), ("b", v / np.sqrt(3), f))
    p = scenes.SceneParams(n_points=120, min_objects=3, max_objects=3, spread=2.0)
    sc = make_mesh_scene(np.random.default_rng(0), p, cat)
    assert sc["n_objects"] == 3 and len(sc["shapes"]) == 3
    for k, (kind, verts, faces) in enumerate(sc["shapes"]):
        assert kind == "mesh" and faces.shape == f.shape
        pts = sc["points"][sc["ids"] == k]
        lo, hi = verts.min(0), verts.max(0)
        assert ((pts >= lo - 1e-5) & (pts <= hi + 1e-5)).all()  # on its own placed mesh


def test_no_overlap_leaves_out_objects_that_find_no_free_place():
    p = scenes.SceneParams(n_points=200, min_objects=12, max_objects=12, spread=0.3)
    crowded = scenes.make_scene(np.random.default_rng(0), p)
    assert crowded["n_objects"] == 12  # the results on file: placed anyway
    p = scenes.SceneParams(
        n_points=200, min_objects=12, max_objects=12, spread=0.3, allow_overlap=False
    )
    sc = scenes.make_scene(np.random.default_rng(0), p)
    assert 1 <= sc["n_objects"] < 12 and sc["ids"].max() == sc["n_objects"] - 1
    xy = [s[1][:2] for s in sc["shapes"]]
    assert len(xy) == sc["n_objects"]


# ---------------------------------------------------------------- unprojection


def test_depth_map_unprojection_labels_only_points_on_the_seen_surface():
    masks = torch.ones(1, 4, 4, dtype=torch.uint8)
    depth = torch.full((4, 4), float("inf"))
    depth[1, 2] = 2.0  # a surface at depth 2 seen at pixel (u=2, v=1)
    pts = torch.tensor(
        [
            [0.25, -0.25, 2.0],  # pixel (2, 1) at the seen depth: labelled
            [0.255, -0.255, 2.04],  # 2% behind it: within a 5% tolerance
            [0.5, -0.5, 4.0],  # the same pixel, far behind: hidden, left out
            [-0.75, 0.75, 2.0],  # pixel (0, 3): no surface seen there, left out
        ]
    )
    cam = (torch.eye(3), torch.zeros(3), masks, (4.0, 4.0, 2.0, 2.0, 4, 4))
    inside, target = unprojected_targets(pts, *cam, depth_tolerance=0.05, depth=depth)
    assert inside.tolist() == [True, True, False, False]
    assert target.shape == (1, 2)


def test_sensor_depth_needs_the_raycast_teacher():
    with pytest.raises(ValueError, match="teacher: raycast"):
        LiftGSConfig(unproj_depth="sensor", unproj_depth_tolerance=0.05)
    LiftGSConfig(unproj_depth="sensor", unproj_depth_tolerance=0.05, teacher="raycast")


def test_naive_unprojection_runs_next_to_unproj_only_when_unproj_has_the_depth_test(tmp_path):
    tasks = ["scenes_n12", "scenes_n6", "meshes_n6"]
    naive = units(Run(spec=SPEC, cfg=LiftGSConfig(), seeds=(0,), root=tmp_path), tasks)
    assert "unproj_naive" not in {u.variant for u in naive}
    cfg = LiftGSConfig(unproj_depth_tolerance=0.05)
    both = units(Run(spec=SPEC, cfg=cfg, seeds=(0,), root=tmp_path), tasks)
    got = {(u.variant, u.param["scenes"]) for u in both if u.variant.startswith("unproj")}
    assert got == {(v, s) for v in ("unproj", "unproj_naive") for s in ("procedural", "meshes")}


def test_validation_signal_is_the_mean_matched_iou_on_validation_scenes():
    net = PointQueryNet(queries=4, hidden=8)
    rng = np.random.default_rng(0)
    data = {
        "val_points": rng.normal(size=(3, 20, 3)).astype(np.float32),
        "val_ids": rng.integers(0, 2, size=(3, 20)),
        "val_n_objects": np.array([2, 2, 2]),
    }
    got = val_signals(net, data)
    assert set(got) == {"val_miou"} and 0.0 <= got["val_miou"] <= 1.0
    assert got["val_miou"] == split_miou(net, data, "val")
    assert val_signals(net, {}) == {}  # no validation scenes: no signal
