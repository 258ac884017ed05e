"""lip_rcp's claims as data.

Rules, fixed before any run (core checks, 95% t-intervals over every task and seed):
- ``robust_coverage``: lip_rcp's coverage under PGD-L2 at the claim budget eps minus
  (1 - alpha) (metric ``coverage_gap``); reproduced when the interval lies above 0, not
  reproduced when below, else inconclusive.
- ``vanilla_breaks``: the same gap for vanilla CP on the same 1-Lipschitz net; the claim
  (why robust CP exists) is that it is negative: reproduced when the interval lies below 0.
- ``smaller_sets`` / ``faster``: lip_rcp - rscp paired by (task, seed) on the mean robust
  set size at clean test inputs certified for eps, and on the wall time of calibration
  plus prediction; reproduced when the interval of the difference lies below 0.
- ``lipschitz_bound``: the largest empirical ratio ||f(a) - f(b)|| / ||a - b|| of the
  lip_rcp net over random, nearby and (clean, attacked) pairs is below 1 (the premise of
  the certificate); reproduced when its interval lies below 1 + 1e-4 (float rounding).
"""

from reprolab.core.claims import Claim, PairedDifference, Threshold

_SETTING = "CIFAR-10, alpha = 0.1, eps = 0.03 (L2), 1-Lipschitz ResNet"

CLAIMS = (
    Claim(
        id="robust_coverage",
        statement=(
            "lip-rcp sets keep coverage >= 1 - alpha under L2 attacks of norm <= eps "
            "(measured: PGD-L2 on the true label's score)"
        ),
        paper_value="coverage ~0.95 at 1 - alpha = 0.9",
        paper_setting=_SETTING,
        metric="coverage_gap",
        check=Threshold(variant="lip_rcp", bound=0.0, higher_is_better=True),
        paper_effect=0.05,  # 0.95 - 0.9
    ),
    Claim(
        id="vanilla_breaks",
        statement="vanilla CP (no robustness) loses coverage below 1 - alpha under attack",
        paper_value="not stated in the card (the motivation of robust CP)",
        paper_setting="vanilla CP under adversarial attack",
        metric="coverage_gap",
        check=Threshold(variant="vanilla_cp", bound=0.0, higher_is_better=False),
    ),
    Claim(
        id="smaller_sets",
        statement="lip-rcp robust sets are smaller than randomized-smoothing RSCP sets",
        paper_value="set size ~1.72 (lip-rcp); RSCP and successors larger",
        paper_setting=_SETTING,
        metric="set_size",
        check=PairedDifference(method="lip_rcp", baseline="rscp", higher_is_better=False),
    ),
    Claim(
        id="faster",
        statement="lip-rcp calibration + prediction is cheaper than Monte-Carlo RSCP",
        paper_value="much cheaper (no Monte-Carlo sampling); number not stated in the card",
        paper_setting=_SETTING,
        metric="wall_seconds",
        check=PairedDifference(method="lip_rcp", baseline="rscp", higher_is_better=False),
    ),
    Claim(
        id="lipschitz_bound",
        statement="the network is 1-Lipschitz in L2 (empirical ratio over pairs <= 1)",
        paper_value="1-Lipschitz by construction",
        paper_setting="1-Lipschitz networks (orthogonal layers)",
        metric="lipschitz_emp",
        check=Threshold(variant="lip_rcp", bound=1.0 + 1e-4, higher_is_better=False),
    ),
)
