"""EnsLoss: stochastic calibrated loss ensembles (Dai, ICML 2025).

Paper: "EnsLoss: Stochastic Calibrated Loss Ensembles for Preventing Overfitting in
Classification". Official code: https://github.com/statmlben/ensLoss (losses.py).
"""

from reprolab.contract import MethodSpec, Variant
from reprolab.methods.ensloss.claims import CLAIMS
from reprolab.methods.ensloss.config import PROFILE_DEFAULTS, EnsLossConfig

SPEC = MethodSpec(
    slug="ensloss",
    title="EnsLoss: stochastic calibrated loss ensembles",
    paper="Dai, EnsLoss: Stochastic Calibrated Loss Ensembles for Preventing Overfitting in Classification (ICML 2025)",
    code="https://github.com/statmlben/ensLoss",
    config_model=EnsLossConfig,
    profile_defaults=PROFILE_DEFAULTS,
    variants=(
        Variant("ensloss", "random calibrated loss-derivatives per batch (the method)", True),
        Variant("bce", "logistic loss log(1 + exp(-yf)) (BCE with logits)"),
        Variant("hinge", "hinge loss max(0, 1 - yf)"),
        Variant("exp", "exponential loss exp(-yf)"),
    ),
    claims=CLAIMS,
    metrics=("test_acc", "val_acc", "train_acc", "train_acc_noisy"),
    assets=("images",),
    test_overrides={
        "settings": ["mlp", "cnn"],
        "datasets": ["digits"],
        "n_pairs": 1,
        "max_rows": 200,
        "epochs": 1,
        "hidden": 8,
        "cnn_datasets": ["digits"],
        "cnn_n_pairs": 1,
        "cnn_max_rows": 200,
        "cnn_epochs": 1,
        "cnn_channels": [2, 4],
        "cnn_hidden": 8,
        "quantization": ["int8_dynamic", "rtn_w8a8", "rtn_w4a4", "bitdgdm_w4a4"],
    },
)
