"""Clipped SGD's claims as data, with the verdict rules fixed before any run.

Every claim is tested on one task family ("quad": the paper's scalar model; "strat":
strategic classification), pooling its sweep settings (beta, c, sigma) and seeds:

- bias floor: per setting, PCSGD's plateau (mean squared error over the last 20% of the
  iterations) minus the non-binding control's, paired by seed, with a 95% t-interval:
  'higher' when above 0, 'lower' when below, else a tie. Reproduced when PCSGD is higher on
  more settings than lower and not lower on a majority; not reproduced when it is lower at
  least as often as higher (core PairedMajority).
- grows with beta: per (c, sigma) and seed, the Spearman correlation of PCSGD's plateau
  with beta; reproduced if the 95% interval of the mean correlation is above 0, not
  reproduced if below 0 (inconclusive with fewer than two betas).
- keeps falling (control, DiceSGD): slope of log mse against log t over t >= T/10;
  an unbiased method with gamma_t ~ 1/t has mse ~ 1/t (slope about -1), a bias floor gives
  slope about 0. Reproduced if the interval is below -0.5, not reproduced if above.
- DiceSGD below PCSGD: the same per-setting rule on DiceSGD's plateau minus PCSGD's,
  'better' when the interval is below 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from reprolab.core.claims import Claim, PairedMajority, Threshold
from reprolab.methods.clipped_sgd.config import parse_task

SLOPE_BOUND = -0.5


def _family_rows(table: pd.DataFrame, family: str) -> pd.DataFrame:
    return table[table.task.map(lambda t: parse_task(t)[0] == family)]


def _nothing(summary: str) -> tuple[str, dict[str, Any]]:
    nan = float("nan")
    return "inconclusive", {"value": nan, "ci_low": nan, "ci_high": nan, "summary": summary}


@dataclass(frozen=True)
class OnFamily:
    """Apply ``check`` to the tasks of one family only."""

    family: str
    check: Any

    def variants(self) -> tuple[str, ...]:
        return self.check.variants()

    def evaluate(self, table: pd.DataFrame, metric: str) -> tuple[str, dict[str, Any]]:
        rows = _family_rows(table, self.family)
        if rows.empty:
            return _nothing(f"no {self.family} tasks in this profile")
        verdict, measured = self.check.evaluate(rows, metric)
        measured["summary"] = f"[{self.family}] {measured['summary']}"
        return verdict, measured


@dataclass(frozen=True)
class GrowsWithBeta:
    """``metric`` of ``variant`` increases with beta within every (c, sigma) setting."""

    family: str
    variant: str = "pcsgd"
    confidence: float = 0.95

    def variants(self) -> tuple[str, ...]:
        return (self.variant,)

    def evaluate(self, table: pd.DataFrame, metric: str) -> tuple[str, dict[str, Any]]:
        from reprolab.core.stats import t_interval

        rows = _family_rows(table, self.family)
        rows = rows[(rows.variant == self.variant) & (rows.metric == metric)]
        if rows.empty:
            return _nothing(f"no {self.family} tasks in this profile")
        params = rows.task.map(parse_task)
        rows = rows.assign(
            beta=params.map(lambda p: p[1]),
            setting=params.map(lambda p: f"c={p[2]:g},sigma={p[3]:g}"),
        )
        if rows.beta.nunique() < 2:
            return _nothing(f"[{self.family}] one beta only: no trend to test")
        rhos, gaps = [], []
        for _, group in rows.groupby(["setting", "seed"]):
            group = group.sort_values("beta")
            if group.beta.nunique() < 2:
                continue
            rho = float(group.beta.corr(group.value, method="spearman"))
            if rho == rho:  # a constant metric has no rank correlation (NaN)
                rhos.append(rho)
                gaps.append(float(group.value.iloc[-1] - group.value.iloc[0]))
        if not rhos:
            return _nothing(f"[{self.family}] {metric} constant within every setting")
        iv = t_interval(rhos, self.confidence)
        gap = sum(gaps) / len(gaps)
        if iv.low > 0:
            verdict = "reproduced"
        elif iv.high < 0:
            verdict = "not_reproduced"
        else:
            verdict = "inconclusive"
        return verdict, {
            "value": iv.mean,
            "ci_low": iv.low,
            "ci_high": iv.high,
            "n": iv.n,
            "mean_gap_largest_minus_smallest_beta": gap,
            "summary": (
                f"[{self.family}] Spearman(beta, {self.variant} {metric}) = {iv.mean:.3g} over "
                f"{iv.n} (setting, seed) groups; largest - smallest beta: {gap:.3g}"
            ),
        }


_QUAD = (
    "paper's experiment: minimise E_{z~D(theta)} (theta + a z)^2 / 2 with D(theta) uniform "
    "over {b Z_i - beta theta}, Z_i ~ Bernoulli(p); closed form "
    "theta_PS = -a b p_hat / (1 - a beta)"
)
_STRAT = (
    "strategic classification (card: 'optionally a strategic-classification task'); "
    "the paper's own setting for it is not stated in the card"
)
_NO_NUMBER = "no number in the card"


def _claims(family: str, setting: str) -> tuple[Claim, ...]:
    prefix = "" if family == "quad" else "strat_"
    return (
        Claim(
            id=f"{prefix}pcsgd_bias_floor",
            statement="PCSGD's error plateaus above zero: its plateau exceeds the non-binding control's",
            paper_value=f"'PCSGD error plateaus above zero' ({_NO_NUMBER})",
            paper_setting=setting,
            metric="plateau_mse",
            check=OnFamily(family, PairedMajority("pcsgd", "nonbinding", higher_is_better=True)),
        ),
        Claim(
            id=f"{prefix}bias_grows_with_beta",
            statement="PCSGD's bias floor grows with the distribution sensitivity beta",
            paper_value=f"'PCSGD has a bias floor that grows with distribution sensitivity beta' ({_NO_NUMBER})",
            paper_setting=setting,
            metric="plateau_mse",
            check=GrowsWithBeta(family),
        ),
        Claim(
            id=f"{prefix}control_unbiased",
            statement="No bias when the clip never binds (c >= max |g|): the error keeps falling",
            paper_value=f"'zero bias when c >= max |g| (control)' ({_NO_NUMBER})",
            paper_setting=setting,
            metric="tail_slope",
            check=OnFamily(family, Threshold("nonbinding", SLOPE_BOUND, higher_is_better=False)),
        ),
        Claim(
            id=f"{prefix}dicesgd_keeps_falling",
            statement="DiceSGD's error keeps falling (mse ~ 1/t: tail slope below -0.5)",
            paper_value=f"'DiceSGD error keeps falling ~1/t' ({_NO_NUMBER})",
            paper_setting=setting,
            metric="tail_slope",
            check=OnFamily(family, Threshold("dicesgd", SLOPE_BOUND, higher_is_better=False)),
        ),
        Claim(
            id=f"{prefix}dicesgd_below_pcsgd",
            statement="DiceSGD removes the bias: its plateau is below PCSGD's",
            paper_value=f"'DiceSGD has none' (no bias floor; {_NO_NUMBER})",
            paper_setting=setting,
            metric="plateau_mse",
            check=OnFamily(family, PairedMajority("dicesgd", "pcsgd", higher_is_better=False)),
        ),
    )


CLAIMS = _claims("quad", _QUAD) + _claims("strat", _STRAT)
