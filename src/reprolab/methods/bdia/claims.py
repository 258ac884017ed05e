"""BDIA's claims as data.

Paper numbers (from the card, secondary source): ViT on CIFAR-10 89.10% (BDIA) vs 88.15%
(standard) and 86.22% (RevViT), CIFAR-100 66.09% vs 61.86%; peak training memory 693 MB vs
1571 MB (RevViT 573 MB); bit-exact reconstruction by construction (l = 9 bits, one
bit of side information per activation and block).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from reprolab.evidence.judging.claims import FIXED, Claim, Level, PairedDifference, Verdict


@dataclass(frozen=True)
class NeverNonzero:
    """A count that must be zero in every unit (no interval: one nonzero unit fails it),
    an exhaustive check."""

    variant: str
    compared: str = ""  # an optional metric holding how much was compared, for the summary

    def variants(self) -> tuple[str, ...]:
        return (self.variant,)

    def evaluate(self, table: pd.DataFrame, metric: str, level: Level = FIXED) -> Verdict:
        rows = table[(table.variant == self.variant) & (table.metric == metric)]
        if rows.empty:
            raise ValueError(f"no {metric!r} values for {self.variant}")
        total = float(rows.value.sum())
        failing = int((rows.value != 0).sum())
        what = ""
        if self.compared:
            seen = table[(table.variant == self.variant) & (table.metric == self.compared)]
            what = f" of {seen.value.sum():.4g} compared"
        return Verdict.exhaustive(
            failing,
            len(rows),
            total,
            f"{total:.0f} {metric}{what}; {failing} of {len(rows)} units nonzero",
        )


CLAIMS = (
    Claim(
        id="bit_exact",
        statement=(
            "Every block input is reconstructed bit-exactly from the last two states and "
            "the parity side information (any differing bit fails the claim)"
        ),
        paper_value="exact bit-level reversibility (by construction)",
        paper_setting="ViT, activations quantized to l = 9 fraction bits, 1 side bit per activation",
        metric="recon_bad_bits",
        check=NeverNonzero("bdia", compared="recon_bits_compared"),
        effect=0.0,
        effect_basis="exhaustive: every reconstructed bit must match (an exact count over "
        "all units)",
        source="abstract",
    ),
    Claim(
        id="accuracy",
        statement=(
            "BDIA training (gamma = +-0.5 per sample and block, gamma = 0 at inference) "
            "is at least as accurate as the standard transformer"
        ),
        paper_value="89.10% vs 88.15% (CIFAR-10); 66.09% vs 61.86% (CIFAR-100)",
        paper_setting="ViT on CIFAR-10 / CIFAR-100, held-out accuracy",
        metric="test_acc",
        check=PairedDifference(method="bdia", baseline="standard"),
        effect=0.0095,
        effect_basis="paper: 89.10 - 88.15 = 0.95 accuracy points on CIFAR-10 (card), the "
        "smaller of the two reported gains",
        source="card",
        central=True,
    ),
    Claim(
        id="vs_revvit",
        statement="BDIA training is more accurate than the RevViT-style reversible ViT",
        paper_value="89.10% vs 86.22% (CIFAR-10)",
        paper_setting="ViT on CIFAR-10, held-out accuracy",
        metric="test_acc",
        check=PairedDifference(method="bdia", baseline="revvit"),
        effect=0.0288,
        effect_basis="paper: 89.10 - 86.22 = 2.88 accuracy points on CIFAR-10 (card)",
        source="card",
    ),
    Claim(
        id="less_memory",
        statement=(
            "BDIA training holds less activation memory for backward than the standard transformer"
        ),
        paper_value="peak memory 693 MB vs 1571 MB (ratio 0.44)",
        paper_setting="ViT on CIFAR-10, peak training memory on a GPU",
        metric="saved_mb",
        # bytes held for backward depend only on tensor shapes: the same for every seed
        check=PairedDifference(
            method="bdia", baseline="standard", higher_is_better=False, deterministic=True
        ),
        effect=0.0,
        effect_basis="exact: bytes held for backward are deterministic, compared exactly "
        "(the paper's ratio is 693 / 1571 = 0.44 of peak memory)",
        source="card",
    ),
)
