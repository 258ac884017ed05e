"""desk_reject: policies against hand-worked examples and brute force, the dilemma's
exhaustive search against an independent enumeration, the generator, and the checks."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from reprolab.contract import Run
from reprolab.evidence.judging.claims import IntervalCheck
from reprolab.methods.desk_reject import SPEC, dilemma, method, policies
from reprolab.methods.desk_reject.claims import Dilemma, NearOptimalShare
from reprolab.methods.desk_reject.config import DeskRejectConfig
from reprolab.methods.desk_reject.generator import synthetic_instance
from reprolab.methods.desk_reject.policies import Instance

# Hand-worked, b = 1. Authors 0 and 1 are senior (two papers each), 2 and 3 are students
# with one paper each. In submission order the CVPR rule keeps paper 0, then must reject
# papers 1 and 2 (authors 0 and 1 are at the limit): both students lose their only paper.
# Keeping papers 1 and 2 instead leaves everyone at cost 0.
SENIORS = [[0, 1], [0, 2], [1, 3]]


def random_tiny(rng: np.random.Generator) -> tuple[list[list[int]], int, int]:
    n = int(rng.integers(2, 6))
    m = int(rng.integers(1, 9))
    papers = [
        sorted(rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False).tolist())
        for _ in range(m)
    ]
    used = sorted({a for p in papers for a in p})
    relabel = {a: i for i, a in enumerate(used)}
    return [[relabel[a] for a in p] for p in papers], len(used), int(rng.integers(1, 4))


def brute_force(papers: list[list[int]], n: int, b: int) -> dict[str, float]:
    """Every keep-vector: optimal mean cost, optimal max cost, best mean at that max, and
    whether an ideal one exists. Written from the definitions, not from policies.py."""
    m = len(papers)
    a = np.zeros((n, m))
    for j, p in enumerate(papers):
        a[p, j] = 1
    s = a.sum(axis=1)
    xs = (np.arange(1 << m)[:, None] >> np.arange(m)[None, :]) & 1
    kept = xs @ a.T
    feasible = (kept <= b).all(axis=1)
    cost = 1 - kept / np.minimum(b, s)
    mean, worst = cost.mean(axis=1)[feasible], cost.max(axis=1)[feasible]
    innocent = s <= b
    ideal = feasible & (kept[:, innocent] == s[innocent]).all(axis=1)
    return {
        "mean": mean.min(),
        "max": worst.min(),
        "mean_at_max": mean[worst <= worst.min() + 1e-12].min(),
        "ideal": bool(ideal.any()),
    }


@pytest.fixture(scope="module")
def tiny_cases() -> list[tuple[list[list[int]], int, int]]:
    rng = np.random.default_rng(7)
    return [random_tiny(rng) for _ in range(40)]


def test_cvpr_rule_and_costs_on_hand_worked_example():
    inst = Instance.from_papers(SENIORS, limit=1)
    keep = policies.cvpr_rule(inst).keep
    assert keep.tolist() == [1, 0, 0]
    assert policies.author_costs(inst, keep).tolist() == [0.0, 0.0, 1.0, 1.0]
    assert policies.innocent_hit(inst, keep).tolist() == [False, False, True, True]
    metrics = policies.instance_metrics(inst, keep)
    assert metrics["mean_cost"] == 0.5 and metrics["innocent_hit_frac"] == 1.0
    assert metrics["avoidable_hit"] == 1.0 and metrics["no_ideal"] == 0.0
    for policy in ("lp_rounded", "milp_average", "milp_worst_case"):
        sol = policies.solve(policy, inst, node_limit=1000)
        assert sol.keep.tolist() == [0, 1, 1], policy


def test_cost_uses_min_of_limit_and_submissions():
    # author 0 has 5 papers, limit 2: keeping 1 of them costs 1 - 1/2
    inst = Instance.from_papers([[0], [0], [0], [0], [0, 1]], limit=2)
    keep = np.array([1, 0, 0, 0, 0])
    assert policies.author_costs(inst, keep).tolist() == [0.5, 1.0]
    assert policies.cvpr_rule(inst).keep.tolist() == [1, 1, 0, 0, 0]


def test_cvpr_rule_trace_in_submission_order():
    # b = 2; traced by hand: papers 2, 4 and 6 find an author already at 2 kept papers
    papers = [[0, 1], [0, 2], [0, 3], [1, 3], [0], [2, 3], [3]]
    keep = policies.cvpr_rule(Instance.from_papers(papers, limit=2)).keep
    assert keep.tolist() == [1, 1, 0, 1, 0, 1, 0]


def test_lp_is_fractional_on_the_triangle_and_rounding_stays_feasible():
    # b = 1, three papers on a triangle of authors: the LP keeps half of each paper
    # (every author at their quota, mean cost 0); any 0/1 choice keeps one paper (1/3)
    inst = Instance.from_papers([[0, 1], [1, 2], [0, 2]], limit=1)
    x, bound, _ = policies.lp_relaxation(inst)
    assert np.allclose(x, 0.5) and bound == pytest.approx(0.0, abs=1e-9)
    rounded = policies.lp_rounded(inst)
    assert rounded.keep.sum() == 1 and rounded.info["lp_fractional"] == 3
    assert policies.mean_cost_of(inst, rounded.keep) == pytest.approx(1 / 3)
    assert policies.mean_cost_of(inst, policies.milp_average(inst, 1000).keep) == pytest.approx(
        1 / 3
    )


def test_solvers_match_brute_force_on_tiny_instances(tiny_cases):
    for papers, n, b in tiny_cases:
        inst = Instance.from_papers(papers, b, n_authors=n)
        ref = brute_force(papers, n, b)
        avg = policies.milp_average(inst, 1000)
        worst = policies.milp_worst_case(inst, 1000)
        lp = policies.lp_rounded(inst)
        for sol in (avg, worst, lp, policies.cvpr_rule(inst)):
            assert policies.is_feasible(inst, sol.keep)
        assert policies.mean_cost_of(inst, avg.keep) == pytest.approx(ref["mean"], abs=1e-9)
        cost = policies.author_costs(inst, worst.keep)
        assert cost.max() == pytest.approx(ref["max"], abs=1e-9)
        assert cost.mean() == pytest.approx(ref["mean_at_max"], abs=1e-9)
        assert lp.info["lp_bound"] <= ref["mean"] + 1e-9
        assert policies.mean_cost_of(inst, lp.keep) >= ref["mean"] - 1e-9
        assert policies.ideal_exists(inst) == ref["ideal"]


def test_lp_solution_has_a_matching_dual_certificate():
    # max w.x s.t. A x <= b, x <= 1, x >= 0 has dual min b 1.y + 1.z s.t. A'y + z >= w,
    # y, z >= 0: a feasible dual with the primal's value proves the LP optimal
    for seed in range(3):
        inst = synthetic_instance(60, 2, seed, "tight", 0.5, 2.0, 8, 0.5)
        x, bound, y = policies.lp_relaxation(inst)
        w = policies.average_weights(inst)
        a = inst.matrix()
        assert np.all(y >= -1e-9) and np.all(a @ x <= inst.limit + 1e-9)
        z = np.maximum(0.0, w - a.T @ y)
        assert inst.limit * y.sum() + z.sum() == pytest.approx(w @ x, rel=1e-7)
        assert bound == pytest.approx(1 - w @ x / inst.n_authors)


def test_rounding_keeps_feasibility_and_is_maximal():
    rng = np.random.default_rng(3)
    for seed in range(20):
        inst = synthetic_instance(40, int(rng.integers(1, 4)), seed, "tight", 0.6, 2.0, 8, 0.5)
        a = inst.matrix()
        u = rng.random(inst.n_papers) ** 2
        x = u * min(1.0, float(np.min(inst.limit / np.maximum(a @ u, 1e-12))))
        x[rng.random(inst.n_papers) < 0.1] = 0.0
        keep = policies.round_feasible(inst, x)
        assert policies.is_feasible(inst, keep)
        assert np.all(keep[x >= 1 - 1e-7] == 1)
        kept = policies.kept_per_author(inst, keep)
        for j, authors in enumerate(inst.papers()):  # a rejected paper could not be added
            assert keep[j] or np.any(kept[authors] >= inst.limit)


def test_enumeration_matches_an_independent_count():
    # n = 2, at most 3 papers, by hand: {ab}; {a,b} {a,ab} {ab,ab}; {a,a,b} {a,a,ab}
    # {a,b,ab} {a,ab,ab} {ab,ab,ab} = 9 classes up to swapping a and b
    assert len(dilemma.canonical_multisets(2, 3)) == 9
    # n = 3: canonical forms computed directly in pure Python
    n, full = 3, 7
    classes = set()
    for m in range(1, 5):
        for combo in itertools.combinations_with_replacement(range(1, full + 1), m):
            if np.bitwise_or.reduce(combo) != full:
                continue
            forms = []
            for perm in itertools.permutations(range(n)):
                image = [sum(1 << perm[a] for a in range(n) if c >> a & 1) for c in combo]
                forms.append(tuple(sorted(image)))
            classes.add(min(forms))
    assert sorted(classes) == sorted(dilemma.canonical_multisets(3, 4))


def test_ideal_closed_form_matches_exhaustive_search(tiny_cases):
    for papers, n, b in tiny_cases:
        masks = np.array([sum(1 << a for a in p) for p in papers])
        inst = Instance.from_papers(papers, b, n_authors=n)
        assert policies.ideal_exists(inst) == dilemma.ideal_by_brute_force(masks, n, b)


def test_the_dilemma_appears_at_three_authors_and_not_before():
    two = dilemma.enumerate_task(2, [1, 2, 3], 5)
    assert two["ideal"].all()  # two authors: an ideal rejection always exists
    # three authors, b = 1: author 0 on two papers, each with a one-paper co-author
    assert not dilemma.ideal_by_brute_force(np.array([0b011, 0b101]), 3, 1)
    three = dilemma.enumerate_task(3, [1], 4)
    assert (three["ideal"] == 0).sum() > 0


def test_a_solve_stopped_by_its_node_limit_is_repeatable():
    # a dense instance whose worst-case MILP needs ~150 branch-and-bound nodes: stopped
    # after 20 it is not optimal, and stops at the same point every time (a work budget,
    # where a time limit would stop wherever the machine's speed put it)
    inst = synthetic_instance(50, 2, 1, "tight", 0.5, 2.0, 8, 0.5)
    runs = [policies.milp_worst_case(inst, 20) for _ in range(3)]
    assert not runs[0].optimal
    assert all(np.array_equal(r.keep, runs[0].keep) for r in runs)
    full = policies.milp_worst_case(inst, 100_000)
    assert full.optimal
    assert full.info["worst_case_t"] <= runs[0].info["worst_case_t"] + 1e-12


def test_generator_is_seeded_and_heavy_tailed():
    args = (500, 25, 3, "conf", 2.0, 2.0, 8, 0.5)
    a, b = synthetic_instance(*args), synthetic_instance(*args)
    assert np.array_equal(a.ptr, b.ptr) and np.array_equal(a.idx, b.idx)
    c = synthetic_instance(500, 25, 4, "conf", 2.0, 2.0, 8, 0.5)
    assert not (np.array_equal(a.ptr, c.ptr) and np.array_equal(a.idx, c.idx))
    teams = np.diff(a.ptr)
    assert teams.min() >= 1 and teams.max() <= 8
    assert all(len(set(p.tolist())) == len(p) for p in a.papers())
    s = a.submissions()
    assert s.min() >= 1 and len(s) == a.n_authors
    assert s.max() >= 10 * np.median(s)  # a few prolific authors, many with one paper


def test_units_skip_large_milps_and_run_tiny_tasks_once(tmp_path):
    cfg = DeskRejectConfig(sizes=[30, 300], milp_max_papers=100)
    run = Run(spec=SPEC, cfg=cfg, seeds=(0, 1), root=tmp_path)
    units = method.units(run, ["conf_m30", "conf_m300", "tiny_n3"])
    big = {u.variant for u in units if u.task == "conf_m300"}
    assert big == {"cvpr_rule", "lp_rounded"}
    tiny = [u for u in units if u.task == "tiny_n3"]
    assert {u.seed for u in tiny} == {None} and len(tiny) == 4  # seed-free: once per policy
    assert all(u.param == {"family": "tiny", "authors": 3} for u in tiny)
    conf = [u for u in units if u.task == "conf_m30"]
    assert len(conf) == 8 and {u.seed for u in conf} == {0, 1}
    assert all(u.param == {"family": "conf", "papers": 30, "limit": 6} for u in conf)
    picked = DeskRejectConfig(sizes=[30], variants=["cvpr_rule", "lp_rounded"])
    picked_run = Run(spec=SPEC, cfg=picked, seeds=(0,), root=tmp_path)
    assert {u.variant for u in method.units(picked_run, ["conf_m30"])} == {
        "cvpr_rule",
        "lp_rounded",
    }


def _table(rows):
    """Rows (task, variant, seed, precision, metric, value) with the parameter columns the
    hooks give those tasks."""
    cfg = DeskRejectConfig(sizes=[100], tiny_authors=[2, 3, 4])
    base = ["task", "variant", "seed", "precision", "metric", "value"]
    table = pd.DataFrame(rows, columns=base)
    params = pd.DataFrame([cfg.tasks()[t] for t in table.task], index=table.index)
    out = pd.concat([table[["task", "variant", "seed"]], params, table[base[3:]]], axis=1)
    out["seed"] = out["seed"].astype("Int64")
    return out


def test_dilemma_check_verdicts():
    rows = []
    for n, count, total in ((2, 0, 34), (3, 9, 130), (4, 79, 460)):
        rows += [(f"tiny_n{n}", "cvpr_rule", None, "fp32", "no_ideal", count)]
        rows += [(f"tiny_n{n}", "cvpr_rule", None, "fp32", "instances", total)]
    table = _table(rows)
    v = Dilemma(from_authors=4).evaluate(table, "no_ideal")
    assert v.verdict == "reproduced" and v.measured["value"] == 3
    assert Dilemma(3, below_always_ideal=True).evaluate(table, "no_ideal").verdict == "reproduced"
    assert Dilemma(2).evaluate(table, "no_ideal").verdict == "not_reproduced"
    assert Dilemma(5).evaluate(table, "no_ideal").verdict == "inconclusive"


def test_near_optimal_check_verdicts():
    def table(gap_share):
        rows = []
        for seed in range(6):
            opt = 0.1 + 0.01 * seed
            for variant, value in (
                ("milp_average", opt),
                ("cvpr_rule", opt + 0.2),
                ("lp_rounded", opt + gap_share * 0.2 + 0.001 * (seed % 2)),
            ):
                rows.append(("conf_m100", variant, seed, "fp32", "mean_cost", value))
        return _table(rows)

    # the claim's check: the statistic gap - 0.05 * improvement, claimed below 0
    near_optimal = IntervalCheck(NearOptimalShare(), bound=0.0, higher_is_better=False)
    v = near_optimal.evaluate(table(0.0), "mean_cost")
    assert v.verdict == "reproduced"
    # gap 0.001 on odd seeds (mean 0.0005), improvement 0.2: 0.0005 - 0.05 * 0.2
    assert v.measured["value"] == pytest.approx(0.0005 - 0.05 * 0.2)
    assert near_optimal.evaluate(table(0.5), "mean_cost").verdict == "not_reproduced"
