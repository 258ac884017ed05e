"""Rotation fusion's claims as data.

The paper (Zhang et al. 2025, Tables 1-3) fuses fine-tuned language models (RoBERTa,
DeBERTa, T5) on Emotion / NER / GLUE and ViTs on CIFAR; rotation matching (+ permutation
of the FFN) beats permutation matching (OTFusion-style) and plain averaging as the
merging method changes (average, Fisher, RegMean). Here every pair of tiny ViTs is one
(regime, seed, pair) row; differences are paired per row and pooled per regime, and
their intervals are read at the look of the sequential plan (``core.claims.Level``),
alpha 0.05 two-sided overall. ``rotation_gt_perm_seeds`` is the central claim.
"""

from reprolab.core.claims import Claim, PairedDifference, Threshold, Where

_SETTING = (
    "ViT / RoBERTa / DeBERTa / T5 fusion (Emotion, NER, GLUE), simple averaging with and "
    "without matching (Tables 1-3)"
)

_GAIN = (
    "rotation matching 'substantially improves model fusion' (abstract); it improves "
    "fusion over permutation matching and plain averaging (card); no gain size given"
)
_GAIN_EFFECT = 0.01
_GAIN_BASIS = (
    "margin: one accuracy point (0.01 on the 0-1 test-accuracy scale); no gain size is "
    "given in the abstract or card"
)

CLAIMS = (
    Claim(
        id="rotation_invariance",
        statement=(
            "a random orthogonal per-head rotation of Q/K and of V/O (with a random FFN "
            "permutation) leaves the logits unchanged"
        ),
        paper_value="exact symmetry (Sec. 3, Prop. 3.1)",
        paper_setting="any multi-head attention; here max |logit change| on 256 test rows",
        metric="invariance_err",
        check=Threshold(variant="endpoints", bound=1e-4, higher_is_better=False),
        effect=9e-5,
        effect_basis=(
            "paper: the card expects max |logit change| ~1e-5 (float32 round-off) against "
            "the bound 1e-4: 1e-4 - 1e-5 = 9e-5"
        ),
        source="card",
    ),
    *(
        Claim(
            id=f"rotation_gt_perm_{regime}",
            statement=f"rotation+permutation fusion beats permutation-only fusion ({what})",
            paper_value=_GAIN,
            paper_setting=_SETTING,
            metric="test_acc",
            check=Where(PairedDifference(method="rotation", baseline="perm"), regime=regime),
            effect=_GAIN_EFFECT,
            effect_basis=_GAIN_BASIS,
            source="card",
            central=regime == "seeds",
        )
        for regime, what in (
            ("seeds", "models from different seeds"),
            ("finetune", "fine-tunes of one base"),
        )
    ),
    *(
        Claim(
            id=f"perm_gt_average_{regime}",
            statement=f"permutation-matched fusion beats plain averaging ({what})",
            paper_value="permutation > vanilla averaging (OTFusion baseline rows)",
            paper_setting=_SETTING,
            metric="test_acc",
            check=Where(PairedDifference(method="perm", baseline="average"), regime=regime),
            effect=_GAIN_EFFECT,
            effect_basis=_GAIN_BASIS,
            source="card",
        )
        for regime, what in (
            ("seeds", "models from different seeds"),
            ("finetune", "fine-tunes of one base"),
        )
    ),
)
