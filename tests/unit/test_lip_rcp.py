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


# ---------------------------------------------------------------- RSCP+ (Yan et al. 2024)


def test_rscp_plus_matches_the_formula_on_a_hand_computed_case():
    """N = 256 draws, beta = 0.001: b_Hoef = sqrt(ln(1000) / 512) = sqrt(6.907755 / 512)
    = 0.1161538. With q = 0.5 + b_Hoef, Phi^-1(q - b_Hoef) = 0, so at eps / sigma =
    0.25 / 0.5 the cut is Phi(-0.5) = 0.3085375 (normal table). Scores 0.20 / 0.19 / 0.25
    / 0.30 plus b_Hoef: 0.3162 / 0.3062 / 0.3662 / 0.4162, so labels 0, 2, 3 are in."""
    b = cp.hoeffding_bound(256, 0.001)
    assert b == pytest.approx(0.1161538, abs=1e-7)
    q = 0.5 + b
    assert cp.rscp_plus_cut(q, 0.25, 0.5, b) == pytest.approx(0.3085375, abs=1e-7)
    mean = torch.tensor([[0.20, 0.19, 0.25, 0.30]])
    sets = cp.rscp_plus_sets(mean, b, q, 0.25, 0.5, b)
    assert sets.tolist() == [[True, False, True, True]]
    # eps = 0: the cut is q - b_Hoef itself; q - b_Hoef <= 0 (or q = -inf): every label
    assert cp.rscp_plus_cut(0.7, 0.0, 0.5, 0.2) == pytest.approx(0.5)
    assert cp.rscp_plus_cut(0.1, 0.25, 0.5, b) == 0.0
    assert cp.rscp_plus_sets(torch.zeros(2, 3), 0.0, -math.inf, 0.25, 0.5, b).all()
    # empirical Bernstein, V = 0.01, N = 101, beta = 0.002 (ln(2 / beta) = ln 1000):
    # sqrt(2 * 0.01 * 6.907755 / 101) + 7 * 6.907755 / (3 * 100) = 0.0369848 + 0.1611810
    bern = cp.bernstein_bound(torch.tensor([0.01, 0.0]), 101, 0.002)
    assert bern.tolist() == pytest.approx([0.1981657, 0.1611810], abs=1e-6)


@pytest.mark.parametrize("n_mc", [16, 64, 256])
@pytest.mark.parametrize("beta", [0.05, 0.001])
def test_hoeffding_bound_against_exact_binomial_tails(n_mc, beta):
    """The mean of N Bernoulli(p) draws (scores in [0, 1]) exceeds p by b_Hoef, or falls
    short of it by b_Hoef, with probability <= beta: exact binomial tails over a grid of p."""
    from scipy.stats import binom

    b = cp.hoeffding_bound(n_mc, beta)
    for p in np.linspace(0.01, 0.99, 99):
        upper = binom.sf(math.ceil(n_mc * (p + b)) - 1, n_mc, p)  # P(mean >= p + b)
        lower = binom.cdf(math.floor(n_mc * (p - b)), n_mc, p)  # P(mean <= p - b)
        assert upper <= beta and lower <= beta


def test_bernstein_bound_covers_the_smoothed_score_in_simulation():
    """Low-probability classes (the ones RSCP+ adds to a set) have small variance, where
    the empirical Bernstein bound is tighter than Hoeffding's; it still holds: over 20,000
    simulated estimates from N = 64 Bernoulli(p) draws, p - mean > b in <= beta of them."""
    rng = np.random.default_rng(3)
    n_mc, beta, trials = 64, 0.05, 20_000
    for p in (0.02, 0.1, 0.3):
        draws = torch.from_numpy(rng.random((trials, n_mc)) < p).double()
        mean, var = draws.mean(1), draws.var(1, correction=1)
        miss = float((p - mean > cp.bernstein_bound(var, n_mc, beta)).double().mean())
        assert miss <= beta + 3 * math.sqrt(beta * (1 - beta) / trials)
    low = cp.bernstein_bound(torch.tensor([0.0]), 256, 0.001)
    assert float(low) < cp.hoeffding_bound(256, 0.001)


def _rscp_predictors(bound: str, n_mc: int = 256):
    from reprolab.contract import Unit
    from reprolab.methods.lip_rcp.config import LipRCPConfig
    from reprolab.methods.lip_rcp.method import Predictor
    from reprolab.methods.lip_rcp.net import relu_mlp

    torch.manual_seed(0)
    net = relu_mlp(12, 16, 1, 4).eval()
    with torch.no_grad():  # larger weights: confident softmax outputs, not near-uniform
        for layer in net:
            if isinstance(layer, torch.nn.Linear):
                layer.weight *= 4
    gen = torch.Generator().manual_seed(7)
    x = torch.rand(300, 12, generator=gen)
    with torch.no_grad():
        y = net(x).argmax(1)
    flip = torch.rand(300, generator=gen) < 0.05  # a few labels disagree with the net
    y = torch.where(flip, torch.randint(0, 4, (300,), generator=gen), y)
    cfg = LipRCPConfig(n_mc=n_mc, n_mc_plus=n_mc, sigma=0.5, beta=0.01, mc_bound=bound)
    plain = Predictor(net, Unit("t", "rscp", 3), cfg, x[:200], y[:200], 0.0)
    plus = Predictor(net, Unit("t", "rscp_plus", 3), cfg, x[:200], y[:200], 0.0)
    return cfg, net, x[200:], x[:200], y[:200], plain, plus


@pytest.mark.parametrize("bound", ["bernstein", "hoeffding"])
def test_rscp_plus_sets_are_never_smaller_than_rscp_sets(bound):
    """Same seed and draw count: the two see the same Monte-Carlo estimates, RSCP+
    calibrates at alpha - 2 beta (a lower threshold) and adds b to the score, so its set
    holds every label of RSCP's at every point, and is larger on average."""
    cfg, _, x_test, *_, plain, plus = _rscp_predictors(bound)
    assert plus.q <= plain.q
    for eps in (0.0, 0.25):
        a, b = plain.sets(x_test, eps), plus.sets(x_test, eps)
        assert (b | ~a).all()  # a subset of b, label by label
        assert float(b.sum(1).float().mean()) > float(a.sum(1).float().mean())
        assert not b.all() or eps > 0  # at eps = 0 not every label: the test can tell


def test_rscp_plus_predictor_is_the_formula():
    """The Predictor's RSCP+ sets, recomputed from its Monte-Carlo draws (the same
    generator) with the cp functions written from Yan et al.'s formula."""
    cfg, net, x_test, x_cal, y_cal, _, plus = _rscp_predictors("bernstein")
    sets = plus.sets(x_test, 0.25)
    gen = torch.Generator().manual_seed(10_007 * 3 + 1)
    n = cfg.n_mc_plus
    s_cal = cp.true_label(cp.smoothed_scores(net, x_cal, cfg.sigma, n, gen), y_cal)
    q = cp.threshold(s_cal.numpy(), cfg.alpha - 2 * cfg.beta)
    assert plus.q == q
    # the generator goes on from the calibration draws to the test draws, as in Predictor
    mean, var = cp.smoothed_scores(net, x_test, cfg.sigma, n, gen, with_var=True)
    b_cal = math.sqrt(math.log(1 / cfg.beta) / (2 * n))
    t = math.log(2 / cfg.beta)
    b = (2 * var * t / n).sqrt() + 7 * t / (3 * (n - 1))
    from scipy.stats import norm

    cut = norm.cdf(norm.ppf(q - b_cal) - 0.25 / cfg.sigma) if q > b_cal else 0.0
    assert (sets == (mean + b >= cut)).all()


def test_rscp_plus_needs_alpha_above_two_beta():
    from pydantic import ValidationError

    from reprolab.methods.lip_rcp.config import LipRCPConfig

    with pytest.raises(ValidationError, match="alpha - 2 beta"):
        LipRCPConfig(alpha=0.1, beta=0.05)
