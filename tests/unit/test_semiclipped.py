"""Semi-Clipped: batch corrections, recall@k and the CLIP loss against independent references."""

from types import SimpleNamespace

import numpy as np
import pytest
import scipy.linalg
import torch

from reprolab.methods.semiclipped import method, pairs, sim


@pytest.fixture
def controls():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(5, 5))
    return rng.normal(size=(200, 5)) @ a + 3.0


def test_center_gives_zero_control_mean(controls):
    m, w = sim.correction(controls, "center")
    np.testing.assert_allclose(((controls - m) @ w).mean(0), 0, atol=1e-10)


def test_scale_gives_unit_control_std(controls):
    m, w = sim.correction(controls, "scale")
    out = (controls - m) @ w
    np.testing.assert_allclose(out.mean(0), 0, atol=1e-10)
    np.testing.assert_allclose(out.std(0), 1, atol=1e-6)


def test_tvn_whitens_controls_like_scipy(controls):
    m, w = sim.correction(controls, "tvn")
    out = (controls - m) @ w
    np.testing.assert_allclose(np.cov(out, rowvar=False, bias=True), np.eye(5), atol=1e-8)
    ref = np.real(scipy.linalg.inv(scipy.linalg.sqrtm(np.cov(controls, rowvar=False, bias=True))))
    np.testing.assert_allclose(w, ref, atol=1e-8)


def test_correct_per_batch_uses_each_batch_controls():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.normal(size=(50, 3)) + 5, rng.normal(size=(50, 3)) * 2 - 4])
    batch = np.repeat([0, 1], 50)
    ctrl = np.tile(np.arange(50) < 30, 2)
    out = sim.correct(x, batch, ctrl, "center")
    for b in (0, 1):
        np.testing.assert_allclose(out[(batch == b) & ctrl].mean(0), 0, atol=1e-5)


def test_recall_at_k_planted_structure_closed_form():
    # g groups of size s placed at orthogonal directions with tiny jitter: every
    # neighbour up to rank s-1 is a relative, so recall@k = min(k, s-1) / min(k, s-1) = 1
    # for k <= s-1 and for k >= s-1 it stays 1; swap one item per group to a wrong
    # label and compare with brute force counting
    g, s = 4, 5
    rng = np.random.default_rng(0)
    emb = np.repeat(np.eye(g), s, axis=0) + 1e-3 * rng.normal(size=(g * s, g))
    labels = np.repeat(np.arange(g), s)
    for k in (1, 2, 4, 6, 10):
        assert sim.recall_at_k(emb, labels, [k])[k] == pytest.approx(1.0)
    # random labels of the same sizes: closed form for k = n-1 (every item is a neighbour)
    n = g * s
    assert sim.recall_at_k(emb, rng.permutation(labels), [n - 1])[n - 1] == pytest.approx(1.0)
    # one mislabelled item per group: brute force
    bad = labels.copy()
    bad[::s] = (bad[::s] + 1) % g
    k = 3
    e = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    vals = []
    for i in range(n):
        d = e @ e[i]
        d[i] = -np.inf
        nn = np.argsort(-d)[:k]
        rel = (bad == bad[i]).sum() - 1
        vals.append((bad[nn] == bad[i]).sum() / min(k, rel))
    assert sim.recall_at_k(emb, bad, [k])[k] == pytest.approx(np.mean(vals))


def test_clip_loss_matches_direct_computation():
    rng = np.random.default_rng(0)
    a, b, t = rng.normal(size=(6, 4)), rng.normal(size=(6, 4)), 0.2
    an = a / np.linalg.norm(a, axis=1, keepdims=True)
    bn = b / np.linalg.norm(b, axis=1, keepdims=True)
    s = an @ bn.T / t

    def xent(m):
        return np.mean(np.log(np.exp(m).sum(1)) - np.diag(m))

    ref = 0.5 * (xent(s) + xent(s.T))
    got = float(pairs.clip_loss(torch.tensor(a), torch.tensor(b), t))
    assert got == pytest.approx(ref, rel=1e-9)


def test_pea_bank_corrections_match_their_kind():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 3)) * 2 + 1
    batch = np.zeros(60, int)
    ctrl = np.arange(60) < 40
    means, maps = sim.pea_bank(x, batch, ctrl, 6, 0.5, 0.0, rng)
    assert means.shape == (1, 6, 3) and maps.shape == (1, 6, 3, 3)
    # every mean is the mean of a subset of the controls: inside their bounding box
    assert np.all(means[0] >= x[ctrl].min(0)) and np.all(means[0] <= x[ctrl].max(0))


#: the simulator's fields of the config, in the order the tests below give them
SIM_FIELDS = (
    "n_pathways", "perts_per_pathway", "n_batches", "n_controls", "reps", "latent",
    "tx_dim", "img_dim", "noise", "tx_weak_dims", "tx_weak_gain",
)  # fmt: skip


def world(*values, **named) -> SimpleNamespace:
    """The simulator's settings (what it reads off the config), positionally."""
    settings = {"tx_weak_dims": 0, "tx_weak_gain": 1.0}
    settings.update(zip(SIM_FIELDS[: len(values)], values, strict=True), **named)
    return SimpleNamespace(**settings)


def test_simulator_is_seeded_and_controls_have_no_pathway():
    a = sim.simulate(3, world(3, 4, 2, 5, 2, 4, 6, 5, 1.0))
    b = sim.simulate(3, world(3, 4, 2, 5, 2, 4, 6, 5, 1.0))
    np.testing.assert_array_equal(a["tx"], b["tx"])
    assert np.all(a["pathway"][a["pert"] < 0] == -1)
    assert len(a["tx"]) == 2 * (5 + 12 * 2)


@pytest.mark.parametrize("variant", ["semiclipped_pea", "joint_clip"])
def test_a_resumed_unit_draws_and_ends_as_a_straight_one(tmp_path, variant):
    """The weak pairs (and PEA banks) come from one generator carried across epochs; its
    state travels in the checkpoint, so stopping after 2 epochs and resuming gives the
    straight run's weights and history bit for bit."""
    from reprolab.contract import Run, Unit
    from reprolab.methods.semiclipped import SPEC

    small = {**SPEC.test_overrides, "epochs": 4, "pbmc_splits": 0}
    cfg = SPEC.config_model(**small)
    run = Run(spec=SPEC, cfg=cfg, seeds=(0,), root=tmp_path, assets={})
    tasks, _ = method.prepare(run, tmp_path / "raw")
    unit = Unit("sim0", variant, 0, params={"setting": "sim"})
    straight = method.train_unit(run, unit, tasks["sim0"], tmp_path / "a", print)
    stopped = SPEC.config_model(**{**small, "epochs": 2})
    stopped_run = Run(spec=SPEC, cfg=stopped, seeds=(0,), root=tmp_path, assets={})
    method.train_unit(stopped_run, unit, tasks["sim0"], tmp_path / "b", print)
    resumed = method.train_unit(run, unit, tasks["sim0"], tmp_path / "b", print)
    assert [h["epoch"] for h in resumed.history] == [0, 1, 2, 3]
    assert resumed.history == straight.history
    for key, value in straight.state.items():
        assert torch.equal(value, resumed.state[key]), key


def test_weak_dims_reach_the_image_side_not_the_expression_side():
    """With tx_weak_dims, the last latent dimensions are recoverable from the images but
    hardly from expression (least squares, sklearn's R^2); without it, the same draws."""
    from sklearn.linear_model import LinearRegression

    args = (4, 6, 2, 8, 2, 6, 20, 20, 0.3)
    plain = sim.simulate(7, world(*args))
    again = sim.simulate(7, world(*args, tx_weak_dims=0, tx_weak_gain=0.1))
    assert all(np.array_equal(plain[k], again[k]) for k in plain)  # off: bit-identical
    weak = sim.simulate(7, world(*args, tx_weak_dims=3, tx_weak_gain=0.05))
    assert np.array_equal(weak["img"], plain["img"])  # the image side is untouched
    # the latent behind each non-control sample, rebuilt from the seeded draws
    rng = np.random.default_rng(7)
    centers = rng.normal(size=(4, 6))
    pathway = np.repeat(np.arange(4), 6)
    z = centers[pathway] + 0.6 * rng.normal(size=(24, 6))
    keep = (weak["pert"] >= 0) & (weak["batch"] == 0)
    target = z[weak["pert"][keep]][:, 3:]  # the weak dimensions

    def r2(x):
        return LinearRegression().fit(x, target).score(x, target)

    assert r2(weak["img"][keep]) > 0.9
    assert r2(weak["tx"][keep]) < r2(weak["img"][keep]) - 0.3
    assert r2(plain["tx"][keep]) > 0.9  # without the option expression sees them too


def test_probe_folds_keep_each_perturbation_whole():
    groups = np.repeat(np.arange(13), 3)
    folds = sim.probe_folds(groups, 5, seed=0)
    assert set(folds) == set(range(5))
    for g in range(13):
        assert len(set(folds[groups == g])) == 1
    assert len(set(sim.probe_folds(np.repeat([0, 1, 2], 2), 5, seed=0))) == 3  # <= groups


def _closed_form_ridge(x, y, folds, alpha):
    """The reference: ridge in closed form, (A'A + alpha I)^-1 A'(y - mean y) on features
    standardised with the fitting folds' mean and (population) std, plus the mean."""
    pred = np.empty_like(y, dtype=np.float64)
    for f in np.unique(folds):
        fit, out = folds != f, folds == f
        mu, sd = x[fit].mean(0), x[fit].std(0)
        a, y_mean = (x[fit] - mu) / sd, y[fit].mean(0)
        w = np.linalg.solve(a.T @ a + alpha * np.eye(a.shape[1]), a.T @ (y[fit] - y_mean))
        pred[out] = (x[out] - mu) / sd @ w + y_mean
    return pred


def test_ridge_probes_match_the_closed_form():
    """Cross-fitted R^2 and accuracy against ridge in closed form on the same folds
    (R^2 averaged over targets; accuracy from the argmax of one-hot predictions)."""
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(30), 4)
    x = rng.normal(size=(120, 7)) * rng.uniform(0.5, 3, size=7) + 2.0
    y = x[:, :3] @ rng.normal(size=(3, 2)) + rng.normal(size=(120, 2))
    labels = (x[:, 0] + 0.5 * rng.normal(size=120) > 2).astype(int) + (x[:, 1] > 2)
    folds = sim.probe_folds(groups, 5, seed=3)
    pred = _closed_form_ridge(x, y, folds, 2.0)
    r2 = (1 - ((y - pred) ** 2).sum(0) / ((y - y.mean(0)) ** 2).sum(0)).mean()
    assert sim.probe_r2(x, y, folds, alpha=2.0) == pytest.approx(r2, abs=1e-10)
    onehot = np.eye(3)[labels]
    acc = (_closed_form_ridge(x, onehot, folds, 2.0).argmax(1) == labels).mean()
    assert sim.probe_accuracy(x, labels, folds, alpha=2.0) == pytest.approx(acc)


def _premise(tmp_path, gain: float) -> dict:
    from reprolab.contract import Run
    from reprolab.methods.semiclipped import SPEC

    cfg = SPEC.config_model(
        n_sims=3, perts_per_pathway=16, pbmc_splits=0, tx_weak_dims=4, tx_weak_gain=gain
    )
    _, meta = method.prepare(Run(spec=SPEC, cfg=cfg, seeds=(0,), root=tmp_path), tmp_path)
    return meta["premise_check"]


def test_premise_check_tells_a_weak_expression_side_from_an_even_one(tmp_path):
    """The prepare stage's premise check: with tx_weak_gain 1 both sides recover the
    'weak' dimensions alike (within 0.1 R^2 on every draw), so the check fails; at gain
    0.1 the image side leads by more than PREMISE_MARGIN on every draw and it holds. The
    values agree with an sklearn probe rebuilt from the simulator's latent."""
    from sklearn.linear_model import Ridge
    from sklearn.metrics import r2_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    even, weak = _premise(tmp_path, 1.0), _premise(tmp_path, 0.1)
    assert even["sim_target"] == weak["sim_target"] == "latent dimensions 4-7"
    for task, c in even["tasks"].items():
        assert abs(c["image_r2"] - c["expression_r2"]) < 0.1, task
        assert weak["tasks"][task]["image_r2"] == c["image_r2"]  # the image side is untouched
    assert not even["sim_holds"]
    for c in weak["tasks"].values():
        assert c["image_r2"] > 0.8 and c["image_r2"] - c["expression_r2"] > method.PREMISE_MARGIN
        assert c["raw_image_r2"] - c["raw_expression_r2"] > method.PREMISE_MARGIN
    assert weak["sim_holds"] and weak["sim_min_lead"] > method.PREMISE_MARGIN

    # sim0 at gain 0.1, rebuilt independently of method.premise_probe_sim
    d = sim.simulate(0, world(8, 16, 6, 48, 2, 8, 32, 24, 1.0, 4, 0.1))
    rng = np.random.default_rng(1)
    held = rng.permutation(128)[:38]
    test_b = rng.permutation(6)[:2]
    rows = (d["pert"] >= 0) & ~np.isin(d["pert"], held) & ~np.isin(d["batch"], test_b)
    target = d["z"][d["pert"][rows]][:, 4:]
    folds = sim.probe_folds(d["pert"][rows], method.PROBE_FOLDS, 2)
    x = d["tx"][rows].astype(np.float64)
    pred = np.empty_like(target)
    for f in np.unique(folds):
        fit, out = folds != f, folds == f
        model = make_pipeline(StandardScaler(), Ridge(alpha=method.PROBE_ALPHA))
        pred[out] = model.fit(x[fit], target[fit]).predict(x[out])
    assert weak["tasks"]["sim0"]["raw_expression_r2"] == pytest.approx(
        r2_score(target, pred), abs=1e-4
    )
