"""Rotation fusion's claims as data.

The paper (Zhang et al. 2025, Tables 1-3) fuses fine-tuned language models (RoBERTa,
DeBERTa, T5) on Emotion / NER / GLUE and ViTs on CIFAR; rotation matching (+ permutation
of the FFN) beats permutation matching (OTFusion-style) and plain averaging as the
merging method changes (average, Fisher, RegMean). Here every pair of tiny ViTs is one
(regime, seed, pair) row; differences are paired per row and pooled per regime.
"""

from reprolab.core.claims import Claim, PairedDifference, Threshold, Where

_SETTING = (
    "ViT / RoBERTa / DeBERTa / T5 fusion (Emotion, NER, GLUE), simple averaging with and "
    "without matching (Tables 1-3)"
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
    ),
    *(
        Claim(
            id=f"rotation_gt_perm_{regime}",
            statement=f"rotation+permutation fusion beats permutation-only fusion ({what})",
            paper_value="rotation > permutation in every table (e.g. +1 to +10 points)",
            paper_setting=_SETTING,
            metric="test_acc",
            check=Where(PairedDifference(method="rotation", baseline="perm"), regime=regime),
            paper_effect=0.01,  # the smallest gain in the paper's tables: +1 point
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
        )
        for regime, what in (
            ("seeds", "models from different seeds"),
            ("finetune", "fine-tunes of one base"),
        )
    ),
)
