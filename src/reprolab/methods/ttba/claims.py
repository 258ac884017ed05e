"""ttba's claims as data.

Rules, fixed before any run (95% t-intervals over every (task, seed) pair):
- ``beats_hsja`` / ``beats_signopt``: ttba - baseline, paired by (task, seed), on the
  median over attacked images of the smallest adversarial L2 found within the full query
  budget (metric ``median_l2``); reproduced when the interval of the difference lies
  below 0, not reproduced when above 0, else inconclusive.
- ``beats_hsja_early``: the same against HSJA at a quarter of the budget
  (``median_l2_quarter``), where query efficiency matters most.
- ``two_thirds``: per unit, the median over (image, iteration) of ``best_k / k_bridge``
  (best k on a grid below k_bridge, measured with uncounted queries); reproduced when the
  interval of its mean lies inside 2/3 +- 0.1, not reproduced when it lies wholly
  outside, else inconclusive. Units where no iteration qualified (``k_ratio_n`` = 0) are
  left out. The tolerance 0.1 is about three steps of the paper's k grid at a typical
  k_bridge of 0.3.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from reprolab.core.claims import Claim, PairedDifference
from reprolab.core.stats import t_interval

TWO_THIRDS = 2.0 / 3.0
RATIO_TOLERANCE = 0.1


@dataclass(frozen=True)
class NearTarget:
    """The mean of ``metric`` for ``variant`` is within ``target +- tolerance``: reproduced
    when its whole interval is inside, not reproduced when wholly outside, else
    inconclusive. Rows whose ``count_metric`` is 0 (nothing measured) are left out."""

    variant: str
    target: float
    tolerance: float
    count_metric: str = ""
    confidence: float = 0.95

    def variants(self) -> tuple[str, ...]:
        return (self.variant,)

    def evaluate(self, table: pd.DataFrame, metric: str) -> tuple[str, dict[str, Any]]:
        rows = table[table.variant == self.variant]
        values = rows[rows.metric == metric].set_index(["task", "seed"]).value
        if self.count_metric:
            counts = rows[rows.metric == self.count_metric].set_index(["task", "seed"]).value
            values = values[counts.reindex(values.index).fillna(0) > 0]
        lo, hi = self.target - self.tolerance, self.target + self.tolerance
        if values.empty:
            nan = float("nan")
            return "inconclusive", {
                "value": nan,
                "ci_low": nan,
                "ci_high": nan,
                "n": 0,
                "summary": f"no unit measured {metric} (no qualifying iteration)",
            }
        iv = t_interval(values.to_numpy(), self.confidence)
        if lo <= iv.low and iv.high <= hi:
            verdict = "reproduced"
        elif iv.high < lo or iv.low > hi:
            verdict = "not_reproduced"
        else:
            verdict = "inconclusive"
        return verdict, {
            "value": iv.mean,
            "ci_low": iv.low,
            "ci_high": iv.high,
            "n": iv.n,
            "summary": (
                f"{self.variant} mean {iv.mean:.4g} (claim: within [{lo:.3g}, {hi:.3g}], n={iv.n})"
            ),
        }


_SETTING = "untargeted L2, MNIST / Fashion-MNIST / CIFAR-10 / ImageNet victims, 10,000 queries"

CLAIMS = (
    Claim(
        id="beats_hsja",
        statement="TtBA finds smaller L2 perturbations than HSJA at the same query budget",
        paper_value=(
            "smaller median L2 than HSJA on every dataset (tables; numbers not in the "
            "card or abstract)"
        ),
        paper_setting=_SETTING,
        metric="median_l2",
        check=PairedDifference(method="ttba", baseline="hsja", higher_is_better=False),
    ),
    Claim(
        id="beats_hsja_early",
        statement="... also early, at a quarter of the budget",
        paper_value="L2-vs-queries curves below HSJA's from the first queries (figures)",
        paper_setting=_SETTING,
        metric="median_l2_quarter",
        check=PairedDifference(method="ttba", baseline="hsja", higher_is_better=False),
    ),
    Claim(
        id="beats_signopt",
        statement="TtBA finds smaller L2 perturbations than Sign-OPT at the same budget",
        paper_value="smaller median L2 than Sign-OPT (tables; numbers not in the card)",
        paper_setting=_SETTING,
        metric="median_l2",
        check=PairedDifference(method="ttba", baseline="signopt", higher_is_better=False),
    ),
    Claim(
        id="two_thirds",
        statement="the best k on a grid below k_bridge is about 2/3 of k_bridge",
        paper_value="best k / k_bridge clusters near 2/3 (k = 2/3 k_bridge near-optimal)",
        paper_setting="histogram of best-k / k_bridge over attack iterations (TtBA_simp)",
        metric="k_ratio_median",
        check=NearTarget(
            variant="ttba",
            target=TWO_THIRDS,
            tolerance=RATIO_TOLERANCE,
            count_metric="k_ratio_n",
        ),
    ),
)
