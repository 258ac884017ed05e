"""EnsLoss's claims as data, each tested in both settings.

The paper (Sec. 5, CIFAR-10 45 class pairs) reports EnsLoss against each fixed loss as
counts of pairs where it is better / tied / worse, e.g. ResNet34 vs BCE: 41 / 4 / 0.
Here every class pair is a task; per pair the accuracy difference is tested over seeds.
The same four comparisons are checked in the MLP setting (ids ``vs_*``) and in the
paper's regime, an over-parameterised CNN fitted to noisy labels (ids ``cnn_vs_*``);
``cnn_vs_bce`` is the central claim. Per pair the interval over seeds and the sign test
over pairs (core ``PairedMajority``) are read at the look of the sequential plan
(``judging.claims.Level``), alpha 0.05 two-sided overall.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from reprolab.evidence.judging.claims import FIXED, Claim, Level, PairedMajority, Verdict

_SETTING = "CIFAR-10, 45 class pairs, ResNet34; counts of pairs better / tie / worse"
_SEVERAL = _SETTING.replace("ResNet34; counts", "several CNNs; reported as counts")
#: the card gives counts of pairs, no accuracy differences: the effect is a declared margin
_EFFECT = 0.01
_EFFECT_BASIS = (
    "margin: one accuracy point (0.01 on the 0-1 test_acc scale) per pair; the abstract "
    "and card give pair counts, no accuracy differences"
)
_BEST_FIXED = (
    "not reported as such: the card says EnsLoss beats each fixed loss (BCE, exponential, "
    "hinge) on most of 45 CIFAR-10 pairs; 'at least the best fixed loss on a majority of "
    "pairs' is the card's proposed test"
)
SETTING_LABEL = {
    "mlp": "MLP setting",
    "cnn": "CNN setting: over-parameterised CNN fitted to noisy labels",
}


@dataclass(frozen=True)
class InSetting:
    """``check`` on the units of one setting. The CNN setting's units carry the unit
    parameter ``setting=cnn``; the MLP setting's carry none (their unit ids are those of
    the runs before the CNN setting existed), so a missing value means ``mlp``. No unit
    of the setting in this run: inconclusive, 'not tested'."""

    check: Any
    setting: str

    def variants(self) -> tuple[str, ...]:
        return self.check.variants()

    @property
    def fixed_n(self) -> str:
        return getattr(self.check, "fixed_n", "")

    def scope(self) -> dict[str, tuple]:
        """The unit parameters the check reads (for the rounds that add seeds): the MLP
        setting's units have no ``setting`` parameter."""
        return {"setting": (None,) if self.setting == "mlp" else (self.setting,)}

    def select(self, table: pd.DataFrame) -> pd.DataFrame:
        if "setting" not in table.columns:
            return table if self.setting == "mlp" else table.iloc[:0]
        keep = table["setting"].fillna("mlp") == self.setting
        return table[keep].drop(columns="setting")

    def evaluate(self, table: pd.DataFrame, metric: str, level: Level = FIXED) -> Verdict:
        rows = self.select(table)
        if rows.empty:
            return Verdict.not_tested(
                f"not tested: no units of the {self.setting} setting in this run "
                "(the `settings` key)"
            )
        verdict = self.check.evaluate(rows, metric, level)
        return verdict.with_summary(f"[{self.setting}] {verdict.measured['summary']}")


def _claims(setting: str, prefix: str) -> tuple[Claim, ...]:
    where = f" ({SETTING_LABEL[setting]})"
    return (
        Claim(
            id=f"{prefix}vs_bce",
            statement="EnsLoss is at least as accurate as BCE (logistic loss) on most class "
            "pairs" + where,
            paper_value="41 / 4 / 0 of 45",
            paper_setting=_SETTING,
            metric="test_acc",
            check=InSetting(PairedMajority(method="ensloss", baseline="bce"), setting),
            effect=_EFFECT,
            effect_basis=_EFFECT_BASIS,
            source="card",
            # the paper's over-parameterised regime and the card's one number (ResNet34)
            central=setting == "cnn",
        ),
        Claim(
            id=f"{prefix}vs_hinge",
            statement="EnsLoss is at least as accurate as the hinge loss on most class pairs"
            + where,
            paper_value="better on most of 45 pairs",
            paper_setting=_SEVERAL,
            metric="test_acc",
            check=InSetting(PairedMajority(method="ensloss", baseline="hinge"), setting),
            effect=_EFFECT,
            effect_basis=_EFFECT_BASIS,
            source="card",
        ),
        Claim(
            id=f"{prefix}vs_exp",
            statement="EnsLoss is at least as accurate as the exponential loss on most class "
            "pairs" + where,
            paper_value="better on most of 45 pairs",
            paper_setting=_SEVERAL,
            metric="test_acc",
            check=InSetting(PairedMajority(method="ensloss", baseline="exp"), setting),
            effect=_EFFECT,
            effect_basis=_EFFECT_BASIS,
            source="card",
        ),
        Claim(
            id=f"{prefix}vs_best_fixed",
            statement=(
                "EnsLoss is at least as accurate as the best fixed loss of each pair "
                "(chosen on validation accuracy) on a majority of pairs" + where
            ),
            paper_value=_BEST_FIXED,
            paper_setting="CIFAR-10 class pairs, all architectures",
            metric="test_acc",
            check=InSetting(
                PairedMajority(
                    method="ensloss",
                    baseline="best",
                    baselines=("bce", "hinge", "exp"),
                    select_metric="val_acc",
                ),
                setting,
            ),
            effect=_EFFECT,
            effect_basis=_EFFECT_BASIS,
            source="card",
        ),
    )


CLAIMS = _claims("mlp", "") + _claims("cnn", "cnn_")
