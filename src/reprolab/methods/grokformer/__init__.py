"""GrokFormer: Graph Fourier Kolmogorov-Arnold Transformers (Ai et al.).

A Fourier-series spectral filter on the normalized-Laplacian eigenvalues inside a
transformer layer, checked on contextual SBMs over a homophily sweep and on the
filter-fitting benchmark. Authors' code: https://github.com/GGA23/GrokFormer
"""

from reprolab.contract import MethodSpec, Quantization, Variant
from reprolab.methods.grokformer.claims import CLAIMS
from reprolab.methods.grokformer.config import PROFILE_DEFAULTS, GrokFormerConfig

_NODE = ("acc", "val_acc")
_FILTER = ("sse", "r2")

SPEC = MethodSpec(
    slug="grokformer",
    title="GrokFormer: Fourier-series spectral filters in a graph transformer",
    paper=(
        "Ai et al., GrokFormer: Graph Fourier Kolmogorov-Arnold Transformers "
        "(arXiv 2411.17296, ICML 2025, PMLR 267)"
    ),
    code="https://github.com/GGA23/GrokFormer",
    config_model=GrokFormerConfig,
    profile_defaults=PROFILE_DEFAULTS,
    variants=(
        Variant(
            "grokformer", "GrokFormer node classifier (MHA + Fourier filter)", True, None, _NODE
        ),
        Variant("mlp", "two-layer MLP on node features (no graph)", metrics=_NODE),
        Variant("gcn", "two torch_geometric GCNConv layers", metrics=_NODE),
        Variant("appnp", "MLP + torch_geometric APPNP (K=10, alpha=0.1)", metrics=_NODE),
        Variant("gpr", "GPR-GNN: MLP + learnable PageRank weights over 10 hops", metrics=_NODE),
        Variant("specformer", "Specformer-lite: eigenvalue transformer -> filters", metrics=_NODE),
        Variant(
            "grok_filter",
            "GrokFormer's Fourier-series filter alone (filter fitting)",
            metrics=_FILTER,
        ),
        Variant(
            "gpr_filter", "GPR-GNN's degree-10 polynomial filter (filter fitting)", metrics=_FILTER
        ),
        Variant(
            "spec_filter",
            "Specformer-lite's eigenvalue-transformer filter (filter fitting)",
            metrics=_FILTER,
        ),
    ),
    claims=CLAIMS,
    quantization=Quantization(schemes=("int8_dynamic", "rtn_w8a8")),
    metrics=("acc", "sse", "r2", "val_acc"),
    test_overrides={
        "homophilies": [0.2, 0.8],
        "nodes": 60,
        "communities": 2,
        "bandpass_degree": 4.0,
        "features": 4,
        "hidden": 8,
        "spec_dim": 4,
        "grok_freqs": 4,
        "gpr_hops": 3,
        "epochs": 3,
        "responses": ["comb"],
        "grid_side": 5,
        "filter_images": 2,
        "filter_steps": 3,
        "history_every": 2,
    },
)
