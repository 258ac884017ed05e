"""bit_dgdm: outlier-aware post-training quantization of a discrete graph diffusion model.

Paper: Gong, Sun, "Outlier-Aware Post-Training Quantization for Discrete Graph Diffusion
Models" (Bit-DGDM, PMLR 267). Official code: said to be public, not found. The quantizer
itself lives in ``reprolab.core.quant`` (schemes ``bitdgdm_w4a4`` and ablations); this
method trains the DiGress-style model it quantizes and measures what quantization costs.
"""

from reprolab.contract import MethodSpec, Quantization, Variant
from reprolab.methods.bit_dgdm.claims import CLAIMS
from reprolab.methods.bit_dgdm.config import PROFILE_DEFAULTS, BitDGDMConfig

SPEC = MethodSpec(
    slug="bit_dgdm",
    title="Bit-DGDM: outlier-aware W4A4 quantization of a DiGress-style graph diffusion model",
    paper=(
        "Gong, Sun, Outlier-Aware Post-Training Quantization for Discrete Graph Diffusion "
        "Models (PMLR 267)"
    ),
    code="not found (said to be public); quantizer reconstructed in reprolab.core.quant",
    config_model=BitDGDMConfig,
    profile_defaults=PROFILE_DEFAULTS,
    variants=(
        Variant(
            "digress",
            "DiGress-style discrete graph diffusion (marginal transitions, graph transformer); "
            "the paper's comparisons are quantization schemes of this one model",
            True,
        ),
    ),
    claims=CLAIMS,
    quantization=Quantization(
        schemes=(
            "int8_dynamic",
            "rtn_w8a8",
            "rtn_w4a4",
            "bitdgdm_w4a4",
            "bitdgdm_w4a4_noact",
            "bitdgdm_w4a4_nodecomp",
        )
    ),
    metrics=(
        "validity",
        "uniqueness",
        "mmd_avg",
        "mmd_avg_floor",
        "memory_ratio_16bit",
        "memory_ratio",
        "effective_mb",
        "novelty",
    ),
    test_overrides={
        "qm9_train": 48,
        "qm9_val": 8,
        "qm9_test": 8,
        "community_train": 24,
        "community_val": 4,
        "community_test": 6,
        "community_nodes": [6, 10],
        "steps": 3,
        "hidden_x": 8,
        "hidden_e": 4,
        "hidden_y": 4,
        "layers": 1,
        "heads": 2,
        "epochs": 1,
        "batch_size": 32,
        "qm9_samples": 6,
        "community_samples": 6,
        "calib_graphs": 2,
    },
)
