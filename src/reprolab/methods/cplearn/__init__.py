"""cplearn: collapse-proof non-contrastive self-supervised learning.

Paper: "Collapse-Proof Non-Contrastive Self-Supervised Learning" (Sansone, Lebailly,
Tuytelaars, ICML 2025). Official code: https://github.com/emsansone/CPLearn
(solo/losses/cplearn.py, solo/methods/cplearn.py).
"""

from reprolab.contract import MethodSpec, Variant
from reprolab.methods.cplearn.claims import CLAIMS
from reprolab.methods.cplearn.config import PROFILE_DEFAULTS, CPLearnConfig

SPEC = MethodSpec(
    slug="cplearn",
    title="CPLearn: collapse-proof non-contrastive SSL with a hyperdimensional projector",
    paper=(
        "Sansone, Lebailly, Tuytelaars, Collapse-Proof Non-Contrastive Self-Supervised "
        "Learning (ICML 2025)"
    ),
    code="https://github.com/emsansone/CPLearn",
    config_model=CPLearnConfig,
    profile_defaults=PROFILE_DEFAULTS,
    variants=(
        Variant(
            "cplearn",
            "e = tanh(BN(Linear(h))), logits e W / tau with a fixed +-1 W; prior + beta CE",
            True,
        ),
        Variant("barlow_twins", "same encoder, 3-layer MLP projector, Barlow Twins loss"),
        Variant("cplearn_noprior", "CPLearn without the prior-matching term (ablation)"),
    ),
    claims=CLAIMS,
    metrics=(
        "probe_acc",
        "nmi",
        "nmi_kmeans",
        "usage_entropy",
        "clusters_used",
        "code_perplexity",
        "erank",
        "erank_frac",
        "intra_var",
    ),
    test_overrides={
        "datasets": ["digits"],
        "max_rows": 300,
        "width": 4,
        "feat_dim": 16,
        "proj_dim": 16,
        "code_ratios": [1, 8],
        "epochs": 1,
        "batch_size": 32,
        "probe_max_iter": 100,
        "kmeans_init": 1,
    },
)
