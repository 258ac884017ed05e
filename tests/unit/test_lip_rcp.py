"""lip_rcp: the Lipschitz certificate, worst-case scores, split-CP threshold and PGD,
each against an independent reference (brute force, a simulation with a known exact
answer, MAPIE's split conformal classifier)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from reprolab.methods.lip_rcp import cp
from reprolab.methods.lip_rcp.net import differentiable, freeze, lip_mlp, lipschitz_bound


def _net(in_dim=12, hidden=8, depth=2, classes=4, iters=3, seed=0):
    torch.manual_seed(seed)
    return freeze(lip_mlp(in_dim, hidden, depth, classes, iters)).eval()


@pytest.mark.parametrize("iters", [1, 3, 25])
def test_lipschitz_bound_holds_on_random_pairs(iters):
    net = _net(in_dim=30, hidden=16, iters=iters)
    gen = torch.Generator().manual_seed(1)
    a = torch.randn(4000, 30, generator=gen)
    b = torch.cat([torch.randn(2000, 30, generator=gen), a[2000:] + 1e-2 * torch.randn(2000, 30)])
    with torch.no_grad():
        ratio = (net(a) - net(b)).norm(dim=1) / (a - b).norm(dim=1)
    assert float(ratio.max()) <= 1.0 + 1e-5
    assert lipschitz_bound(net) <= 1.0 + 1e-5
    if iters == 25:  # Bjorck has converged: the layers are (semi-)orthogonal
        for m in net:
            if isinstance(m, torch.nn.Linear):
                s = torch.linalg.svdvals(m.weight)
                assert torch.allclose(s, torch.ones_like(s), atol=1e-3)


@pytest.mark.parametrize("score", cp.SCORES)
def test_worst_case_scores_bound_every_perturbation_in_the_ball(score):
    """Brute force on a tiny net: random points on and inside the eps-sphere, plus PGD
    steps that minimise / maximise each class's score, never beat s_bar."""
    net = _net(in_dim=4, hidden=4, depth=1, classes=3, iters=20, seed=3)
    temp, eps = 0.5, 0.3
    gen = torch.Generator().manual_seed(2)
    x = torch.rand(20, 4, generator=gen)
    with torch.no_grad():
        bound = cp.worst_case_scores(net(x), temp, eps, score)
        clean = cp.lac_scores(net(x), temp, score)
    assert (bound >= clean - 1e-7).all()
    d = torch.randn(20, 5000, 4, generator=gen)
    d = d / d.norm(dim=-1, keepdim=True) * eps * torch.rand(20, 5000, 1, generator=gen).sqrt()
    with torch.no_grad():
        s = cp.lac_scores(net((x[:, None] + d).reshape(-1, 4)), temp, score).reshape(20, 5000, 3)
    assert (s.amax(1) <= bound + 1e-6).all()
    for y in range(3):  # gradient ascent on s(., y) (no box: the bound is on the ball)
        adv = x.clone()
        for _ in range(30):
            adv.requires_grad_(True)
            g = torch.autograd.grad(cp.lac_scores(net(adv), temp, score)[:, y].sum(), adv)[0]
            with torch.no_grad():
                adv = adv + 0.05 * g / g.norm(dim=1, keepdim=True).clamp_min(1e-12)
                delta = adv - x
                adv = x + delta * torch.clamp(eps / delta.norm(dim=1, keepdim=True), max=1)
        with torch.no_grad():
            assert (cp.lac_scores(net(adv), temp, score)[:, y] <= bound[:, y] + 1e-6).all()


def test_sigmoid_score_sets_are_the_sigmoid_sets():
    """The sigmoid score is computed in logit space: the same sets as thresholding
    sigmoid(f / T) itself (float64, where nothing saturates), clean and worst case; the
    worst case moves only the class's own logit, by the radius."""
    gen = torch.Generator().manual_seed(5)
    logits = torch.randn(400, 5, generator=gen, dtype=torch.float64) * 2
    y = torch.randint(0, 5, (400,), generator=gen)
    temp, radius, alpha = 0.7, 0.3, 0.1
    mine = cp.lac_scores(logits[:200], temp, "sigmoid")
    q = cp.threshold(cp.true_label(mine, y[:200]).numpy(), alpha)
    ref = torch.sigmoid(logits / temp)
    q_ref = cp.threshold(cp.true_label(ref[:200], y[:200]).numpy(), alpha)
    assert q_ref == pytest.approx(1 / (1 + math.exp(-q)))
    assert ((cp.lac_scores(logits[200:], temp, "sigmoid") >= q) == (ref[200:] >= q_ref)).all()
    worst = cp.worst_case_scores(logits[200:], temp, radius, "sigmoid") >= q
    assert (worst == (torch.sigmoid((logits[200:] + radius) / temp) >= q_ref)).all()
    with pytest.raises(ValueError, match="unknown LAC score 'hinge'"):
        cp.lac_scores(logits, temp, "hinge")


def test_threshold_matches_exact_finite_sample_coverage():
    """With n iid continuous scores, P(S_test >= k-th largest) = k / (n + 1) exactly."""
    rng = np.random.default_rng(0)
    n, alpha, trials = 19, 0.1, 20000
    k = math.ceil((n + 1) * (1 - alpha))
    hits = 0
    for _ in range(trials):
        s = rng.random(n + 1)
        hits += s[-1] >= cp.threshold(s[:-1], alpha)
    assert abs(hits / trials - k / (n + 1)) < 0.01
    scores = rng.random(57)
    ref = 1 - np.quantile(1 - scores, math.ceil(58 * 0.9) / 57, method="inverted_cdf")
    assert cp.threshold(scores, 0.1) == pytest.approx(ref)
    assert cp.threshold(rng.random(5), 0.1) == -math.inf  # k > n: every label is in


def test_vanilla_sets_agree_with_mapie():
    from mapie.classification import SplitConformalClassifier
    from sklearn.base import BaseEstimator, ClassifierMixin

    class Probabilities(ClassifierMixin, BaseEstimator):
        """A 'prefit' classifier whose features are already class probabilities."""

        def fit(self, X, y):
            self.classes_ = np.arange(X.shape[1])
            self.n_features_in_ = X.shape[1]
            return self

        def predict_proba(self, X):
            return np.asarray(X)

        def predict(self, X):
            return np.asarray(X).argmax(1)

    rng = np.random.default_rng(4)
    n, temp = 300, 0.7
    logits = torch.from_numpy(rng.normal(size=(n + 1000, 6)) * 2)
    y = torch.distributions.Categorical(logits=logits).sample()
    p = cp.lac_scores(logits, temp).numpy()
    est = Probabilities().fit(p[:n], y[:n].numpy())
    ref = SplitConformalClassifier(
        estimator=est, confidence_level=0.9, conformity_score="lac", prefit=True
    )
    ref.conformalize(p[:n], y[:n].numpy())
    ref_sets = ref.predict_set(p[n:])[1][:, :, 0]
    q = cp.threshold(cp.true_label(torch.from_numpy(p[:n]), y[:n]).numpy(), 0.1)
    mine = p[n:] >= q
    assert (mine == ref_sets).all()
    assert 0.85 < mine[np.arange(1000), y[n:].numpy()].mean() < 0.95


def test_pgd_increases_the_loss_and_stays_in_the_ball():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    x = torch.rand(200, 10)
    y = torch.randint(0, 3, (200,))

    def loss(a, yb):
        return F.cross_entropy(net(a), yb, reduction="none")

    eps = 0.5
    adv = cp.pgd_l2(loss, x, y, eps, steps=10)
    assert ((adv - x).norm(dim=1) <= eps + 1e-5).all()
    assert adv.min() >= 0 and adv.max() <= 1
    with torch.no_grad():
        before, after = loss(x, y), loss(adv, y)
    assert (after >= before - 1e-6).float().mean() > 0.95
    assert float(after.mean()) > float(before.mean()) + 0.01


def test_rscp_cut_and_int8_surrogate():
    assert cp.rscp_cut(0.3, 0.0, 0.5) == pytest.approx(0.3)
    from scipy.stats import norm

    assert cp.rscp_cut(0.3, 0.25, 0.5) == pytest.approx(norm.cdf(norm.ppf(0.3) - 0.5))
    from reprolab.core import quant

    net = _net(in_dim=12, hidden=8, iters=20)
    qnet = quant.quantize(net, "int8_dynamic")
    sur = differentiable(qnet)
    x = torch.rand(50, 12)
    with torch.no_grad():
        assert torch.allclose(sur(x), qnet(x), atol=0.05)
    assert lipschitz_bound(qnet) == pytest.approx(lipschitz_bound(net), abs=0.05)


def _hkr_classifier(epochs=3):
    from reprolab.methods.lip_rcp.module import Classifier

    torch.manual_seed(0)
    return Classifier(
        in_dim=12,
        n_classes=4,
        hidden=8,
        depth=2,
        lipschitz=True,
        bjorck_iters=3,
        temp=0.1,
        noise=0.0,
        lr=1e-2,
        epochs=epochs,
        seed=0,
        hkr={"alpha": 0.975, "min_margin": 0.6, "temperature": 10.0},
    )


def _hkr_data():
    gen = torch.Generator().manual_seed(1)
    x = torch.rand(96, 12, generator=gen)
    return (x, (x[:, :4].argmax(1)).long()), (x[:32], x[:32, :4].argmax(1).long())


def test_hkr_loss_is_deel_torchlips_with_its_running_mean_carried():
    """The module's loss is deel-torchlip's SoftHKRMulticlassLoss on the raw logits,
    its running mean of |logits| carried from batch to batch in the module's buffer."""
    from deel.torchlip import SoftHKRMulticlassLoss

    module = _hkr_classifier()
    ref = SoftHKRMulticlassLoss(alpha=0.975, min_margin=0.6, temperature=10.0)
    gen = torch.Generator().manual_seed(2)
    for _ in range(3):
        logits = torch.randn(16, 4, generator=gen)
        y = torch.randint(0, 4, (16,), generator=gen)
        mine = module.loss(logits, y)
        theirs = ref(logits, F.one_hot(y, 4))
        assert float(mine) == pytest.approx(float(theirs))
        assert float(module.hkr_mean) == pytest.approx(float(ref.current_mean))
    assert float(module.hkr_mean) != pytest.approx(0.6)  # it moved from its start


def test_hkr_training_resumed_from_its_checkpoint_ends_as_a_straight_run(tmp_path):
    from reprolab.contract import TrainerConfig
    from reprolab.core.training import fit_supervised

    train, val = _hkr_data()
    straight = _hkr_classifier()
    fit_supervised(straight, train, val, 16, 3, 0, tmp_path / "a", trainer=TrainerConfig())
    first = _hkr_classifier()
    fit_supervised(first, train, val, 16, 1, 0, tmp_path / "b", trainer=TrainerConfig())
    resumed = _hkr_classifier()
    fit_supervised(resumed, train, val, 16, 3, 0, tmp_path / "b", trainer=TrainerConfig())
    a, b = straight.state_dict(), resumed.state_dict()
    assert "hkr_mean" in a and float(a["hkr_mean"]) != pytest.approx(0.6)
    for key in a:
        torch.testing.assert_close(b[key], a[key], rtol=0, atol=0)
