"""ff_graphs: what makes a good feedforward computational graph (Vitvitskyi et al.).

Paper: arXiv 2502.06751 (ICML 2025). No official code; the metrics are also implemented in
haitzsaezdeocariz/beyondparallelism (proxies.py).
"""

from reprolab.contract import MethodSpec, Variant
from reprolab.methods.ff_graphs.claims import CLAIMS
from reprolab.methods.ff_graphs.config import PROFILE_DEFAULTS, FFGraphsConfig

SPEC = MethodSpec(
    slug="ff_graphs",
    title="What makes a good feedforward computational graph: mixing time and fidelity",
    paper=(
        "Vitvitskyi, Araujo, Lackenby, Velickovic, What Makes a Good Feedforward "
        "Computational Graph? (ICML 2025, arXiv 2502.06751)"
    ),
    code="none official; metrics also in github.com/haitzsaezdeocariz/beyondparallelism (proxies.py)",
    config_model=FFGraphsConfig,
    profile_defaults=PROFILE_DEFAULTS,
    variants=(
        Variant("searched", "graph rule found by a seeded search (FunSearch stand-in)", True),
        Variant("line", "line graph i-1 -> i"),
        Variant("full", "fully connected causal graph"),
        Variant("window", "sliding window of width w"),
        Variant("dilated", "power-of-two (dilated) offsets"),
        Variant("random", "budgeted random graph (in-degree of the dilated graph)"),
    ),
    claims=CLAIMS,
    metrics=("mixing_time", "fidelity", "hitting_time", "fidelity_raw"),
    test_overrides={
        "sizes": [8, 16],
        "search_trials": 3,
        "search_sizes": [16],
        "train_families": ["line", "full", "searched"],
        "train_len": 8,
        "test_lens": [12],
        "n_train": 64,
        "n_test": 32,
        "dim": 8,
        "depth": 1,
        "epochs": 1,
        "quantization": ["int8_dynamic", "rtn_w8a8"],
    },
)
