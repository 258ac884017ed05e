"""Rotation fusion: the symmetries are exact, the matchings recover known transforms, the
matching diagnostics have their closed forms, and the fine-tune regime's new keys do what
they say while their defaults leave the units as they were."""

from __future__ import annotations

import copy
import itertools
import math

import numpy as np
import pytest
import torch

from reprolab.contract import Run, Unit
from reprolab.core import io
from reprolab.core.transformer import vit
from reprolab.methods.rotation_fusion import MATCH_METRICS, SPEC, fusion, method
from reprolab.methods.rotation_fusion.config import RotationFusionConfig
from reprolab.methods.rotation_fusion.method import finetune_subsets


def _net(seed: int = 0, heads: int = 4):
    torch.manual_seed(seed)
    net = vit(28, 7, 32, 2, heads, 10).eval()
    with torch.no_grad():  # non-zero biases, so the bias terms of the symmetry matter
        for name, p in net.named_parameters():
            if name.endswith("bias"):
                p.normal_(0, 0.3)
    return net


def _x(n: int = 16) -> torch.Tensor:
    return torch.rand(n, 784, generator=torch.Generator().manual_seed(1))


def test_random_rotation_and_permutation_leave_logits_unchanged():
    net = _net()
    x = _x()
    moved = fusion.random_symmetry(net, torch.Generator().manual_seed(3))
    with torch.no_grad():
        ref, out = net(x), moved(x)
    assert torch.allclose(ref, out, atol=1e-5, rtol=0)
    # and the weights really moved (the test is not vacuous)
    assert fusion.distance(net, moved) > 1.0


@pytest.mark.parametrize("rotate,permute", [(True, False), (False, True)])
def test_each_symmetry_alone_is_exact(rotate, permute):
    net = _net(1)
    moved = fusion.random_symmetry(net, torch.Generator().manual_seed(4), rotate, permute)
    with torch.no_grad():
        assert torch.allclose(net(_x()), moved(_x()), atol=1e-5, rtol=0)


def test_rotating_q_without_k_changes_logits():
    """A control: rotating only Q (not K) is not a symmetry, so the check can fail."""
    net = _net(2)
    moved = fusion.random_symmetry(net, torch.Generator().manual_seed(5), permute=False)
    with torch.no_grad():
        moved.blocks[0].attn.k.weight.copy_(net.blocks[0].attn.k.weight)
        moved.blocks[0].attn.k.bias.copy_(net.blocks[0].attn.k.bias)
        assert (net(_x()) - moved(_x())).abs().max() > 1e-3


def test_procrustes_recovers_a_known_rotation_exactly():
    g = torch.Generator().manual_seed(0)
    b = torch.randn(6, 20, generator=g, dtype=torch.float64)
    r = fusion.random_orthogonal(6, g).double()
    o = fusion.procrustes(r @ b, b)
    assert torch.allclose(o, r, atol=1e-10)


def test_procrustes_is_the_closed_form_minimum():
    """Against the closed form ||A||^2 + ||B||^2 - 2 * nuclear norm(A B^T), and no random
    orthogonal matrix does better."""
    g = torch.Generator().manual_seed(1)
    a = torch.randn(4, 9, generator=g, dtype=torch.float64)
    b = torch.randn(4, 9, generator=g, dtype=torch.float64)
    o = fusion.procrustes(a, b)
    assert torch.allclose(o @ o.T, torch.eye(4, dtype=torch.float64), atol=1e-12)
    best = float((a - o @ b).pow(2).sum())
    closed = float(a.pow(2).sum() + b.pow(2).sum() - 2 * torch.linalg.matrix_norm(a @ b.T, "nuc"))
    assert best == pytest.approx(closed, abs=1e-9)
    for _ in range(200):
        q = fusion.random_orthogonal(4, g).double()
        assert float((a - q @ b).pow(2).sum()) >= best - 1e-9


def test_permutation_matches_brute_force_and_recovers_a_known_permutation():
    g = torch.Generator().manual_seed(2)
    b = torch.randn(5, 7, generator=g, dtype=torch.float64)
    perm = torch.randperm(5, generator=g)
    p = fusion.permutation(b[perm], b)
    assert torch.equal(p @ b, b[perm])
    a = torch.randn(5, 7, generator=g, dtype=torch.float64)
    brute = min(
        float((a - b[list(order)]).pow(2).sum()) for order in itertools.permutations(range(5))
    )
    assert float((a - fusion.permutation(a, b) @ b).pow(2).sum()) == pytest.approx(brute)


def test_align_undoes_a_random_symmetry():
    """b = a moved by a random rotation + FFN permutation: rotation matching brings it back
    onto a's weights; permutation-only matching cannot undo the rotation."""
    a = _net(3)
    b = fusion.random_symmetry(a, torch.Generator().manual_seed(6))
    back = fusion.align(a, b, "rotation", True)
    assert fusion.distance(a, back) < 1e-4
    assert fusion.distance(a, fusion.align(a, b, "permutation", True)) > 1.0
    # the FFN permutation alone is recovered by linear_sum_assignment
    c = fusion.random_symmetry(a, torch.Generator().manual_seed(7), rotate=False)
    assert fusion.distance(a, fusion.align(a, c, "none", True)) < 1e-5


@pytest.mark.parametrize("how", ["average", "perm", "rotation"])
def test_fusion_endpoints_are_the_two_models(how):
    a, b = _net(4), _net(5)
    x = _x()
    with torch.no_grad():
        assert torch.allclose(fusion.fuse(a, b, 0.0, how)(x), a(x), atol=1e-5)
        assert torch.allclose(fusion.fuse(a, b, 1.0, how)(x), b(x), atol=1e-4)


def test_matching_never_increases_the_weight_distance():
    a, b = _net(6), _net(7)
    plain = fusion.distance(a, b)
    perm = fusion.distance(a, fusion.align(a, b, "permutation", True))
    rot = fusion.distance(a, fusion.align(a, b, "rotation", True))
    assert rot <= perm + 1e-6 <= plain + 2e-6


def test_finetune_subsets_are_disjoint_and_skewed():
    y = np.repeat(np.arange(10), 200)
    a, b = finetune_subsets(y, 0.8, 0)
    assert len(np.intersect1d(a, b)) == 0 and len(a) + len(b) == len(y)
    assert np.mean(y[a] < 5) == pytest.approx(0.8, abs=0.05)
    assert np.mean(y[b] >= 5) == pytest.approx(0.8, abs=0.05)


# ---------------------------------------------------------------- the refactored align


def _sequential_align(ref, other, attn, ffn):
    """``fusion.align`` as it was before ``matchings`` / ``apply_matchings``: each head
    matched and moved in turn."""
    out = copy.deepcopy(other)
    with torch.no_grad():
        for br, bo in zip(ref.blocks, out.blocks, strict=True):
            if attn != "none":
                for h in range(br.attn.heads):
                    s = slice(h * br.attn.head_dim, (h + 1) * br.attn.head_dim)
                    qk = fusion._match(attn, fusion._qk(br.attn, s), fusion._qk(bo.attn, s))
                    vo = fusion._match(attn, fusion._vo(br.attn, s), fusion._vo(bo.attn, s))
                    fusion.transform_head(bo.attn, h, qk, vo)
            if ffn:
                fusion.permute_mlp(bo.mlp, fusion.mlp_order(br.mlp, bo.mlp))
    return out


@pytest.mark.parametrize("how", ["average", "perm", "rotation"])
def test_align_is_bit_identical_to_the_sequential_matching(how):
    a, b = _net(8), _net(9)
    new = fusion.align(a, b, *fusion.FUSIONS[how]).state_dict()
    old = _sequential_align(a, b, *fusion.FUSIONS[how]).state_dict()
    assert all(torch.equal(new[k], old[k]) for k in old)


# ---------------------------------------------------------------- matching diagnostics


def _plane_rotation(d: int, theta: float, q: torch.Tensor | None = None) -> torch.Tensor:
    """Every one of the d/2 planes rotated by ``theta`` (radians), in the basis ``q``."""
    r = torch.zeros(d, d, dtype=torch.float64)
    c, s = math.cos(theta), math.sin(theta)
    for i in range(0, d, 2):
        r[i : i + 2, i : i + 2] = torch.tensor([[c, -s], [s, c]], dtype=torch.float64)
    return r if q is None else q @ r @ q.T


def _moved_heads(net, qk: torch.Tensor, vo: torch.Tensor):
    out = copy.deepcopy(net)
    for block in out.blocks:
        for h in range(block.attn.heads):
            fusion.transform_head(block.attn, h, qk.float(), vo.float())
    return out


def test_mean_angle_closed_forms():
    """Identity 0; every plane by theta: theta; one plane of four by theta: theta / 2; a
    reflection of one axis of two: (180 + 0) / 2; a 3-cycle of three axes: (0 + 2 x 120)
    / 3."""
    theta = 37.0
    assert fusion.mean_angle_deg([torch.eye(6)]) == pytest.approx(0.0, abs=1e-9)
    q = fusion.random_orthogonal(8, torch.Generator().manual_seed(0)).double()
    rot = _plane_rotation(8, math.radians(theta), q)
    assert fusion.mean_angle_deg([rot]) == pytest.approx(theta, abs=1e-9)
    one_plane = torch.eye(4, dtype=torch.float64)
    one_plane[:2, :2] = _plane_rotation(2, math.radians(theta))
    assert fusion.mean_angle_deg([one_plane]) == pytest.approx(theta / 2, abs=1e-9)
    assert fusion.mean_angle_deg([torch.diag(torch.tensor([-1.0, 1.0]))]) == pytest.approx(90)
    cycle = torch.eye(3)[[1, 2, 0]]
    assert fusion.mean_angle_deg([cycle]) == pytest.approx(80.0, abs=1e-9)
    # pooled over matrices: the mean over every eigenvalue
    assert fusion.mean_angle_deg([rot, torch.eye(8)]) == pytest.approx(theta / 2, abs=1e-9)


def test_weight_distance_and_norm_closed_form():
    """b = 2 a: ||a - b|| = ||a||, relative to the mean norm (||a|| + 2 ||a||) / 2: 2/3."""
    a = _net(10)
    b = copy.deepcopy(a)
    with torch.no_grad():
        for p in b.parameters():
            p.mul_(2.0)
    flat = torch.cat([p.detach().double().flatten() for p in a.parameters()])
    assert fusion.weight_norm(a) == pytest.approx(float(flat.norm()), rel=1e-12)
    assert fusion.weight_distance(a, b) == pytest.approx(float(flat.norm()), rel=1e-12)
    stats = fusion.match_stats(a, b)
    assert stats["dist_ab_rel"] == pytest.approx(2 / 3, rel=1e-12)


def test_match_stats_of_identical_models():
    a = _net(11)
    stats = fusion.match_stats(a, copy.deepcopy(a))
    assert set(stats) == set(MATCH_METRICS)
    assert stats["dist_ab"] == 0.0 and stats["dist_ab_rel"] == 0.0
    assert stats["dist_ab_perm"] == 0.0
    assert stats["dist_ab_rot"] == pytest.approx(0.0, abs=1e-4)
    assert stats["perm_fixed_frac"] == 1.0
    assert stats["rot_angle_deg"] == pytest.approx(0.0, abs=1e-3)


def test_match_stats_of_a_known_ffn_swap():
    """b = a with hidden units 0 and 1 of block 0's MLP swapped. Closed form:
    dist^2 = 2 (||W1_0 - W1_1||^2 + (b1_0 - b1_1)^2 + ||W2[:, 0] - W2[:, 1]||^2); 2 of
    the 256 permuted indices move (2 blocks x (4 heads x (8 + 8) + 64 hidden units))."""
    a = _net(12)
    b = copy.deepcopy(a)
    fusion.permute_mlp(b.blocks[0].mlp, [1, 0, *range(2, 64)])
    w1, b1, w2 = (
        t.detach().double()
        for t in (a.blocks[0].mlp[0].weight, a.blocks[0].mlp[0].bias, a.blocks[0].mlp[2].weight)
    )
    closed = 2 * (
        (w1[0] - w1[1]).pow(2).sum() + (b1[0] - b1[1]) ** 2 + (w2[:, 0] - w2[:, 1]).pow(2).sum()
    )
    stats = fusion.match_stats(a, b)
    assert stats["dist_ab"] == pytest.approx(float(closed) ** 0.5, rel=1e-9)
    assert stats["dist_ab_perm"] == 0.0
    assert stats["dist_ab_rot"] == pytest.approx(0.0, abs=1e-4)
    assert stats["perm_fixed_frac"] == pytest.approx(254 / 256)
    assert stats["rot_angle_deg"] == pytest.approx(0.0, abs=1e-3)


def test_match_stats_of_a_known_head_permutation():
    """Every head's Q/K and V/O moved by a 3-cycle of its first three coordinates (head
    dim 8): each of the 16 head matrices keeps 5 of 8 fixed, the MLPs all 128, so the
    fixed share is (16 x 5 + 128) / 256; the rotation matching finds the same permutation
    matrices, whose mean angle is (0 x 6 + 2 x 120) / 8 = 30 degrees."""
    a = _net(13)
    p = torch.eye(8, dtype=torch.float64)[[1, 2, 0, *range(3, 8)]]
    b = _moved_heads(a, p, p)
    stats = fusion.match_stats(a, b)
    assert stats["dist_ab"] > 1.0
    assert stats["dist_ab_perm"] == 0.0
    assert stats["dist_ab_rot"] == pytest.approx(0.0, abs=1e-4)
    assert stats["perm_fixed_frac"] == pytest.approx((16 * 5 + 128) / 256)
    assert stats["rot_angle_deg"] == pytest.approx(30.0, abs=1e-3)


@pytest.mark.parametrize("theta", [5.0, 25.0, 60.0])
def test_match_stats_recovers_the_angle_of_a_known_rotation(theta):
    """Every head's Q/K and V/O rotated by ``theta`` in every plane of a random basis: the
    rotation matching undoes it (distance ~0) and reports ``theta``."""
    a = _net(14)
    q = fusion.random_orthogonal(8, torch.Generator().manual_seed(15)).double()
    r = _plane_rotation(8, math.radians(theta), q)
    b = _moved_heads(a, r, r)
    with torch.no_grad():
        assert torch.allclose(a(_x()), b(_x()), atol=1e-5)
    stats = fusion.match_stats(a, b)
    assert stats["dist_ab"] > 0.1
    assert stats["dist_ab_rot"] == pytest.approx(0.0, abs=1e-4)
    assert stats["rot_angle_deg"] == pytest.approx(theta, abs=1e-3)
    assert stats["dist_ab_rot"] <= stats["dist_ab_perm"] <= stats["dist_ab"] + 1e-9


# ---------------------------------------------------------------- the residual stream


def test_residual_permutation_is_exact_and_recovered():
    a = _net(16)
    order = torch.randperm(32, generator=torch.Generator().manual_seed(17))
    b = copy.deepcopy(a)
    fusion.permute_residual(b, order)
    with torch.no_grad():
        assert torch.allclose(a(_x()), b(_x()), atol=1e-5, rtol=0)
    assert fusion.weight_distance(a, b) > 1.0
    back = fusion.match_residual(a, b)
    assert fusion.weight_distance(a, back) == 0.0
    # with a random head and MLP symmetry on top, resid + rotation matching recovers a
    c = fusion.random_symmetry(b, torch.Generator().manual_seed(18))
    stats = fusion.match_stats(a, c, resid=True)
    assert stats["dist_ab_rot"] == pytest.approx(0.0, abs=1e-4)
    assert stats["resid_fixed_frac"] == pytest.approx(float(np.mean(order.numpy() == range(32))))


def test_residual_swap_fixed_share():
    a = _net(19)
    b = copy.deepcopy(a)
    fusion.permute_residual(b, [1, 0, *range(2, 32)])
    stats = fusion.match_stats(a, b, resid=True)
    assert stats["resid_fixed_frac"] == pytest.approx(30 / 32)
    assert stats["dist_ab_perm"] == 0.0 and stats["perm_fixed_frac"] == 1.0


# ---------------------------------------------------------------- fine-tune regime


def _legacy_subsets(y, skew, seed):
    """``finetune_subsets`` before ``rows``: every training row, split by skew."""
    rng = np.random.default_rng(seed)
    low = y < 5
    to_a = np.where(low, rng.random(len(y)) < skew, rng.random(len(y)) >= skew)
    return np.flatnonzero(to_a), np.flatnonzero(~to_a)


def test_finetune_subsets_default_is_the_legacy_split():
    y = np.random.default_rng(3).integers(0, 10, 700)
    for seed in (0, 1010):
        new, old = finetune_subsets(y, 0.8, seed), _legacy_subsets(y, 0.8, seed)
        assert all(np.array_equal(n, o) for n, o in zip(new, old, strict=True))


@pytest.mark.parametrize("rows", [200, 1000, 2000])
def test_finetune_subsets_of_drawn_rows_are_disjoint_and_sized(rows):
    y = np.repeat(np.arange(10), 500)
    a, b = finetune_subsets(y, 0.8, 7, rows)
    assert len(np.intersect1d(a, b)) == 0 and len(a) + len(b) == rows
    assert len(np.unique(np.concatenate([a, b]))) == rows
    assert abs(len(a) - rows / 2) < 4 * math.sqrt(rows) / 2  # ~rows/2 each
    if rows >= 1000:
        assert np.mean(y[a] < 5) == pytest.approx(0.8, abs=0.05)
        assert np.mean(y[b] >= 5) == pytest.approx(0.8, abs=0.05)
    with pytest.raises(ValueError, match="exceeds"):
        finetune_subsets(y[:100], 0.8, 7, 101)


def test_base_dataset_must_have_the_same_image_side():
    with pytest.raises(ValueError, match="pixel images"):
        RotationFusionConfig(dataset="mnist", finetune_base_dataset="digits")
    assert RotationFusionConfig(dataset="fashion_mnist", finetune_base_dataset="mnist").saves_base
    assert not RotationFusionConfig().saves_base


def _images(folder):
    """A fake ``images`` asset: 'mnist' pixels in [0, 100), 'fashion_mnist' in [150,
    250), 30 rows per class, so every row says which dataset it came from."""
    rng = np.random.default_rng(0)
    for name, low in (("mnist", 0), ("fashion_mnist", 150)):
        x = rng.integers(low, low + 100, (300, 784)).astype(np.uint8)
        io.save_arrays(folder, name, {"x": x, "y": np.repeat(np.arange(10), 30)})
    return folder


def _run(tmp_path, **keys) -> Run:
    cfg = RotationFusionConfig(
        dataset="fashion_mnist",
        max_rows=0,
        dim=8,
        heads=2,
        depth=1,
        epochs=1,
        finetune_epochs=1,
        alphas=[0.0, 0.5, 1.0],
        invariance_rows=8,
        **keys,
    )
    return Run(SPEC, cfg, (0,), tmp_path, {"images": _images(tmp_path)})


NEW_REGIME = {"finetune_base_dataset": "mnist", "finetune_rows": 80, "finetune_batch_size": 8}


def test_prepare_adds_the_base_parts_to_the_finetune_tasks_only(tmp_path):
    run = _run(tmp_path, **NEW_REGIME)
    tasks, info = method.prepare(run, tmp_path / "raw")
    assert set(tasks) == {"seeds-p0", "finetune-p0"}
    assert set(tasks["seeds-p0"]) == {f"{k}_{p}" for k in "xy" for p in ("train", "val", "test")}
    ft = tasks["finetune-p0"]
    assert set(ft) == set(tasks["seeds-p0"]) | {
        "x_base_train",
        "y_base_train",
        "x_base_val",
        "y_base_val",
    }
    assert ft["x_base_train"].max() < 100 and ft["x_train"].min() >= 150
    assert len(ft["y_base_train"]) == info["finetune_base"]["sizes"]["mnist"] == 210
    # the default: one set of arrays for every task, as before
    tasks, info = method.prepare(_run(tmp_path), tmp_path / "raw")
    assert tasks["seeds-p0"] is tasks["finetune-p0"] and "finetune_base" not in info


def _record_fits(monkeypatch):
    calls = []

    def fake_fit(net, x, y, val, lr, epochs, seed, resume_dir, code, batch_size, trainer):
        calls.append(
            {
                "x": x,
                "n": len(y),
                "val": len(val[1]),
                "lr": lr,
                "epochs": epochs,
                "code": code,
                "batch": batch_size,
                "seed": seed,
            }
        )
        return []

    monkeypatch.setattr(method, "_fit", fake_fit)
    return calls


def _finetune_unit():
    return Unit("finetune-p0", "endpoints", 0, {"regime": "finetune", "pair": 0})


def test_new_finetune_regime_trains_the_base_elsewhere_and_the_tunes_on_subsets(
    tmp_path, monkeypatch
):
    run = _run(tmp_path, **NEW_REGIME)
    data = method.prepare(run, tmp_path / "raw")[0]["finetune-p0"]
    calls = _record_fits(monkeypatch)
    trained = method.train_unit(run, _finetune_unit(), data, tmp_path / "resume", print)
    base, fa, fb = calls
    assert base["code"] == 2 and base["n"] == len(data["y_base_train"])
    assert base["val"] == len(data["y_base_val"]) and base["x"].max() < 100 / 255
    assert base["batch"] == run.cfg.batch_size and base["epochs"] == run.cfg.epochs
    assert fa["n"] + fb["n"] == 80 and min(fa["n"], fb["n"]) > 20
    assert fa["batch"] == fb["batch"] == 8 and fa["lr"] == run.cfg.finetune_lr
    assert fa["x"].min() >= 150 / 255 and fa["val"] == len(data["y_val"])
    # the subsets are disjoint rows of the fine-tune task
    rows_a, rows_b = finetune_subsets(data["y_train"], 0.8, 0, 80)
    x_train = torch.from_numpy(data["x_train"]).float() / 255
    assert torch.equal(fa["x"], x_train[rows_a]) and torch.equal(fb["x"], x_train[rows_b])
    assert len(np.intersect1d(rows_a, rows_b)) == 0
    assert {k.split(".")[0] for k in trained.state} == {"a", "b", "base"}


def test_default_finetune_regime_is_unchanged(tmp_path, monkeypatch):
    """Defaults: the base trains on the fine-tune task's own rows at ``batch_size``, the
    fine-tunes on the legacy split of every training row, nothing but a and b saved."""
    run = _run(tmp_path)
    data = method.prepare(run, tmp_path / "raw")[0]["finetune-p0"]
    calls = _record_fits(monkeypatch)
    trained = method.train_unit(run, _finetune_unit(), data, tmp_path / "resume", print)
    base, fa, fb = calls
    x_train = torch.from_numpy(data["x_train"]).float() / 255
    assert torch.equal(base["x"], x_train) and base["val"] == len(data["y_val"])
    rows_a, rows_b = _legacy_subsets(data["y_train"], run.cfg.finetune_skew, 0)
    assert torch.equal(fa["x"], x_train[rows_a]) and torch.equal(fb["x"], x_train[rows_b])
    assert {c["batch"] for c in calls} == {run.cfg.batch_size}
    assert {k.split(".")[0] for k in trained.state} == {"a", "b"}


def test_new_regime_and_residual_matching_end_to_end(tmp_path):
    """A real (tiny) fine-tune unit with the new keys and ``resid_match``: the endpoints
    report every matching metric, the residual one and the distances to the base, the same
    at int8; the matched fusions keep their endpoints at alpha 0 and 1."""
    from reprolab.core import quant

    run = _run(tmp_path, resid_match="permutation", **NEW_REGIME)
    data = method.prepare(run, tmp_path / "raw")[0]["finetune-p0"]
    unit = _finetune_unit()
    trained = method.train_unit(run, unit, data, tmp_path / "resume", lambda m: None)
    bundle = method.restore(run, unit, data, trained.state)
    assert not any(k.startswith("members.base") for k in bundle.state_dict())
    out = method.evaluate_unit(run, bundle, unit, data, trained.history)
    extra = {"resid_fixed_frac", "dist_a_base_rel", "dist_b_base_rel"}
    assert set(SPEC.variant_metrics("endpoints")) | extra == set(out)
    assert all(math.isfinite(v) for v in out.values())
    assert out["dist_a_base_rel"] > 0 and out["dist_b_base_rel"] > 0
    # the same weight-side numbers at train time (what a probe reads, no evaluation)
    assert set(trained.signals) == set(bundle.stats)
    assert trained.signals == pytest.approx({k: out[k] for k in trained.signals}, rel=1e-6)
    q = quant.quantize(bundle, "int8_dynamic")
    q_out = method.evaluate_unit(run, q, unit, data, trained.history)
    assert {k: q_out[k] for k in bundle.stats} == bundle.stats
    x, _ = method.datasets.part_tensors(data, "test")
    m = bundle.members
    with torch.no_grad():
        for how in ("perm", "rotation"):
            assert torch.allclose(bundle.fused(how, 0.0)(x), m["a"](x), atol=1e-5)
            assert torch.allclose(bundle.fused(how, 1.0)(x), m["b"](x), atol=1e-4)
