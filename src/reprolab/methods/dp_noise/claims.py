"""dp_noise's claims as data, and the checks that read them off the metrics table.

Every task is one (sigma/s, k) setting; sigma and k are unit parameters (columns
``sigma`` and ``k`` of the metrics table), never parsed from task names. The optimised
noise of a task is designed for that k. Claims are tested on ``eps_ref``, the epsilon
that the independent accountant (dp-accounting's PLD) gives each mechanism; the README
shows this method's own accountant next to it. Lower epsilon is better.

The Gaussian and Laplace baselines are seed-free units (a closed form and a
deterministic PLD computation: one exact value per task). The optimised noise is run
per seed, since seeds jitter the optimiser's starting point; its intervals over seeds
are narrow by design: they measure convergence, not sampling noise. Paired differences
set each seeded value against the baseline's one exact value (core ``paired``).

Rules (intervals read at the look of the sequential plan, alpha 0.05 two-sided overall):
- ``vs_better_k10`` (central; amendment of the faithful-claims issue, before its run):
  ``Where(IntervalCheck(BelowBetterBaseline), sigma=5, k=10)``: per seed eps(method) -
  min(eps(Gaussian), eps(Laplace)) at that setting, the better baseline of the task;
  reproduced when its t-interval lies below 0 (with its size against the paper's 0.17),
  not reproduced when above 0, else inconclusive. ``from_laplace_k10``: the same check
  on the Laplace-started variant ``optimized_from_laplace``.
- ``vs_gaussian_k10`` / ``vs_laplace_k10`` (fixed before any run, as the rules below):
  core ``Where(PairedDifference, sigma=5, k=10)``: per seed eps(method) - eps(baseline)
  at that setting; reproduced when its t-interval lies below 0, not reproduced when
  above 0, else inconclusive.
- ``BeatsBetterBaseline``: per task with k in [k_min, k_max] the relative gain over the
  better baseline, 1 - eps(method) / min(eps(baselines)); a task is 'better' when its
  interval over seeds lies above 0, 'worse' when below; reproduced when every such task
  is better, not reproduced when any is worse, else inconclusive.
- ``GapShrinks``: per sigma and seed, gain at k_ref minus gain at the largest k >= k_large;
  reproduced when the interval lies above 0, not reproduced when below, else inconclusive.
"""

from __future__ import annotations

from dataclasses import dataclass

from reprolab.evidence.judging.claims import (
    FIXED,
    Claim,
    IntervalCheck,
    Level,
    PairedDifference,
    Sample,
    Verdict,
    Where,
    is_seed_free,
    paired,
)

BASELINES = ("gaussian", "laplace")


def gains(table, metric: str, method: str, baselines: tuple[str, ...]):
    """Per (task, seed): relative gain 1 - eps(method) / min over baselines, with the
    task's sigma and k (its unit parameters). A seed-free method has seed -1."""
    wide = paired(table, metric)
    return (1.0 - wide[method] / better_of(wide, baselines)).dropna().rename("gain").reset_index()


def better_of(wide, baselines: tuple[str, ...]):
    """Per row of a :func:`paired` table, the smaller epsilon of ``baselines`` (the
    better one); NaN where one of them is missing (no 'better' of an incomplete pair)."""
    return wide[list(baselines)].min(axis=1, skipna=False)


def _seed_free(table, method: str) -> bool:
    return is_seed_free(table[table.variant == method])


@dataclass(frozen=True)
class BeatsBetterBaseline:
    """``method`` beats the better baseline at every tested k in [k_min, k_max]: per
    task, the interval of the relative gain over seeds against 0
    (:meth:`Verdict.interval`), and every task must be reproduced
    (:meth:`Verdict.all_of`: one task on the other side fails it).

    Method-specific: the opponent is the better of the baselines per (task, seed) on the
    tested metric itself (the baselines are exact, there is no validation metric to pick
    one with, unlike core PairedMajority's ``best``), the quantity is a relative gain,
    and the rule asks for every task, not a majority."""

    method: str
    baselines: tuple[str, ...]
    k_min: int
    k_max: int

    def variants(self) -> tuple[str, ...]:
        return (self.method, *self.baselines)

    def evaluate(self, table, metric: str, level: Level = FIXED) -> Verdict:
        seed_free = _seed_free(table, self.method)
        g = gains(table, metric, self.method, self.baselines)
        g = g[(g.k >= self.k_min) & (g.k <= self.k_max)]
        if g.empty:
            return Verdict.not_tested(f"not tested: no task with {self.k_min} <= k <= {self.k_max}")
        parts, per_task = [], []
        for task, rows in g.groupby("task"):
            iv = level.interval(rows.gain.to_numpy(), seed_free, rows.seed.tolist())
            part = Verdict.interval(iv, 0.0, True, str(task), seed_free=seed_free)
            parts.append(part)
            per_task.append({"task": task, **iv.as_dict(), "verdict": part.verdict})
        pooled = level.interval(g.gain.to_numpy(), seed_free, g.seed.tolist())
        shown = ", ".join(f"{p['task']} {100 * p['mean']:+.2f}%" for p in per_task)
        return Verdict.all_of(
            parts,
            pooled.mean,
            f"relative gain over the better baseline: {shown}",
            iv=pooled,
            seed_free=seed_free,
            sd=pooled.sd,
            per_task=per_task,
        )


@dataclass(frozen=True)
class BelowBetterBaseline:
    """Per (task, seed): eps(method) - min over ``baselines`` of eps(baseline), the
    method against the better baseline of its task, in epsilon (an :class:`IntervalCheck`
    statistic, claimed below 0; wrapped in ``Where`` for one setting).

    Method-specific: core PairedDifference pairs with one named baseline; here the
    opponent is the better of the baselines per (task, seed) on the tested metric itself
    (the baselines are exact, seed-free values: there is no validation metric to pick
    one with), as in :class:`BeatsBetterBaseline`, but as a difference on the paper's
    own scale (2.66 vs 2.83: 0.17 in epsilon), so the verdict reads its size too."""

    method: str
    baselines: tuple[str, ...]

    @property
    def untested(self) -> str:
        return f"not tested: no {self.method} paired with every one of {self.baselines}"

    def variants(self) -> tuple[str, ...]:
        return (self.method, *self.baselines)

    def __call__(self, table, metric: str) -> Sample | None:
        wide = paired(table, metric)
        if any(v not in wide.columns for v in self.variants()):
            return None
        best = better_of(wide, self.baselines)
        diff = (wide[self.method] - best).dropna()
        if diff.empty:
            return None
        which = wide.loc[diff.index, list(self.baselines)].idxmin(axis=1)
        named = ", ".join(f"{b} {100 * float((which == b).mean()):.0f}%" for b in self.baselines)
        mean_method = float(wide.loc[diff.index, self.method].mean())
        mean_best = float(best.loc[diff.index].mean())
        return Sample(
            values=tuple(diff.tolist()),
            seeds=tuple(diff.index.get_level_values("seed").tolist()),
            seed_free=_seed_free(table, self.method),
            summary=(
                f"{self.method} - better of {' / '.join(self.baselines)} = "
                f"{float(diff.mean()):.4g} (eps {mean_method:.4g} vs {mean_best:.4g}; "
                f"better baseline: {named})"
            ),
            extra={
                "eps_method": mean_method,
                "eps_better_baseline": mean_best,
                "better_baseline": str(which.mode().iloc[0]),
            },
        )


@dataclass(frozen=True)
class GapShrinks:
    """The relative gain over the better baseline is smaller at the largest k >= k_large
    than at k_ref (paired by sigma and seed): the statistic is gain(k_ref) -
    gain(largest k), claimed positive.

    Method-specific: it compares one derived quantity (the gain over the better baseline)
    between two values of the parameter k, which no core check does."""

    method: str
    baselines: tuple[str, ...]
    k_ref: int
    k_large: int

    @property
    def untested(self) -> str:
        return f"not tested: needs k = {self.k_ref} and some k >= {self.k_large} in one profile"

    def variants(self) -> tuple[str, ...]:
        return (self.method, *self.baselines)

    def __call__(self, table, metric: str) -> Sample | None:
        seed_free = _seed_free(table, self.method)
        g = gains(table, metric, self.method, self.baselines)
        diffs, seeds, shown = [], [], []
        for sigma, rows in g.groupby("sigma"):
            large = rows[rows.k >= self.k_large]
            ref = rows[rows.k == self.k_ref]
            if large.empty or ref.empty:
                continue
            k_big = int(large.k.max())
            at_ref = ref.set_index("seed").gain
            at_big = rows[rows.k == k_big].set_index("seed").gain
            d = (at_ref - at_big).dropna()
            diffs.extend(d.tolist())
            seeds.extend(d.index.tolist())
            shown.append(
                f"sigma/s={sigma:g}: k={self.k_ref} {100 * at_ref.mean():+.2f}% vs "
                f"k={k_big} {100 * at_big.mean():+.2f}%"
            )
        if not diffs:
            return None
        return Sample(
            values=tuple(diffs),
            seeds=tuple(seeds),
            seed_free=seed_free,
            summary="relative gain over the better baseline: " + "; ".join(shown),
        )


_FIG1 = (
    "continuous noise, sigma/s = 5 (std 5, s = 1), 10 compositions, delta = 1e-6, "
    "Connect-the-Dots accountant; Delta = 0.05, N = 2000, r = 0.9999 (pre-camera-ready Fig. 1)"
)

#: Algorithm 3 from the paper's start (the discretised Gaussian, Algorithm 2)
METHOD = "optimized"
#: Algorithm 3 from the equal-variance Laplace (this reproduction's variant)
FROM_LAPLACE = "optimized_from_laplace"

CLAIMS = (
    Claim(
        id="vs_better_k10",
        statement=(
            "At sigma/s = 5, 10 compositions and delta = 1e-6 the optimized noise (Algorithm "
            "3 from the discretised Gaussian) has a lower epsilon than the better of the "
            "Gaussian and the Laplace of equal variance"
        ),
        paper_value="eps 2.66 vs 2.83 (Laplace) and 2.92 (Gaussian)",
        paper_setting=_FIG1,
        metric="eps_ref",
        check=Where(
            IntervalCheck(
                BelowBetterBaseline(METHOD, BASELINES), bound=0.0, higher_is_better=False
            ),
            sigma=5.0,
            k=10,
        ),
        effect=0.17,
        effect_basis="paper: 2.83 - 2.66 = 0.17, eps of the better baseline (Laplace) minus "
        "the optimized noise's (card, pre-camera-ready Fig. 1)",
        source="card",
        central=True,
    ),
    Claim(
        id="from_laplace_k10",
        statement=(
            "Started from the equal-variance Laplace instead of the discretised Gaussian "
            "(this reproduction's variant), Algorithm 3's noise at sigma/s = 5, 10 "
            "compositions and delta = 1e-6 has a lower epsilon than the better of the "
            "Gaussian and the Laplace"
        ),
        paper_value=(
            "not in the card for this start (the paper starts Algorithm 3 from a "
            "discretised Gaussian); its optimized noise: eps 2.66 vs 2.83 (Laplace) and "
            "2.92 (Gaussian)"
        ),
        paper_setting=_FIG1,
        metric="eps_ref",
        check=Where(
            IntervalCheck(
                BelowBetterBaseline(FROM_LAPLACE, BASELINES), bound=0.0, higher_is_better=False
            ),
            sigma=5.0,
            k=10,
        ),
        effect=0.17,
        effect_basis="paper: 2.83 - 2.66 = 0.17 (card, pre-camera-ready Fig. 1), the paper's "
        "optimum of the same problem, reached from the Gaussian start",
        source="card",
    ),
    Claim(
        id="vs_gaussian_k10",
        statement=(
            "At sigma/s = 5, 10 compositions and delta = 1e-6 the optimized noise has a "
            "lower epsilon than the Gaussian of equal variance"
        ),
        paper_value="eps 2.66 vs 2.92 (Gaussian)",
        paper_setting=_FIG1,
        metric="eps_ref",
        check=Where(
            PairedDifference("optimized", "gaussian", higher_is_better=False), sigma=5.0, k=10
        ),
        effect=0.26,
        effect_basis="paper: 2.92 - 2.66 (card, pre-camera-ready Fig. 1)",
        source="Fig. 1",
    ),
    Claim(
        id="vs_laplace_k10",
        statement=(
            "At sigma/s = 5, 10 compositions and delta = 1e-6 the optimized noise has a "
            "lower epsilon than the Laplace of equal variance"
        ),
        paper_value="eps 2.66 vs 2.83 (Laplace)",
        paper_setting=_FIG1,
        metric="eps_ref",
        check=Where(
            PairedDifference("optimized", "laplace", higher_is_better=False), sigma=5.0, k=10
        ),
        effect=0.17,
        effect_basis="paper: 2.83 - 2.66 (card, pre-camera-ready Fig. 1)",
        source="Fig. 1",
    ),
    Claim(
        id="moderate_regime",
        statement=(
            "In the moderate composition regime (every tested k from 10 to 40) the optimized "
            "noise has a lower epsilon than the better of Gaussian and Laplace"
        ),
        paper_value=(
            "better than Gaussian and Laplace of equal variance, most in the moderate "
            "composition regime, ~10-40 compositions (card; abstract: 'significant "
            "improvements ... in the moderate composition regimes')"
        ),
        paper_setting="delta = 1e-6, equal variance, Connect-the-Dots accountant",
        metric="eps_ref",
        check=BeatsBetterBaseline(method="optimized", baselines=BASELINES, k_min=10, k_max=40),
        effect=0.06,
        effect_basis="paper: 1 - 2.66 / 2.83 = 0.06 relative gain over the better baseline "
        "at k = 10 (card, pre-camera-ready Fig. 1)",
        source="card",
    ),
    Claim(
        id="small_k",
        statement=(
            "At small k (every tested k below 10) the optimized noise has a lower epsilon "
            "than the better of Gaussian and Laplace (there, Laplace)"
        ),
        paper_value="'our optimized distributions are consistently better' (abstract); no "
        "number below 10 compositions in the abstract or card",
        paper_setting="delta = 1e-6, equal variance, Connect-the-Dots accountant",
        metric="eps_ref",
        check=BeatsBetterBaseline(method="optimized", baselines=BASELINES, k_min=1, k_max=9),
        effect=0.01,
        effect_basis="margin: 1% relative epsilon gain; no number below 10 compositions in "
        "the abstract or card",
        source="abstract",
    ),
    Claim(
        id="gap_shrinks",
        statement=(
            "The relative epsilon gain over the better baseline is smaller at the largest "
            "tested k (>= 100) than at k = 10"
        ),
        paper_value=(
            "improvements are largest in the moderate composition regime, ~10-40 "
            "compositions (card; abstract: 'in the moderate composition regimes')"
        ),
        paper_setting="delta = 1e-6, equal variance, Connect-the-Dots accountant",
        metric="eps_ref",
        check=IntervalCheck(
            GapShrinks(method="optimized", baselines=BASELINES, k_ref=10, k_large=100),
            bound=0.0,
        ),
        effect=0.01,
        effect_basis="margin: 1 point of relative epsilon gain; the card gives the k = 10 "
        "gain (0.06) but none at large k",
        source="card",
    ),
)
