"""bdia: exact bit-level reversible transformers (BDIA).

Paper: "On Exact Bit-level Reversible Transformers Without Changing Architectures"
(Zhang, Lewis, Kleijn, arXiv 2407.09093). The official repository
(guoqiang-zhang-x/BDIA-Transformer) holds only a README.
"""

from reprolab.contract import MethodSpec, Variant
from reprolab.methods.bdia.claims import CLAIMS
from reprolab.methods.bdia.config import PROFILE_DEFAULTS, BDIAConfig

_COMMON = ("test_acc", "val_acc", "train_acc", "saved_mb")
_RECON = (
    "recon_bad_bits",
    "recon_bits_compared",
    "recon_unequal_states",
    "recon_inputs",
    "recon_blocks",
)

SPEC = MethodSpec(
    slug="bdia",
    title="BDIA: exact bit-level reversible transformer",
    paper=(
        "Zhang, Lewis, Kleijn, On Exact Bit-level Reversible Transformers Without Changing "
        "Architectures (ICML 2025, arXiv 2407.09093)"
    ),
    code="https://github.com/guoqiang-zhang-x/BDIA-Transformer (README only)",
    config_model=BDIAConfig,
    profile_defaults=PROFILE_DEFAULTS,
    variants=(
        Variant(
            "bdia",
            "BDIA update, gamma = +-0.5 per sample and block, fixed point with parity side "
            "bits, activations recomputed by exact inversion in backward",
            is_method=True,
            metrics=_COMMON + _RECON,
        ),
        Variant(
            "standard",
            "the same ViT trained as a standard transformer (activations stored)",
            metrics=_COMMON,
        ),
        Variant(
            "revvit",
            "RevViT-style two-stream reversible ViT (same blocks, float inversion in "
            "backward; a different architecture at inference)",
            metrics=_COMMON,
        ),
    ),
    claims=CLAIMS,
    metrics=_COMMON + _RECON,
    test_overrides={
        "datasets": ["digits"],
        "max_rows": 200,
        "dim": 8,
        "depth": 3,
        "heads": 2,
        "epochs": 1,
        "batch_size": 64,
        "recon_batches": 6,
        "recon_batch": 4,
        "quantization": ["int8_dynamic", "bitdgdm_w4a4"],
    },
)
