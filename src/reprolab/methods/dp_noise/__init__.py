"""Optimized noise distributions for differential privacy (Gilani et al., ICML 2025).

Paper: "Optimizing Noise Distributions for Differential Privacy" (Gilani, Gomez,
Asoodeh, Calmon, Kosut, Sankar). Authors' repository with the pre-camera-ready PDF and
a JAX notebook of the optimiser: https://github.com/SankarLab/Renyi-DP-Mechanism-Design
"""

from reprolab.contract import MethodSpec, Quantization, Variant
from reprolab.methods.dp_noise.claims import CLAIMS
from reprolab.methods.dp_noise.config import PROFILE_DEFAULTS, DPNoiseConfig

SPEC = MethodSpec(
    slug="dp_noise",
    title="Optimized noise distributions for Renyi DP",
    paper=(
        "Gilani, Gomez, Asoodeh, Calmon, Kosut, Sankar, Optimizing Noise Distributions "
        "for Differential Privacy (ICML 2025)"
    ),
    code="https://github.com/SankarLab/Renyi-DP-Mechanism-Design",
    config_model=DPNoiseConfig,
    profile_defaults=PROFILE_DEFAULTS,
    variants=(
        Variant(
            "optimized",
            "piecewise-constant noise minimising Renyi DP at fixed variance (Alg. 1-3), "
            "started from the discretised Gaussian (Alg. 2)",
            True,
        ),
        Variant(
            "optimized_from_laplace",
            "the same optimisation (Alg. 3) started from the equal-variance Laplace instead of "
            "the discretised Gaussian (this reproduction's variant, at from_laplace_compositions)",
        ),
        Variant("gaussian", "Gaussian noise of the same variance sigma^2"),
        Variant("laplace", "Laplace noise of the same variance (scale sigma / sqrt 2)"),
    ),
    claims=CLAIMS,
    quantization=Quantization(
        schemes=(),
        reason=(
            "the trained object is a noise distribution (a vector of bin probabilities), "
            "not a network, so int8 layer quantization does not apply; evaluate instead "
            "re-measures epsilon of the pmf stored in bfloat16 and in float16 "
            "(eps_bf16, eps_fp16_log, delta_inf_fp16)"
        ),
    ),
    metrics=("eps_ref", "eps", "eps_low", "eps_moments"),
    test_overrides={
        "compositions": [10],
        "bins_per_sensitivity": 4,
        "n_bins": 100,
        "iterations": 15,
        "alpha_every": 5,
        "history_every": 5,
        "loss_grid": 1e-3,
    },
)
