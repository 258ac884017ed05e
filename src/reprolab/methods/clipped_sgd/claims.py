"""Clipped SGD's claims as data, with the verdict rules fixed before any run.

Every claim is tested on one task family ("quad": the paper's scalar model; "strat":
strategic classification), pooling its sweep settings (beta, c, sigma) and seeds.
Intervals and tests are read at the look of the sequential plan (``judging.claims.Level``),
alpha 0.05 two-sided overall. ``pcsgd_bias_floor`` (quad) is the central claim.

- bias floor: per setting, PCSGD's plateau (mean squared error over the last 20% of the
  iterations) minus the non-binding control's, paired by seed, with a t-interval:
  'higher' when above 0, 'lower' when below, else a tie. Verdict over settings: a
  one-sided sign test of 'higher' against 'lower' (ties carry no sign) that must agree
  in sign with the pooled mean difference (core PairedMajority).
- grows with beta: per (c, sigma) and seed, the Spearman correlation of PCSGD's plateau
  with beta; verdict by a one-sided sign test of the groups' signs that must agree with
  the mean correlation (inconclusive with fewer than two betas) (core Trend).

Each check is restricted to its family by core ``Where(check, family=...)``, reading the
``family`` and ``beta`` columns of the metrics table (unit parameters; nothing is parsed
out of task names).
- keeps falling (control, DiceSGD): slope of log mse against log t over t >= T/10;
  an unbiased method with gamma_t ~ 1/t has mse ~ 1/t (slope about -1), a bias floor gives
  slope about 0. Reproduced if the interval is below -0.5, not reproduced if above.
- DiceSGD below PCSGD: the same per-setting rule on DiceSGD's plateau minus PCSGD's,
  'better' when the interval is below 0.
"""

from __future__ import annotations

from reprolab.evidence.judging.claims import Claim, PairedMajority, Threshold, Trend, Where

SLOPE_BOUND = -0.5


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
#: the smallest plateau gap that matters, per family (squared error)
_MSE_EFFECT = 1e-4
_MSE_BASIS = {
    "quad": "margin: 1e-4 in squared error, i.e. a bias of 0.01 in theta, a tenth of the "
    "smallest |theta_PS| (a b p = 0.1 at beta = 0); no number in the abstract or card",
    "strat": "margin: 1e-4 in squared error (a bias of 0.01 in ||theta - theta_PS||); the "
    "card gives no scale for the strategic task",
}
_RHO_BASIS = (
    "margin: mean Spearman rho 0.5 (a clear monotone trend over the 4 betas); no number "
    "in the abstract or card"
)
#: an unbiased SGD with 1/t steps has a tail slope of -1, 0.5 below SLOPE_BOUND
_SLOPE_EFFECT = 0.5


def _claims(family: str, setting: str) -> tuple[Claim, ...]:
    prefix = "" if family == "quad" else "strat_"
    return (
        Claim(
            id=f"{prefix}pcsgd_bias_floor",
            statement="PCSGD's error plateaus above zero: its plateau exceeds the non-binding control's",
            paper_value=f"'PCSGD error plateaus above zero' ({_NO_NUMBER})",
            paper_setting=setting,
            metric="plateau_mse",
            check=Where(
                PairedMajority("pcsgd", "nonbinding", higher_is_better=True), family=family
            ),
            effect=_MSE_EFFECT,
            effect_basis=_MSE_BASIS[family],
            source="card",
            central=family == "quad",
        ),
        Claim(
            id=f"{prefix}bias_grows_with_beta",
            statement="PCSGD's bias floor grows with the distribution sensitivity beta",
            paper_value=f"'PCSGD has a bias floor that grows with distribution sensitivity beta' ({_NO_NUMBER})",
            paper_setting=setting,
            metric="plateau_mse",
            check=Where(Trend("pcsgd", "beta"), family=family),
            effect=0.5,
            effect_basis=_RHO_BASIS,
            source="abstract",
        ),
        Claim(
            id=f"{prefix}control_unbiased",
            statement="No bias when the clip never binds (c >= max |g|): the error keeps falling",
            paper_value=f"'zero bias when c >= max |g| (control)' ({_NO_NUMBER})",
            paper_setting=setting,
            metric="tail_slope",
            check=Where(
                Threshold("nonbinding", SLOPE_BOUND, higher_is_better=False), family=family
            ),
            effect=_SLOPE_EFFECT,
            effect_basis=(
                "margin: an unbiased SGD with 1/t steps has mse ~ 1/t (slope -1), 0.5 below "
                "the bound -0.5"
            ),
            source="card",
        ),
        Claim(
            id=f"{prefix}dicesgd_keeps_falling",
            statement="DiceSGD's error keeps falling (mse ~ 1/t: tail slope below -0.5)",
            paper_value=f"'DiceSGD error keeps falling ~1/t' ({_NO_NUMBER})",
            paper_setting=setting,
            metric="tail_slope",
            check=Where(Threshold("dicesgd", SLOPE_BOUND, higher_is_better=False), family=family),
            effect=_SLOPE_EFFECT,
            effect_basis="card: mse ~ 1/t is a tail slope of -1, 0.5 below the bound -0.5",
            source="card",
        ),
        Claim(
            id=f"{prefix}dicesgd_below_pcsgd",
            statement="DiceSGD removes the bias: its plateau is below PCSGD's",
            paper_value=f"'DiceSGD has none' (no bias floor; {_NO_NUMBER})",
            paper_setting=setting,
            metric="plateau_mse",
            check=Where(PairedMajority("dicesgd", "pcsgd", higher_is_better=False), family=family),
            effect=_MSE_EFFECT,
            effect_basis=_MSE_BASIS[family],
            source="card",
        ),
    )


CLAIMS = _claims("quad", _QUAD) + _claims("strat", _STRAT)
