"""Clipped SGD: references (closed form vs repeated risk minimisation, root finders,
autograd), operator properties, exact reductions and deterministic runs."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import optimize

from reprolab.contract import Run
from reprolab.core.training import fit_resumable
from reprolab.evidence.judging.claims import Threshold, Where
from reprolab.methods.clipped_sgd import SPEC, method, strategic
from reprolab.methods.clipped_sgd.algorithms import (
    Quadratic,
    clip,
    project_ball,
    simulate_quadratic,
    summarize,
)
from reprolab.methods.clipped_sgd.claims import CLAIMS
from reprolab.methods.clipped_sgd.config import ClippedSGDConfig, task_name
from reprolab.methods.clipped_sgd.module import StrategicClassification, UpdateRule, clip_rows

ZS = (np.random.default_rng(3).random(400) < 0.2).astype(float)


# ---------------------------------------------------------------- the quadratic model


@pytest.mark.parametrize("beta", [0.0, 0.3, 0.6, 0.8])
def test_closed_form_theta_ps_matches_repeated_risk_minimisation(beta):
    """theta_PS = -a b p_hat / (1 - a beta) against brute force: minimise the empirical
    risk of the distribution the current theta induces, numerically, until a fixed point."""
    a, b = 1.1, 0.8
    model = Quadratic(a, b, beta, ZS)
    theta = 3.0
    for _ in range(2000):
        z = b * ZS - beta * theta  # the dataset of D(theta), frozen while minimising

        def risk(u, z=z):
            return float(np.mean((u + a * z) ** 2) / 2)

        new = optimize.minimize_scalar(risk, bracket=(-10, 10), tol=1e-12).x
        if abs(new - theta) < 1e-11:
            break
        theta = new
    assert theta == pytest.approx(model.theta_ps(), abs=1e-8)
    # and it is stable: the expected gradient under its own distribution vanishes
    assert np.mean(model.grad(np.full_like(ZS, theta), ZS)) == pytest.approx(0, abs=1e-8)


def test_pcsgd_limit_matches_brentq_and_is_biased_only_when_the_clip_binds():
    model = Quadratic(1.0, 1.0, 0.5, ZS)
    p, s = model.p_hat, model.slope

    def drift(theta, c):
        return p * np.clip(s * theta + 1.0, -c, c) + (1 - p) * np.clip(s * theta, -c, c)

    for c in (0.1, 0.3, 0.6):
        root = optimize.brentq(drift, -2, 2, args=(c,), xtol=1e-14)
        assert model.pcsgd_limit(c, 2.0) == pytest.approx(root, abs=1e-10)
        assert abs(root - model.theta_ps()) > 1e-3  # clipping biases the limit
    big = model.max_grad(2.0)
    assert model.pcsgd_limit(big, 2.0) == pytest.approx(model.theta_ps(), abs=1e-10)


def _draws(steps, chains, seed=0):
    rng = np.random.default_rng(seed)
    return ZS[rng.integers(0, len(ZS), size=(steps, chains))], rng.standard_normal((steps, chains))


def test_dicesgd_with_huge_clips_and_no_noise_is_plain_sgd_exactly():
    model = Quadratic(1.0, 1.0, 0.4, ZS)
    samples, _ = _draws(300, 5)
    run = simulate_quadratic(
        model,
        "dicesgd",
        c=1e300,
        c2=1e300,
        sigma=0.0,
        radius=math.inf,
        theta0=1.0,
        lr=0.5,
        lr_t0=10.0,
        samples=samples,
        noise=None,
    )
    theta = np.full(5, 1.0)  # plain SGD: theta <- theta - gamma_t g_t, no clip, no feedback
    for t in range(300):
        g = model.slope * theta + model.a * model.b * samples[t]
        theta = theta - 0.5 * 10.0 / (10.0 + t) * g
    np.testing.assert_array_equal(run.theta[:, 0], theta)
    assert run.clip_fraction == 0.0


def test_pcsgd_plateaus_at_its_predicted_floor_and_the_control_keeps_falling():
    model = Quadratic(1.0, 1.0, 0.5, ZS)
    samples, _ = _draws(8000, 32)
    common = dict(sigma=0.0, radius=2.0, theta0=1.0, lr=0.5, lr_t0=100.0, samples=samples)
    c = 0.3
    floor = (model.pcsgd_limit(c, 2.0) - model.theta_ps()) ** 2
    pcsgd = summarize(
        **_curves(simulate_quadratic(model, "pcsgd", c=c, c2=c, noise=None, **common))
    )
    big = model.max_grad(2.0)
    ctrl_run = simulate_quadratic(model, "nonbinding", c=big, c2=big, noise=None, **common)
    control = summarize(**_curves(ctrl_run))
    assert pcsgd["plateau_mse"] == pytest.approx(floor, rel=0.15)
    assert abs(pcsgd["tail_slope"]) < 0.2
    assert control["plateau_mse"] < floor / 5
    assert control["tail_slope"] < -0.5
    assert ctrl_run.clip_fraction == 0.0


def _curves(run):
    return {"mse": run.mse, "bias": run.bias, "plateau_frac": 0.2, "tail_start": 0.1}


def test_summarize_on_known_curves():
    t = np.arange(0, 1001, dtype=float)
    power = summarize(np.r_[1.0, 3.0 / t[1:]], np.zeros(1001), 0.2, 0.1)
    assert power["tail_slope"] == pytest.approx(-1.0, abs=1e-9)
    assert power["final_mse"] == pytest.approx(3e-3)
    flat = summarize(np.full(1001, 0.25), np.full(1001, 0.5), 0.2, 0.1)
    assert flat["tail_slope"] == pytest.approx(0.0, abs=1e-12)
    assert flat["plateau_mse"] == pytest.approx(0.25)
    assert flat["final_bias"] == 0.5


# ---------------------------------------------------------------- operators


def test_clip_operator_properties():
    rng = np.random.default_rng(0)
    g = rng.standard_normal((200, 3)) * rng.exponential(2.0, (200, 1))
    c = 1.3
    out = clip(g, c)
    norms, out_norms = np.linalg.norm(g, axis=1), np.linalg.norm(out, axis=1)
    assert np.all(out_norms <= c + 1e-12)
    np.testing.assert_allclose(out_norms, np.minimum(norms, c), rtol=1e-12)
    cos = np.sum(g * out, axis=1) / (norms * out_norms)
    np.testing.assert_allclose(cos, 1.0, rtol=1e-12)  # direction kept
    small = norms <= c
    np.testing.assert_array_equal(out[small], g[small])  # identity inside the ball
    assert np.all(clip(np.zeros((2, 3)), c) == 0)
    np.testing.assert_array_equal(clip(g, math.inf), g)
    scalars = rng.standard_normal((50, 1)) * 3  # in one dimension it is np.clip
    np.testing.assert_allclose(clip(scalars, c), np.clip(scalars, -c, c), rtol=1e-15)
    torch_out = clip_rows(torch.as_tensor(g), c).numpy()
    np.testing.assert_allclose(torch_out, out, rtol=1e-12)
    proj = project_ball(g, 2.0)
    assert np.all(np.linalg.norm(proj, axis=1) <= 2.0 + 1e-12)
    np.testing.assert_array_equal(proj[norms <= 2.0], g[norms <= 2.0])


# ---------------------------------------------------------------- strategic classification


@pytest.fixture(scope="module")
def population():
    return strategic.make_population(300, 3, 2, seed=1)


def test_per_sample_gradients_match_autograd(population):
    x, y, mask = population
    theta = np.array([0.3, -0.2, 0.5, 0.1])
    beta, lam = 0.7, 0.1
    xs = strategic.shifted(x, mask, beta, theta)
    ours = strategic.per_sample_grads(theta, xs, y, lam)
    th = torch.tensor(theta, requires_grad=True)
    xt, yt = torch.as_tensor(xs), torch.as_tensor(y)

    def loss(u, xi, yi):  # gradient w.r.t. theta with the sample fixed
        z = xi @ u
        return torch.nn.functional.softplus(z) - yi * z + lam / 2 * (u @ u)

    ref = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))(th, xt, yt)
    np.testing.assert_allclose(ours, ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    module_grads = StrategicClassification(
        x, y, mask, theta, **_module_args(beta=beta, lam=lam, chains=1, steps=1)
    ).per_sample_grads(torch.as_tensor(theta)[None], torch.arange(len(y))[None])
    np.testing.assert_allclose(module_grads[0].numpy(), ours, rtol=1e-12)


def test_rrm_stable_point_matches_a_root_finder(population):
    x, y, mask = population
    beta, lam = 1.0, 0.1
    ps, iterations = strategic.performative_stable_point(x, y, mask, beta, lam)
    assert iterations > 2  # beta > 0: the distribution moves, RRM needs several rounds

    def stable_condition(theta):  # theta minimises the risk of D(theta): gradient is 0
        return strategic.per_sample_grads(
            theta, strategic.shifted(x, mask, beta, theta), y, lam
        ).mean(0)

    # solve the stable-point condition with an independent root finder
    ref = optimize.root(stable_condition, np.zeros(x.shape[1]), tol=1e-13).x
    np.testing.assert_allclose(ps, ref, atol=1e-9)
    assert np.linalg.norm(stable_condition(ps)) < 1e-10


def test_nonbinding_bound_dominates_every_gradient_on_the_ball(population):
    x, y, mask = population
    beta, lam, radius = 1.5, 0.1, 3.0
    bound = strategic.max_grad_norm(x, mask, beta, lam, radius)
    rng = np.random.default_rng(0)
    for _ in range(50):
        theta = rng.standard_normal(x.shape[1])
        theta *= radius / np.linalg.norm(theta)  # the boundary, where gradients are largest
        g = strategic.per_sample_grads(theta, strategic.shifted(x, mask, beta, theta), y, lam)
        assert np.linalg.norm(g, axis=1).max() <= bound


def _module_args(**overrides):
    rule = UpdateRule(
        "dicesgd", lr=0.5, lr_t0=10.0, clip=1e300, clip2=1e300, sigma=0.0, radius=1e300, seed=0
    )
    return dict(beta=0.5, lam=0.1, rule=rule, chains=3, batch=4, steps=20) | overrides


def test_torch_dicesgd_with_huge_clips_is_plain_sgd(population):
    x, y, mask = population
    ps = np.zeros(x.shape[1])
    module = StrategicClassification(x, y, mask, ps, **_module_args())
    opt = module.configure_optimizers()
    theta = module.theta.detach().clone()
    for t in range(20):
        idx = torch.randint(len(y), (3, 4), generator=torch.Generator().manual_seed(t))
        grads = module.per_sample_grads(module.theta.detach(), idx)
        module.theta.grad_sample = grads
        opt.step()
        theta = theta - 0.5 * 10.0 / (10.0 + t) * grads.mean(1)
        torch.testing.assert_close(module.theta.detach(), theta, rtol=0, atol=0)


# ---------------------------------------------------------------- the hooks, end to end


TINY = dict(
    chains=4,
    history_points=5,
    quad_betas=[0.0, 0.5],
    quad_sigmas=[0.5],
    quad_steps=300,
    strat_n=100,
    strat_betas=[0.5],
    strat_sigmas=[0.5],
    strat_epochs=2,
    strat_steps_per_epoch=15,
)


def test_tiny_run_is_deterministic_and_resumes_exactly(tmp_path, monkeypatch):
    cfg = ClippedSGDConfig(**TINY)
    run = Run(spec=SPEC, cfg=cfg, seeds=(0,), root=tmp_path)
    data, meta = method.prepare(run, tmp_path / "raw")
    assert sorted(data) == sorted(cfg.tasks())
    units = {(u.task, u.variant): u for u in method.units(run, sorted(data))}
    for task in ("quad-beta0.5-c0.5-sigma0.5", "strat-beta0.5-c0.5-sigma0.5"):
        for variant in ("pcsgd", "dicesgd", "nonbinding"):
            unit = units[task, variant]
            first = method.train_unit(run, unit, data[task], tmp_path / "a" / unit.id, print)
            again = method.train_unit(run, unit, data[task], tmp_path / "b" / unit.id, print)
            assert first.history == again.history
            metrics = method.evaluate_unit(
                run, method.restore(run, unit, data[task], first.state), unit, data[task], []
            )
            assert all(math.isfinite(v) for v in metrics.values())
            if variant == "nonbinding":
                assert metrics["clip_fraction"] == 0.0
            else:
                assert metrics["clip_fraction"] > 0.0
    # a strategic run stopped after its first epoch and resumed ends where a straight run
    # does (noise, draws and DiceSGD's error buffer all come back from the checkpoint)
    unit = units["strat-beta0.5-c0.5-sigma0.5", "dicesgd"]
    straight = method.train_unit(run, unit, data[unit.task], tmp_path / "s", print)
    resume = tmp_path / "r"
    stopped = method.strategic_module(unit, cfg, data[unit.task])
    # leaves last.ckpt
    fit_resumable(stopped, method.pace(cfg), None, 1, resume, trainer=run.trainer)
    assert (resume / "last.ckpt").is_file()
    steps_run = []
    step = StrategicClassification.training_step

    def counted(self, batch, batch_idx):
        steps_run.append(self.global_step)
        return step(self, batch, batch_idx)

    monkeypatch.setattr(StrategicClassification, "training_step", counted)
    resumed = method.train_unit(run, unit, data[unit.task], resume, print)
    assert steps_run == list(range(15, 30))  # only the second epoch ran again
    assert resumed.history == straight.history


def test_units_carry_the_settings_as_parameters(tmp_path):
    cfg = ClippedSGDConfig(**TINY)
    tasks = cfg.tasks()
    name = task_name("quad", 0.5, 0.5, 0.5)
    assert tasks[name] == {"family": "quad", "beta": 0.5, "c": 0.5, "sigma": 0.5}
    units = method.units(Run(spec=SPEC, cfg=cfg, seeds=(0, 1), root=tmp_path), sorted(tasks))
    assert all(u.param == tasks[u.task] for u in units)
    assert {u.variant for u in units} == {"pcsgd", "dicesgd", "nonbinding"}
    picked = Run(
        spec=SPEC,
        cfg=ClippedSGDConfig(**TINY, variants=["pcsgd", "dicesgd"]),
        seeds=(0,),
        root=tmp_path,
    )
    assert {u.variant for u in method.units(picked, sorted(tasks))} == {"pcsgd", "dicesgd"}


# ---------------------------------------------------------------- claim checks


def _table(
    values: dict[tuple[float, int], float], variant="pcsgd", metric="plateau_mse", family="quad"
):
    rows = [
        (task_name(family, beta, 0.5, 0.0), variant, seed, family, beta, 0.5, 0.0)
        + ("fp32", metric, v)
        for (beta, seed), v in values.items()
    ]
    columns = ["task", "variant", "seed", "family", "beta", "c", "sigma"]
    return pd.DataFrame(rows, columns=[*columns, "precision", "metric", "value"])


def _check(claim_id: str):
    return next(c.check for c in CLAIMS if c.id == claim_id)


def test_grows_with_beta_verdicts():
    check = _check("bias_grows_with_beta")
    # The sign test decides at half the fixed level's two-sided alpha per direction
    # (0.025): six seeds, each rising with beta, give 6/6 (p = 1/64) and decide; five
    # (5/5, p = 1/32 > 0.025) no longer do, nor three (p = 1/8).
    up = _table({(b, s): b + 0.01 * s for b in (0.0, 0.5, 0.7) for s in range(6)})
    assert check.evaluate(up, "plateau_mse").verdict == "reproduced"
    five = _table({(b, s): b + 0.01 * s for b in (0.0, 0.5, 0.7) for s in range(5)})
    assert check.evaluate(five, "plateau_mse").verdict == "inconclusive"  # p = 1/32
    three = _table({(b, s): b + 0.01 * s for b in (0.0, 0.5, 0.7) for s in range(3)})
    assert check.evaluate(three, "plateau_mse").verdict == "inconclusive"  # p = 1/8
    down = _table({(b, s): -b + 0.01 * s for b in (0.0, 0.5, 0.7) for s in range(6)})
    v = check.evaluate(down, "plateau_mse")
    assert v.verdict == "not_reproduced" and v.measured["value"] == -1.0
    mixed = _table({(0.0, 0): 1, (0.5, 0): 2, (0.0, 1): 2, (0.5, 1): 1})
    assert check.evaluate(mixed, "plateau_mse").verdict == "inconclusive"
    one = _table({(0.5, s): float(s) for s in range(3)})
    assert check.evaluate(one, "plateau_mse").verdict == "inconclusive"
    strat = _check("strat_bias_grows_with_beta")
    assert strat.evaluate(up, "plateau_mse").verdict == "inconclusive"


def test_on_family_only_reads_its_tasks():
    quad = _table({(0.0, s): -1.0 - 0.1 * s for s in range(4)}, "nonbinding", "tail_slope")
    strat = quad.assign(task=task_name("strat", 0.0, 0.5, 0.0), family="strat", value=0.0)
    table = pd.concat([quad, strat])
    check = Where(Threshold("nonbinding", -0.5, higher_is_better=False), family="quad")
    v = check.evaluate(table, "tail_slope")
    assert v.verdict == "reproduced" and v.measured["n"] == 4
    flat = Where(Threshold("nonbinding", -0.5, higher_is_better=False), family="strat")
    assert flat.evaluate(table, "tail_slope").verdict == "not_reproduced"
