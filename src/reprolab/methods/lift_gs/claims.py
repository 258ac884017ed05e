"""LIFT-GS claims as data.

The paper (arXiv 2502.20389) trains 3D grounding models on ScanNet-scale scenes with
render supervision from 2D foundation models: 25.7% mAP on open-vocabulary instance
segmentation vs 20.2% for the prior state of the art, and pretraining that "effectively
multiplies fine-tuning datasets by 2x". Here every claim is read on held-out scenes
(procedural primitives, or offline meshes for the ``*_meshes`` claims): 3D IoU of
Hungarian-matched instances, paired by (task, seed, unit parameters).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from reprolab.evidence.judging.claims import (
    Claim,
    IntervalCheck,
    PairedDifference,
    Sample,
    Trend,
    Where,
    is_seed_free,
    paired,
)
from reprolab.evidence.judging.stats import ratio_of_means

_SETTING = (
    "ScanNet 3D open-vocabulary instance segmentation, mAP; render supervision from SAM/CLIP "
    "masks vs the prior state of the art (the paper does not run naive unprojection)"
)


def _pairs(table: pd.DataFrame, metric: str, variants: tuple[str, ...]) -> pd.DataFrame:
    pivot = paired(table, metric)
    missing = [v for v in variants if v not in pivot.columns]
    if missing:
        raise ValueError(f"no {metric!r} values of {', '.join(missing)}")
    return pivot[list(variants)].dropna()


@dataclass(frozen=True)
class OcclusionGap:
    """``method`` gains more over ``baseline`` on occluded objects than on visible ones:
    per unit key, (method - baseline) on ``occluded`` minus the same on ``visible``,
    claimed positive."""

    method: str
    baseline: str
    occluded: str = "miou_occluded"
    visible: str = "miou_visible"

    def variants(self) -> tuple[str, ...]:
        return (self.method, self.baseline)

    def __call__(self, table: pd.DataFrame, metric: str) -> Sample:
        occ = _pairs(table, self.occluded, self.variants())
        vis = _pairs(table, self.visible, self.variants())
        g_occ = occ[self.method] - occ[self.baseline]
        g_vis = vis[self.method] - vis[self.baseline]
        diffs = (g_occ - g_vis).dropna()
        return Sample(
            values=tuple(diffs.tolist()),
            seeds=tuple(diffs.index.get_level_values("seed")),
            summary=(
                f"{self.method} - {self.baseline}: {g_occ.mean():.3f} on occluded vs "
                f"{g_vis.mean():.3f} on visible objects, difference over {len(diffs)} pairs"
            ),
            extra={"gain_occluded": float(g_occ.mean()), "gain_visible": float(g_vis.mean())},
        )


@dataclass(frozen=True)
class GapFraction:
    """The fraction of the gap from ``baseline`` to ``upper`` that ``method`` closes:
    mean(method - baseline) / mean(upper - baseline) over the unit keys, with a
    delta-method standard error (claimed positive: part of the gap is closed). Nothing
    to test when the gap itself is not positive."""

    method: str
    baseline: str
    upper: str

    def variants(self) -> tuple[str, ...]:
        return (self.method, self.baseline, self.upper)

    def __call__(self, table: pd.DataFrame, metric: str) -> Sample:
        rows = _pairs(table, metric, self.variants())
        pairs = len(rows)
        if "seed" in rows.index.names:  # the seed is the replicate: one mean per seed
            rows = rows.groupby(level="seed").mean()
        d1 = (rows[self.method] - rows[self.baseline]).to_numpy()
        d2 = (rows[self.upper] - rows[self.baseline]).to_numpy()
        n = d1.size
        m1, m2 = float(d1.mean()), float(d2.mean())
        if m2 <= 0:
            return Sample(untested=f"no gap to close: {self.upper} - {self.baseline} = {m2:.3f}")
        r, se = ratio_of_means(d1, d2)  # delta method for a ratio of means
        if is_seed_free(table):
            se = float("inf")
        return Sample(
            estimate=r,
            se=se,
            n=n,
            summary=(
                f"{self.method} closes {r:.2f} of the {self.upper} - {self.baseline} gap "
                f"({m1:.3f} of {m2:.3f} 3D IoU) over {pairs} pairs in {n} seeds"
            ),
            extra={"gain": m1, "gap": m2},
        )


#: which unprojection the ``unproj`` variant is (``unproj_depth_tolerance``)
_UNPROJ = " (depth-aware when unproj_depth_tolerance is set, as in the paper profile; else naive)"


def _signal_claims(scenes: str, suffix: str, where: str) -> tuple[Claim, ...]:
    """The four render / unprojection / 3D-supervision claims on one scene setting."""
    return (
        Claim(
            id=f"render_beats_unproj{suffix}",
            statement=(
                "render supervision from 2D masks gives higher held-out 3D instance IoU than "
                f"unprojection of the same 2D masks{_UNPROJ}{where}"
            ),
            paper_value="25.7% vs 20.2% mAP (vs prior SOTA)",
            paper_setting=_SETTING,
            metric="miou",
            check=Where(PairedDifference(method="render", baseline="unproj"), scenes=scenes),
            effect=0.01,
            effect_basis="margin: one 3D-IoU point; the abstract's 25.7 - 20.2 mAP is against "
            "prior methods on ScanNet, another reference and metric",
            source="abstract",
        ),
        Claim(
            id=f"render_beats_unproj_occluded{suffix}",
            statement=(
                f"render supervision beats unprojection{_UNPROJ} on occluded objects{where}"
            ),
            paper_value="not reported separately (the card's small-scale test)",
            paper_setting="occluded objects: other objects hide >= occlusion_threshold of them",
            metric="miou_occluded",
            check=Where(PairedDifference(method="render", baseline="unproj"), scenes=scenes),
            effect=0.01,
            effect_basis="margin: one 3D-IoU point",
            source="card",
        ),
        Claim(
            id=f"gain_largest_under_occlusion{suffix}",
            statement=(
                "the gain of render supervision over unprojection is larger on occluded than "
                f"on visible objects{where}"
            ),
            paper_value="not reported (the card's mechanism: rendering resolves occlusion)",
            paper_setting="difference of paired gains, occluded minus visible objects",
            metric="miou_occluded",
            check=Where(
                IntervalCheck(OcclusionGap(method="render", baseline="unproj")), scenes=scenes
            ),
            effect=0.01,
            effect_basis="margin: one 3D-IoU point of the difference of paired gains",
            source="card",
        ),
        Claim(
            id=f"closes_gap_to_3d{suffix}",
            statement=(
                "render supervision (no 3D labels) closes part of the gap between unprojection "
                f"and 3D-supervised training{where}"
            ),
            paper_value="no 3D-supervised bound reported; the fraction is measured here",
            paper_setting="fraction (render - unproj) / (sup3d - unproj) of held-out 3D IoU",
            metric="miou",
            check=Where(
                IntervalCheck(GapFraction(method="render", baseline="unproj", upper="sup3d")),
                scenes=scenes,
            ),
            effect=0.1,
            effect_basis="margin: 10% of the unprojection-to-3D-supervised gap",
            source="card",
        ),
    )


_FINETUNE_SETTING = (
    "ScanNet: render-supervised pretraining, then fine-tuning on labeled 3D data; here: "
    "pretraining on N or 2N unlabeled procedural scenes at the same pretraining budget, "
    "then the same 3D-supervised fine-tuning on n labeled scenes disjoint from both, "
    "drawn per seed"
)

#: the paper's gain from pretraining, relative: the low end of the abstract's "10-30%"
#: on referential grounding after render-supervised pretraining
PAPER_RELATIVE_GAIN = 0.10
#: the from-scratch 3D IoU on record that the relative gain is taken of: ``ft_scratch``
#: (fine-tuning from scratch on the one labelled scene), fp32 held-out ``miou``, mean of
#: seeds 0-9 of the exploratory paper run of 2026-12-06 (docs/results/lift_gs/
#: metrics.csv, 0.4853); the baseline arm alone, never the difference the claim tests
FROM_SCRATCH_MIOU = 0.4853


def relative_effect(gain: float = PAPER_RELATIVE_GAIN, level: float = FROM_SCRATCH_MIOU) -> float:
    """The smallest effect that matters on the 3D-IoU scale: the paper's relative gain
    of the from-scratch level (0.10 x 0.4853 = 0.0485)."""
    return round(gain * level, 4)


CLAIMS = (
    *_signal_claims("procedural", "", ""),
    Claim(
        id="more_unlabeled_scenes_help",
        statement=(
            "render-supervised training on more unlabeled scenes gives higher held-out 3D "
            "IoU (a data-scaling curve)"
        ),
        paper_value="pretraining 'demonstrating strong scaling properties' (abstract; its 2x "
        "is about fine-tuning data, not unlabeled scenes)",
        paper_setting=(
            "ScanNet fine-tuning after render-supervised pretraining; here: 3D IoU of the "
            "render-supervised model (no fine-tuning) vs the number of its training scenes"
        ),
        metric="miou",
        check=Where(
            Trend(variant="render", param="n_scenes", increasing=True), scenes="procedural"
        ),
        effect=0.3,
        effect_basis="margin: a moderate rank correlation (Spearman rho 0.3) of 3D IoU with "
        "the number of training scenes",
        source="abstract",
    ),
    Claim(
        id="pretrain_2x_scenes_helps_finetuning",
        statement=(
            "after the same fine-tuning, pretraining on twice as many unlabeled scenes (same "
            "pretraining budget) gives higher held-out 3D IoU"
        ),
        paper_value="pretraining 'demonstrating strong scaling properties' (abstract; its 2x "
        "is about fine-tuning data, not pretraining scenes)",
        paper_setting=_FINETUNE_SETTING,
        metric="miou",
        check=PairedDifference(method="ft_pre2x", baseline="ft_pre1x"),
        effect=0.01,
        effect_basis="margin: one 3D-IoU point",
        source="abstract",
    ),
    Claim(
        id="pretraining_helps_finetuning",
        statement=(
            "render-supervised pretraining (N unlabeled scenes) before the same fine-tuning "
            "beats fine-tuning from scratch"
        ),
        paper_value="pretraining improves fine-tuned grounding (10-30% on referential grounding)",
        paper_setting=_FINETUNE_SETTING,
        metric="miou",
        check=PairedDifference(method="ft_pre1x", baseline="ft_scratch"),
        effect=relative_effect(),
        effect_basis=f"paper: +{PAPER_RELATIVE_GAIN:.0%} relative (the low end of the "
        f"abstract's 10-30%) of the from-scratch 3D IoU on record, {FROM_SCRATCH_MIOU:.4g} "
        "(ft_scratch, fp32 held-out miou, seeds 0-9 of the run of 2026-12-06)",
        source="abstract",
        central=True,
    ),
    Claim(
        id="pretraining_worth_2x_labels",
        statement=(
            "pretrained on 2N unlabeled scenes and fine-tuned on n labeled scenes, the model "
            "beats one trained from scratch on 2n labeled scenes (same fine-tuning budget)"
        ),
        paper_value="pretraining effectively multiplies fine-tuning datasets by 2x",
        paper_setting=_FINETUNE_SETTING + "; the baseline fine-tunes on 2n scenes from scratch",
        metric="miou",
        check=PairedDifference(method="ft_pre2x", baseline="ft_scratch_2lab"),
        effect=0.01,
        effect_basis="margin: one 3D-IoU point (the paper's effect is a tie: pretrained + n "
        "labels ~ scratch + 2n labels)",
        source="abstract",
    ),
    *_signal_claims("meshes", "_meshes", " (scenes of offline meshes)"),
)
