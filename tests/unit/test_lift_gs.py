import itertools

import numpy as np
import pandas as pd
import torch
from scipy import stats

from reprolab.evidence.judging.claims import IntervalCheck
from reprolab.methods.lift_gs import scenes
from reprolab.methods.lift_gs.claims import GapFraction, OcclusionGap
from reprolab.methods.lift_gs.module import unprojected_targets
from reprolab.methods.lift_gs.net import (
    PointQueryNet,
    instance_ious,
    matched_mask_loss,
    pair_costs,
)
from reprolab.methods.lift_gs.render import (
    Camera,
    TorchRenderer,
    hungarian,
    iou_3d,
    look_at,
    project,
    render_bruteforce,
    render_views,
)


def _cam(w=8, h=6):
    return Camera(
        fx=10.0,
        fy=10.0,
        cx=w / 2,
        cy=h / 2,
        R=torch.eye(3),
        t=torch.tensor([0.0, 0.0, 3.0]),
        width=w,
        height=h,
    )


def _scene(n=4, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    means = (torch.rand(n, 3, generator=g, dtype=dtype) - 0.5) * 1.0
    sig = 0.1 + 0.2 * torch.rand(n, generator=g, dtype=dtype)
    op = 0.3 + 0.6 * torch.rand(n, generator=g, dtype=dtype)
    feat = torch.rand(n, 2, generator=g, dtype=dtype)
    return means, sig, op, feat


def test_projection_hand_computed():
    cam = Camera(
        fx=100.0,
        fy=50.0,
        cx=16.0,
        cy=8.0,
        R=torch.eye(3),
        t=torch.tensor([0.0, 0.0, 2.0]),
        width=32,
        height=16,
    )
    uv, z = project(torch.tensor([[0.5, -0.2, 2.0]]), cam)  # camera point (0.5, -0.2, 4)
    assert torch.allclose(uv, torch.tensor([[100 * 0.5 / 4 + 16, 50 * -0.2 / 4 + 8]]))
    assert torch.allclose(z, torch.tensor([4.0]))


def test_renderer_matches_bruteforce():
    for seed in range(3):
        scene = _scene(5, seed)
        out = TorchRenderer().render(*scene, _cam())
        ref = render_bruteforce(*scene, _cam())
        np.testing.assert_allclose(out.numpy(), ref, atol=1e-10)
        assert ref.max() > 0.05


def test_gradcheck_float64():
    means, sig, op, feat = (x.requires_grad_() for x in _scene(3, 1))
    cam = _cam(5, 4)
    f = lambda m, s, o, c: TorchRenderer(alpha_max=1.0).render(m, s, o, c, cam)  # noqa: E731
    assert torch.autograd.gradcheck(f, (means, sig, op, feat), eps=1e-6, atol=1e-5)


def test_hungarian_recovers_permutation():
    rng = np.random.default_rng(0)
    perm = rng.permutation(6)
    cost = rng.uniform(1, 2, (6, 6))
    cost[np.arange(6), perm] = 0.0
    rows, cols = hungarian(cost)
    assert np.array_equal(cols[np.argsort(rows)], perm)


def test_iou_3d_hand_built():
    assert iou_3d([1, 1, 0, 0], [1, 0, 1, 0]) == 1 / 3
    assert iou_3d([0, 0], [0, 0]) == 1.0
    assert iou_3d([1, 1], [1, 1]) == 1.0


# ---------------------------------------------------------------- batched renderer, cameras


def test_look_at_maps_eye_to_origin_and_target_onto_the_optical_axis():
    eye, target = np.array([2.0, -1.0, 0.7]), np.array([0.1, 0.3, 0.2])
    R, t = look_at(eye, target)
    np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-12)
    assert np.linalg.det(R) > 0
    np.testing.assert_allclose(R @ eye + t, 0.0, atol=1e-12)
    cam = R @ target + t
    np.testing.assert_allclose(cam[:2], 0.0, atol=1e-12)
    assert cam[2] > 0
    up = R @ np.array([0.0, 0.0, 1.0])  # world up points to image "up" (negative y)
    assert up[1] < 0


def test_render_views_matches_bruteforce_per_camera_including_points_behind():
    means, sig, op, feat = _scene(6, 2)
    means = torch.cat([means, torch.tensor([[0.0, 0.0, -4.0]], dtype=torch.float64)])
    sig, op = torch.cat([sig, sig[:1]]), torch.cat([op, op[:1]])
    feat = torch.cat([feat, feat[:1]])
    poses = [look_at([3 * np.cos(a), 3 * np.sin(a), 0.5], [0, 0, 0]) for a in (0, 2, 4)]
    Rs, ts = [R for R, _ in poses], [t for _, t in poses]
    R, t = torch.tensor(np.stack(Rs)), torch.tensor(np.stack(ts))
    R = torch.cat([R, torch.eye(3, dtype=torch.float64)[None]])  # 4th camera: point behind
    t = torch.cat([t, torch.tensor([[0.0, 0.0, 3.0]], dtype=torch.float64)])
    out = render_views(means, sig, op, feat, R, t, (10.0, 10.0, 4.0, 3.0, 8, 6))
    for i in range(4):
        cam = Camera(10.0, 10.0, 4.0, 3.0, R[i], t[i], 8, 6)
        np.testing.assert_allclose(
            out[i].numpy(), render_bruteforce(means, sig, op, feat, cam), atol=1e-10
        )


def test_render_views_gradcheck_float64():
    means, sig, op, feat = (x.requires_grad_() for x in _scene(3, 4))
    R, t = (torch.tensor(a)[None] for a in look_at([0.3, -3.0, 0.4], [0, 0, 0]))
    intr = (8.0, 8.0, 2.5, 2.0, 5, 4)
    f = lambda m, s, o, c: render_views(m, s, o, c, R, t, intr, alpha_max=1.0)  # noqa: E731
    assert torch.autograd.gradcheck(f, (means, sig, op, feat), eps=1e-6, atol=1e-5)


# ---------------------------------------------------------------- scenes and teacher masks


def test_primitive_samples_lie_on_their_surfaces():
    rng = np.random.default_rng(0)
    c = np.array([0.2, -0.1, 0.3])
    sph = scenes._sample_sphere(rng, 200, c, 0.4)
    np.testing.assert_allclose(np.linalg.norm(sph - c, axis=1), 0.4, atol=1e-12)
    half = np.array([0.3, 0.2, 0.1])
    box = (scenes._sample_box(rng, 200, c, half) - c) / half
    np.testing.assert_allclose(np.abs(box).max(1), 1.0, atol=1e-12)
    cyl = scenes._sample_cylinder(rng, 300, c, 0.25, 0.15) - c
    radial, z = np.hypot(cyl[:, 0], cyl[:, 1]), cyl[:, 2]
    on_side = np.isclose(radial, 0.25)
    on_cap = np.isclose(np.abs(z), 0.15) & (radial <= 0.25 + 1e-12)
    assert (on_side | on_cap).all() and on_side.any() and on_cap.any()


def test_allocate_sums_to_total_with_minimum_and_proportions():
    counts = scenes._allocate(100, np.array([1.0, 3.0, 6.0]), minimum=5)
    assert counts.sum() == 100 and (counts >= 5).all()
    assert counts[0] < counts[1] < counts[2]


def test_make_scene_gives_every_object_points_and_fixed_size():
    p = scenes.SceneParams(n_points=120, min_objects=3, max_objects=3)
    sc = scenes.make_scene(np.random.default_rng(1), p)
    assert sc["points"].shape == (120, 3) and sc["n_objects"] == 3
    assert set(np.unique(sc["ids"])) == {0, 1, 2}
    assert (sc["points"][:, 2] >= -1e-6).all()  # objects rest on the ground plane z = 0


def test_teacher_masks_without_noise_are_the_label_masks_in_some_order():
    rng = np.random.default_rng(0)
    labels = rng.integers(-1, 3, size=(2, 6, 6))
    masks, counts = scenes.teacher_masks(labels, 3, rng, drop=0.0, edge_noise=0.0)
    for v in range(2):
        got = sorted(masks[v, j].tobytes() for j in range(counts[v]))
        want = sorted((labels[v] == o).astype(np.uint8).tobytes() for o in range(3))
        assert got == want
    _, none = scenes.teacher_masks(labels, 3, rng, drop=1.0, edge_noise=0.0)
    assert (none == 0).all()


def test_occlusion_of_a_sphere_hidden_behind_another():
    p = scenes.SceneParams(n_views=1, image_size=16, n_points=400)
    rng = np.random.default_rng(0)
    front = scenes._sample_sphere(rng, 200, np.array([1.0, 0.0, 0.3]), 0.3)
    back = scenes._sample_sphere(rng, 200, np.array([-1.0, 0.0, 0.3]), 0.3)
    points = np.concatenate([front, back]).astype(np.float32)
    ids = np.repeat([0, 1], 200)
    R, t = look_at([3.2, 0.0, 0.3], [0.0, 0.0, 0.3])
    R, t = R[None].astype(np.float32), t[None].astype(np.float32)
    occ = scenes.occlusion(points, ids, 2, 0.05, R, t, p)
    assert occ[0] == 0.0 and occ[1] > 0.9  # the front sphere hides the smaller-looking back one


# ---------------------------------------------------------------- training signals


def test_unprojection_labels_points_by_pixel_without_depth_test():
    masks = torch.zeros(1, 4, 4, dtype=torch.uint8)
    masks[0, 1, 2] = 1  # pixel (u=2, v=1)
    pts = torch.tensor(
        [
            [0.25, -0.25, 2.0],  # -> u = 2.5, v = 1.5: in the mask
            [0.5, -0.5, 4.0],  # same ray, farther: also labelled (no occlusion test)
            [-0.75, 0.75, 2.0],  # -> u = 0.5, v = 3.5: outside the mask
            [5.0, 0.0, 2.0],  # outside the image
            [0.0, 0.0, -1.0],  # behind the camera
        ]
    )
    inside, target = unprojected_targets(
        pts, torch.eye(3), torch.zeros(3), masks, (4.0, 4.0, 2.0, 2.0, 4, 4)
    )
    assert inside.tolist() == [True, True, True, False, False]
    assert target.tolist() == [[1.0, 1.0, 0.0]]


def test_depth_aware_unprojection_labels_only_the_nearest_point_of_a_pixel():
    masks = torch.zeros(1, 4, 4, dtype=torch.uint8)
    masks[0, 1, 2] = 1
    pts = torch.tensor(
        [
            [0.25, -0.25, 2.0],  # pixel (2, 1), depth 2: the visible point
            [0.5, -0.5, 4.0],  # the same pixel, depth 4: occluded, left out
            [0.26, -0.26, 2.08],  # the same pixel, 4% behind: within a 5% tolerance
            [-0.75, 0.75, 2.0],  # alone at pixel (0, 3): visible, outside the mask
            [5.0, 0.0, 2.0],  # outside the image
        ]
    )
    cam = (torch.eye(3), torch.zeros(3), masks, (4.0, 4.0, 2.0, 2.0, 4, 4))
    inside, target = unprojected_targets(pts, *cam, depth_tolerance=0.05)
    assert inside.tolist() == [True, False, True, True, False]
    assert target.tolist() == [[1.0, 1.0, 0.0]]
    naive, _ = unprojected_targets(pts, *cam)  # no depth test: the occluded one too
    assert naive.tolist() == [True, True, True, True, False]


def test_pair_costs_match_direct_formulas():
    g = torch.Generator().manual_seed(0)
    pred = torch.rand(3, 10, generator=g, dtype=torch.float64)
    target = (torch.rand(2, 10, generator=g) > 0.5).double()
    bce, dice = pair_costs(pred, target)
    for k in range(3):
        for m in range(2):
            want = torch.nn.functional.binary_cross_entropy(pred[k], target[m])
            assert abs(float(bce[k, m] - want)) < 1e-9
            d = 1 - (2 * (pred[k] * target[m]).sum() + 1) / (pred[k].sum() + target[m].sum() + 1)
            assert abs(float(dice[k, m] - d)) < 1e-12


def test_matched_loss_is_the_minimum_over_assignments():
    g = torch.Generator().manual_seed(1)
    pred = torch.rand(4, 12, generator=g, dtype=torch.float64)
    target = (torch.rand(2, 12, generator=g) > 0.5).double()
    w = 0.5
    bce, dice = pair_costs(pred, target)
    empty = -torch.log1p(-pred.clamp(1e-5, 1 - 1e-5)).mean(1)
    best = min(
        float(bce[a, 0] + dice[a, 0] + bce[b, 1] + dice[b, 1])
        + w * float(sum(empty[k] for k in range(4) if k not in (a, b)))
        for a, b in itertools.permutations(range(4), 2)
    )
    assert abs(float(matched_mask_loss(pred, target, w)) - best / 4) < 1e-12


def test_perfect_permuted_prediction_scores_iou_one_and_a_split_object_less():
    ids = np.array([0, 0, 0, 1, 1, 2, 2, 2])
    logits = np.full((8, 4), -5.0)
    for i, o in enumerate(ids):
        logits[i, [3, 0, 1][o]] = 5.0  # object o predicted by query 3, 0, 1
    np.testing.assert_allclose(instance_ious(logits, ids, 3), [1.0, 1.0, 1.0])
    logits[2] = -5.0
    logits[2, 2] = 5.0  # one point of object 0 goes to an extra query
    np.testing.assert_allclose(instance_ious(logits, ids, 3), [2 / 3, 1.0, 1.0])


def test_point_network_is_permutation_equivariant():
    torch.manual_seed(0)
    net = PointQueryNet(queries=4, hidden=8, knn=4).eval()
    pts = torch.rand(2, 30, 3)
    perm = torch.randperm(30)
    with torch.no_grad():
        out, out_p = net(pts), net(pts[:, perm])
    assert out.shape == (2, 30, 4)
    torch.testing.assert_close(out_p, out[:, perm], atol=1e-5, rtol=1e-5)


# ---------------------------------------------------------------- claim checks


def _table(rows):
    return pd.DataFrame(
        rows, columns=["task", "variant", "seed", "precision", "metric", "value", "n_scenes"]
    )


def test_gap_fraction_and_occlusion_gap_on_a_known_table():
    rows = []
    for seed, (u, r, s) in enumerate([(0.2, 0.5, 0.8), (0.3, 0.55, 0.7), (0.25, 0.5, 0.75)]):
        for variant, value in (("unproj", u), ("render", r), ("sup3d", s)):
            rows.append(("a", variant, seed, "fp32", "miou", value, 8))
        rows.append(("a", "unproj", seed, "fp32", "miou_occluded", u - 0.1, 8))
        rows.append(("a", "render", seed, "fp32", "miou_occluded", r + 0.01 * seed, 8))
        rows.append(("a", "unproj", seed, "fp32", "miou_visible", u, 8))
        rows.append(("a", "render", seed, "fp32", "miou_visible", r, 8))
    table = _table(rows)
    v = IntervalCheck(GapFraction("render", "unproj", "sup3d")).evaluate(table, "miou")
    m = v.measured
    gains, gaps = np.array([0.3, 0.25, 0.25]), np.array([0.6, 0.4, 0.5])
    ratio = gains.mean() / gaps.mean()
    assert abs(m["value"] - ratio) < 1e-12
    assert v.verdict == "reproduced" and m["ci_low"] > 0 and m["n"] == 3
    # delta-method interval of a ratio of means: t_{0.975, 2} sd(gain - r gap) / (sqrt(3) gap)
    se = (gains - ratio * gaps).std(ddof=1) / (np.sqrt(3) * gaps.mean())
    half = stats.t.ppf(0.975, 2) * se
    assert abs(m["ci_low"] - (ratio - half)) < 1e-9 and abs(m["ci_high"] - (ratio + half)) < 1e-9
    v = IntervalCheck(OcclusionGap("render", "unproj")).evaluate(table, "miou_occluded")
    assert abs(v.measured["value"] - 0.11) < 1e-12  # 0.1 + 0.01 * mean(seed)
    assert v.verdict == "reproduced"
