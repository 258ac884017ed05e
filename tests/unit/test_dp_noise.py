"""dp_noise: the noise family, the Renyi objective, the optimiser and the accountants,
against closed forms, brute-force sums and the independent dp-accounting library."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import integrate, stats
from scipy.special import logsumexp

from reprolab.methods.dp_noise import accounting as acc
from reprolab.methods.dp_noise import noise

SIGMA = 5.0


def brute_pmf(p: np.ndarray, fam: noise.Family, half_width: int) -> tuple[np.ndarray, np.ndarray]:
    """P(i) for |i| <= half_width straight from Definition 3.3 (no closed forms)."""
    i = np.arange(-half_width, half_width + 1)
    a = np.abs(i)
    values = np.where(a < fam.N, p[np.minimum(a, fam.N)], p[fam.N] * fam.r ** (a - fam.N))
    return i, values


@pytest.fixture(scope="module")
def fam() -> noise.Family:
    return noise.Family(N=150, r=0.99, m=5)


@pytest.fixture(scope="module")
def optimized(fam):
    p0 = noise.initial_pmf(SIGMA, fam, jitter=0.01, seed=3)
    result = noise.optimize(p0, fam, SIGMA, k=10, delta=1e-6, iterations=60, alpha_every=5)
    return p0, result


# ------------------------------------------------------------------ the family


def test_closed_forms_of_the_family_match_brute_force_sums(fam):
    p = noise.initial_pmf(SIGMA, fam)
    i, values = brute_pmf(p, fam, fam.N + 6000)  # r^6000 ~ 1e-26: the tail is summed
    assert values.sum() == pytest.approx(float(noise.total_mass(torch.tensor(p), fam)), rel=1e-12)
    # Var of the piecewise-constant density: bin i is uniform on ((i-1/2)D, (i+1/2)D)
    delta = fam.delta
    brute_var = np.sum(values * (delta * i) ** 2) + delta**2 / 12
    assert brute_var == pytest.approx(float(noise.variance(torch.tensor(p), fam)), rel=1e-10)


def test_initial_pmf_is_normalised_positive_and_meets_the_variance(fam):
    for jitter, seed in ((0.0, 0), (0.05, 7)):
        p = torch.tensor(noise.initial_pmf(SIGMA, fam, jitter=jitter, seed=seed))
        assert (p > 0).all()
        assert float(noise.total_mass(p, fam)) == pytest.approx(1.0, abs=1e-12)
        var = float(noise.variance(p, fam))
        assert var <= SIGMA**2 and var == pytest.approx(SIGMA**2, rel=1e-9)


def test_laplace_start_matches_scipy_and_meets_the_variance(fam):
    b = SIGMA / math.sqrt(2.0)
    p = noise.laplace_like(SIGMA, fam)
    edges = (np.arange(fam.N) + 0.5) * fam.delta
    want = np.diff(stats.laplace(scale=b).cdf(edges))  # bins 1..N-1
    assert p[1 : fam.N] == pytest.approx(want, rel=1e-9, abs=1e-300)
    assert p[0] == pytest.approx(stats.laplace(scale=b).cdf(edges[0]) * 2 - 1, rel=1e-12)
    for jitter, seed in ((0.0, 0), (0.05, 7)):
        q = torch.tensor(noise.initial_pmf(SIGMA, fam, jitter, seed, start="laplace"))
        assert (q > 0).all()
        assert float(noise.total_mass(q, fam)) == pytest.approx(1.0, abs=1e-12)
        assert float(noise.variance(q, fam)) == pytest.approx(SIGMA**2, rel=1e-9)
    # a different shape from the Gaussian start, at the same variance: more mass at 0
    g = noise.initial_pmf(SIGMA, fam)
    assert noise.initial_pmf(SIGMA, fam, start="laplace")[0] > g[0]
    with pytest.raises(ValueError, match="unknown start 'cauchy'"):
        noise.initial_pmf(SIGMA, fam, start="cauchy")


def test_optimised_pmf_keeps_the_constraints_and_is_symmetric(fam, optimized):
    _, result = optimized
    p = result.p
    assert (p > 0).all()
    assert float(noise.total_mass(p, fam)) == pytest.approx(1.0, abs=1e-10)
    assert float(noise.variance(p, fam)) == pytest.approx(SIGMA**2, rel=1e-8)
    window = noise.log_window(torch.log(p), fam, fam.m)
    assert torch.equal(window, window.flip(0))  # P(i) = P(-i)
    upper, lower = noise.pmf_pair(p.numpy(), fam, fam.m)
    assert upper.sum() == pytest.approx(1.0, abs=1e-10)
    assert lower.sum() == pytest.approx(1.0, abs=1e-10)


def test_pmf_pair_matches_an_explicit_long_window():
    fam = noise.Family(N=12, r=0.6, m=3)  # fast tail: a few hundred bins are exhaustive
    rng = np.random.default_rng(1)
    p = rng.uniform(0.5, 1.0, fam.N + 1)
    p /= float(noise.total_mass(torch.tensor(p), fam))
    i, values = brute_pmf(p, fam, 400)
    P = dict(zip(i.tolist(), values, strict=True))
    for t in (1, 2, 3):
        upper, lower = noise.pmf_pair(p, fam, t)
        brute_losses = {}
        for x in i[t:]:  # outcome x: P(x) vs P(x - t)
            loss = round(math.log(P[x] / P[x - t]), 9)
            brute_losses[loss] = brute_losses.get(loss, 0.0) + P[x]
        ours = {}
        for u, lo in zip(upper, lower, strict=True):
            loss = round(math.log(u / lo), 9)
            ours[loss] = ours.get(loss, 0.0) + u
        assert set(ours) == set(brute_losses)
        for loss, mass in ours.items():
            assert mass == pytest.approx(brute_losses[loss], rel=1e-9, abs=1e-300)


# ------------------------------------------------------------------ Renyi objective


def test_log_g_matches_a_brute_force_sum():
    fam = noise.Family(N=10, r=0.5, m=3)
    rng = np.random.default_rng(2)
    p = rng.uniform(0.2, 1.0, fam.N + 1)
    p /= float(noise.total_mass(torch.tensor(p), fam))
    i, values = brute_pmf(p, fam, 300)  # r^290 ~ 1e-87: the rest of the sum is negligible
    logs = np.log(values)
    for alpha in (1.5, 4.0, 12.0):
        ours = noise.log_g(torch.log(torch.tensor(p)), fam, alpha).numpy()
        for t in range(1, fam.m + 1):
            brute = logsumexp(alpha * logs[t:] + (1 - alpha) * logs[:-t])
            assert ours[t - 1] == pytest.approx(brute, rel=1e-10)


@pytest.mark.parametrize("alpha", [2.0, 5.0, 10.0])
def test_renyi_dp_of_a_binned_gaussian_is_the_closed_form(alpha):
    """Binning is post-processing, so the binned D_alpha is at most alpha mu^2/(2 sigma^2)
    (mu = s = 1), and with 40 bins per sigma it is within 0.1% of it."""
    sigma = 2.0
    fam = noise.Family(N=800, r=0.99, m=20)  # Delta = 0.05, grid of 20 sigma
    p = torch.tensor(noise.gaussian_like(sigma, fam))
    ours = noise.renyi_dp(p, fam, alpha)
    closed = alpha / (2 * sigma**2)
    assert ours <= closed * (1 + 1e-12)
    assert ours == pytest.approx(closed, rel=1e-3)
    assert acc.gaussian_rdp(alpha, sigma) == closed


def test_laplace_rdp_closed_form_matches_numerical_integration():
    b = 1.3
    dens = stats.laplace(scale=b).pdf
    shifted = stats.laplace(loc=1.0, scale=b).pdf
    for alpha in (1.5, 3.0, 8.0):
        val, _ = integrate.quad(
            lambda x, a=alpha: dens(x) ** a * shifted(x) ** (1 - a),
            -60,
            60,
            points=[0, 1],
            limit=200,
        )
        assert acc.laplace_rdp(alpha, b) == pytest.approx(math.log(val) / (alpha - 1), rel=1e-7)


# ------------------------------------------------------------------ optimiser


def test_a_tiny_optimisation_does_not_increase_the_objective(fam, optimized):
    p0, result = optimized
    bounds = [h["eps_moments"] for h in result.history]
    # every p step and every (safeguarded) alpha step is a descent step of Eq. 25
    assert all(b <= a + 1e-9 for a, b in zip(bounds, bounds[1:], strict=False))
    alpha = result.history[1]["alpha"]  # at one fixed order: p is better than p0
    assert noise.renyi_dp(result.p, fam, alpha) < noise.renyi_dp(torch.tensor(p0), fam, alpha)


def test_fixed_alpha_descent_is_monotone_and_beats_the_gaussian(fam):
    p0 = noise.initial_pmf(SIGMA, fam)
    result = noise.optimize(
        p0, fam, SIGMA, k=10, delta=1e-6, iterations=40, alpha_every=10**6, log_every=1
    )
    rdp = [h["rdp"] for h in result.history[1:]]
    assert all(b <= a for a, b in zip(rdp, rdp[1:], strict=False))
    assert rdp[-1] < acc.gaussian_rdp(result.alpha, SIGMA)  # the Gaussian of equal variance


def test_min_norm_direction_decreases_every_tied_row():
    G = torch.tensor([[1.0, 0.2, -0.3], [0.1, 1.0, 0.4], [-0.2, 0.5, 1.0]], dtype=torch.float64)
    d = noise._min_norm(G)
    # optimality on the simplex: <g_i, d> >= |d|^2 for every row (so -d descends on all)
    assert ((G @ d) >= d @ d - 1e-7).all()
    assert (G @ d > 0).all()


# ------------------------------------------------------------------ accountants


def test_eps_for_delta_inverts_randomized_response_exactly():
    eps0 = 1.2
    p_hi = math.exp(eps0) / (1 + math.exp(eps0))
    pld = acc.Pld(offset=-1, pmf=np.array([1 - p_hi, 0.0, p_hi]), h=eps0)
    for eps in (0.0, 0.3, 1.0):
        delta = p_hi * (1 - math.exp(eps - eps0))
        assert acc.delta_for_eps(pld, eps) == pytest.approx(delta, rel=1e-12)
        assert acc.eps_for_delta(pld, delta) == pytest.approx(eps, abs=1e-12)


def test_gaussian_closed_form_against_scipy_and_dp_accounting():
    for k in (1, 10, 50):
        eps = acc.gaussian_eps(SIGMA, k, 1e-6)
        mu = math.sqrt(k) / SIGMA
        delta = stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(
            -eps / mu - mu / 2
        )
        assert delta == pytest.approx(1e-6, rel=1e-6)
        assert acc.reference_eps_gaussian(SIGMA, k, 1e-6, 1e-4) == pytest.approx(eps, abs=2e-4)


def test_own_fft_accountant_brackets_the_gaussian_closed_form():
    h = 1e-4
    for k in (1, 10, 100):
        exact = acc.gaussian_eps(SIGMA, k, 1e-6)
        upper = acc.eps_pld(acc.pld_gaussian(SIGMA, h), k, 1e-6)
        lower = acc.eps_pld(acc.pld_gaussian(SIGMA, h, pessimistic=False), k, 1e-6, False)
        assert lower - 1e-9 <= exact <= upper + 1e-9
        assert upper - lower <= 2 * k * h + 1e-9


def test_own_laplace_accountant_agrees_with_dp_accounting():
    b = SIGMA / math.sqrt(2)
    h = 1e-4
    for k in (1, 10, 100):
        ours = acc.eps_pld(acc.pld_laplace(b, h), k, 1e-6)
        lower = acc.eps_pld(acc.pld_laplace(b, h, pessimistic=False), k, 1e-6, False)
        ref = acc.reference_eps_laplace(b, k, 1e-6, h)
        assert lower - 1e-6 <= ref <= ours + 1e-6
        assert ours - ref <= k * h + 1e-6
    # one use: pure DP at eps0 = 1/b once delta is below the mass that needs it
    assert acc.eps_pld(acc.pld_laplace(b, h), 1, 1e-9) == pytest.approx(1 / b, abs=h)


def test_own_pmf_accountant_agrees_with_dp_accounting(fam, optimized):
    _, result = optimized
    upper, lower = noise.pmf_pair(result.p.numpy(), fam, fam.m)
    for k in (1, 10, 40):
        ours = acc.eps_pld(acc.pld_from_pmfs(upper, lower, 1e-4), k, 1e-6)
        ref = acc.reference_eps_pmfs(upper, lower, k, 1e-6, 1e-4)
        assert ours == pytest.approx(ref, abs=1e-4)


def test_zero_probabilities_become_infinite_loss():
    upper = np.array([0.5, 0.5, 0.0])
    lower = np.array([0.0, 0.5, 0.5])
    pld = acc.pld_from_pmfs(upper, lower, 1e-3)
    assert pld.inf_mass == pytest.approx(0.5)
    assert math.isinf(acc.eps_pld(pld, 2, 0.7))  # 1 - 0.5^2 = 0.75 > 0.7
    assert math.isfinite(acc.eps_pld(pld, 2, 0.8))


def test_each_optimised_variant_is_algorithm_3_from_its_own_start(tmp_path):
    """``optimized`` is the run from the paper's discretised Gaussian (Algorithm 2),
    ``optimized_from_laplace`` the run from the equal-variance Laplace (redone here by
    hand): no selection between them."""
    from reprolab.contract import Run, Unit
    from reprolab.methods.dp_noise import SPEC, method
    from reprolab.methods.dp_noise.config import DPNoiseConfig

    cfg = DPNoiseConfig(
        compositions=[3],
        n_bins=150,
        bins_per_sensitivity=5,
        iterations=30,
        from_laplace_compositions=[3],
    )
    data = {"sigma": np.array([SIGMA]), "k": np.array([3]), "delta": np.array([1e-6])}
    run = Run(SPEC, cfg, (2,), tmp_path)
    fam = noise.Family(N=150, r=cfg.tail_ratio, m=5)
    ends = {}
    for variant, start in (("optimized", "gaussian"), ("optimized_from_laplace", "laplace")):
        unit = Unit("sigma5_k3", variant, 2)
        trained = method.train_unit(run, unit, data, tmp_path, lambda m: None)
        p0 = noise.initial_pmf(SIGMA, fam, cfg.init_jitter, seed=2, start=start)
        r = noise.optimize(p0, fam, SIGMA, 3, 1e-6, iterations=30, alpha_every=cfg.alpha_every)
        assert torch.equal(trained.state["p"], r.p.to(torch.float64)), variant
        ends[variant] = r.p
        model = method.restore(run, unit, data, trained.state)
        assert model.kind == "optimized" and np.array_equal(model.p, r.p.numpy())
    assert not torch.equal(ends["optimized"], ends["optimized_from_laplace"])


def test_the_laplace_started_variant_runs_only_at_its_compositions(tmp_path):
    from reprolab.contract import Run
    from reprolab.methods.dp_noise import SPEC, method
    from reprolab.methods.dp_noise.config import DPNoiseConfig

    def laplace_units(**kw):
        cfg = DPNoiseConfig(compositions=[3, 10, 100], **kw)
        units = method.units(Run(SPEC, cfg, (0, 1), tmp_path), sorted(cfg.tasks()))
        assert sum(u.variant == "optimized" for u in units) == 6  # every task, every seed
        return sorted(
            (u.param["k"], u.seed) for u in units if u.variant == "optimized_from_laplace"
        )

    assert laplace_units() == [(10, 0), (10, 1)]  # default: the k of its claim
    assert laplace_units(from_laplace_compositions=[3, 10, 40]) == [
        (3, 0),
        (3, 1),
        (10, 0),
        (10, 1),
    ]
    assert len(laplace_units(from_laplace_compositions=None)) == 6
    assert laplace_units(from_laplace_compositions=[]) == []
