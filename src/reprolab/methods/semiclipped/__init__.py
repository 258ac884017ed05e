"""Semi-Clipped: cross-modal distillation of image embeddings into transcriptomics
(Bendidi et al., arXiv 2505.21317).

Paper: "A Cross Modal Knowledge Distillation & Data Augmentation Recipe for Improving
Transcriptomics Representations through Morphological Features".
Code: https://github.com/valence-labs/unimodality-pipeline
"""

from reprolab.contract import MethodSpec, Quantization, Variant
from reprolab.methods.semiclipped.claims import CLAIMS
from reprolab.methods.semiclipped.config import PROFILE_DEFAULTS, SemiClippedConfig

SPEC = MethodSpec(
    slug="semiclipped",
    title="Semi-Clipped: CLIP distillation of frozen image embeddings into a transcriptomics adapter",
    paper=(
        "Bendidi et al., A Cross Modal Knowledge Distillation & Data Augmentation Recipe for "
        "Improving Transcriptomics Representations through Morphological Features (arXiv 2505.21317)"
    ),
    code="https://github.com/valence-labs/unimodality-pipeline",
    config_model=SemiClippedConfig,
    profile_defaults=PROFILE_DEFAULTS,
    variants=(
        Variant(
            "semiclipped", "MLP adapter on TVN transcriptomics, CLIP loss vs frozen image side"
        ),
        Variant("semiclipped_pea", "Semi-Clipped with PEA augmentation (the method)", True),
        Variant("joint_clip", "CLIP loss with trainable adapters on both sides"),
        Variant("mse_distill", "adapter regressing the image embedding (MSE)"),
        Variant("raw", "raw transcriptomics features (no training)", reuses="semiclipped"),
        Variant("tvn", "TVN-corrected features (no training)", reuses="semiclipped"),
    ),
    claims=CLAIMS,
    quantization=Quantization(schemes=("int8_dynamic", "rtn_w8a8")),
    metrics=("recall_ood", "recall_heldout_perts"),
    test_overrides={
        "n_sims": 1,
        "perts_per_pathway": 4,
        "n_pathways": 3,
        "n_batches": 3,
        "test_batches": 1,
        "n_controls": 12,
        "tx_dim": 6,
        "img_dim": 5,
        "hidden": 8,
        "epochs": 1,
        "batch_size": 64,
        "pea_bank": 2,
        "k": 3,
        "pbmc_splits": 1,
        "quantization": ["int8_dynamic", "rtn_w8a8"],
    },
)
