"""Clipped SGD for performative prediction: PCSGD's bias and DiceSGD (Li, Yemini, Wai,
ICML 2025).

Paper: "Clipped SGD Algorithms for Performative Prediction: Tight Bounds for Stochastic
Bias and Remedies". Project page: https://qiang-cu.github.io/icml2025-clippingsgd/ (repo
Qiang-CU/icml2025-clippingsgd); code linked there: github.com/Qiang-CU/ICML2024-ClipBias
(not retrievable here; the algorithms follow the card's equations, see README).
"""

from reprolab.contract import MethodSpec, Quantization, Variant
from reprolab.methods.clipped_sgd.claims import CLAIMS
from reprolab.methods.clipped_sgd.config import (
    PROFILE_DEFAULTS,
    ClippedSGDConfig,
)

SPEC = MethodSpec(
    slug="clipped_sgd",
    title="Clipped SGD under performative data: PCSGD's bias floor and DiceSGD",
    paper=(
        "Li, Yemini, Wai, Clipped SGD Algorithms for Performative Prediction: Tight Bounds "
        "for Stochastic Bias and Remedies (ICML 2025, PMLR 267)"
    ),
    code="https://github.com/Qiang-CU/ICML2024-ClipBias",
    config_model=ClippedSGDConfig,
    profile_defaults=PROFILE_DEFAULTS,
    variants=(
        Variant("pcsgd", "projected clipped SGD, clip_c of each (per-sample) gradient", True),
        Variant("dicesgd", "DiceSGD: clip_C1(g) + clip_C2(e) with error feedback e"),
        Variant("nonbinding", "control: PCSGD with c >= sup ||grad|| on X (clip never binds)"),
    ),
    claims=CLAIMS,
    quantization=Quantization(
        schemes=(),
        reason=(
            "each unit is an optimizer run whose result is an error curve and a handful of "
            "iterates (theta in R or R^5), not a network with layers to quantize; rounding "
            "theta to int8 would only add an arbitrary error to the very distance to "
            "theta_PS being measured and says nothing about the paper's claims, which are "
            "about the optimizer's trajectory"
        ),
    ),
    metrics=(
        "plateau_mse",
        "tail_slope",
        "final_mse",
        "final_bias",
        "clip_fraction",
        "predicted_floor",
    ),
    test_overrides={
        "chains": 4,
        "history_points": 5,
        "quad_m": 50,
        "quad_betas": [0.0, 0.5],
        "quad_sigmas": [0.5],
        "quad_steps": 200,
        "strat_n": 100,
        "strat_betas": [0.5],
        "strat_sigmas": [0.5],
        "strat_epochs": 2,
        "strat_steps_per_epoch": 20,
    },
)
