"""lip_rcp's claims as data.

Rules, fixed before any run (core checks; intervals over every task and seed read at the
look of the sequential plan, ``core.claims.Level``: alpha 0.05 two-sided overall):
- ``robust_coverage``: lip_rcp's coverage under PGD-L2 at the claim budget eps minus
  (1 - alpha) (metric ``coverage_gap``); reproduced when the interval lies above 0, not
  reproduced when below, else inconclusive.
- ``vanilla_breaks``: the same gap for vanilla CP on the same 1-Lipschitz net; the claim
  (why robust CP exists) is that it is negative: reproduced when the interval lies below 0.
- ``smaller_sets`` / ``faster``: lip_rcp - rscp paired by (task, seed) on the mean robust
  set size at clean test inputs certified for eps, and on the wall time of calibration
  plus prediction; reproduced when the interval of the difference lies below 0.
  ``smaller_sets`` is the central claim.
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
        effect=0.05,
        effect_basis="paper: 0.95 - 0.90 (card)",
        source="card",
    ),
    Claim(
        id="vanilla_breaks",
        statement="vanilla CP (no robustness) loses coverage below 1 - alpha under attack",
        paper_value=(
            "'under adversarial attacks, classical conformal guarantees do not hold "
            "anymore' (abstract); no number"
        ),
        paper_setting="vanilla CP under adversarial attack",
        metric="coverage_gap",
        check=Threshold(variant="vanilla_cp", bound=0.0, higher_is_better=False),
        effect=0.01,
        effect_basis="margin: one point of coverage (0.01); no number in the abstract or card",
        source="abstract",
    ),
    Claim(
        id="smaller_sets",
        statement="lip-rcp robust sets are smaller than randomized-smoothing RSCP sets",
        paper_value="set size ~1.72 (lip-rcp); RSCP and successors larger",
        paper_setting=_SETTING,
        metric="set_size",
        check=PairedDifference(method="lip_rcp", baseline="rscp", higher_is_better=False),
        effect=0.1,
        effect_basis=(
            "margin: 0.1 in mean set size (about 6% of the card's 1.72); the card gives no "
            "RSCP size"
        ),
        source="card",
        central=True,
    ),
    Claim(
        id="faster",
        statement="lip-rcp calibration + prediction is cheaper than Monte-Carlo RSCP",
        paper_value="much cheaper (no Monte-Carlo sampling); number not stated in the card",
        paper_setting=_SETTING,
        metric="wall_seconds",
        check=PairedDifference(method="lip_rcp", baseline="rscp", higher_is_better=False),
        effect=0.1,
        effect_basis=(
            "margin: 0.1 s of wall time per unit, above timer jitter on a shared CPU; the "
            "card says only 'much cheaper'"
        ),
        source="card",
    ),
    Claim(
        id="lipschitz_bound",
        statement="the network is 1-Lipschitz in L2 (empirical ratio over pairs <= 1)",
        paper_value="1-Lipschitz by construction",
        paper_setting="1-Lipschitz networks (orthogonal layers)",
        metric="lipschitz_emp",
        check=Threshold(variant="lip_rcp", bound=1.0 + 1e-4, higher_is_better=False),
        effect=0.01,
        effect_basis=(
            "margin: a 1% excess of the Lipschitz constant (it would overstate certified "
            "radii by 1%)"
        ),
        source="abstract",
    ),
)
