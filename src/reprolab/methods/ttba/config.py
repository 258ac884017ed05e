"""ttba settings. Defaults are the smoke profile; PROFILE_DEFAULTS['paper'] scales up."""

from __future__ import annotations

from pydantic import Field, field_validator

from reprolab.contract import (
    ImageDataConfig,
    MethodConfig,
    OptimConfig,
    Split,
    mixin_field,
)


class TtbaConfig(MethodConfig, ImageDataConfig, OptimConfig):
    max_rows: int = mixin_field(ImageDataConfig, "max_rows", 1500)
    split: Split = mixin_field(ImageDataConfig, "split", [0.8, 0.1, 0.1])
    #: torch intra-op threads for training and attacks (0 = keep the stage's setting).
    #: One row per query through a small CNN: measured on the shared 2-core box, one
    #: thread ran 4x faster than two (training) and 0.15 vs ~30 ms per query (attacks).
    threads: int = Field(default=1, ge=0)
    # ---- victim CNN (variant `victim`: one per (task, seed), attacked by every attack)
    channels: list[int] = Field(default=[16, 32], min_length=2, max_length=2)
    hidden: int = Field(default=64, ge=2)
    epochs: int = mixin_field(OptimConfig, "epochs", 2)
    lr: float = mixin_field(OptimConfig, "lr", 2e-3)
    # ---- attacks
    #: correctly classified test images attacked per unit (the first ones, in a fixed order)
    n_images: int = Field(default=2, ge=1)
    #: queries per image; median L2 is reported at budget/4, budget/2 and budget
    budget: int = Field(default=200, ge=8)
    #: points of the L2-vs-queries curve (evenly spaced up to the budget)
    curve_points: int = Field(default=6, ge=1)
    #: success = an adversarial query within this L2 (the official README's --epsilon=1.0)
    success_l2: float = Field(default=1.0, gt=0)
    # ---- TtBA (defaults of the released TtBA.py)
    init_query: int = Field(default=30, ge=1)
    sigma: float = Field(default=3e-4, gt=0)
    tol: float = Field(default=1e-4, gt=0)
    k_tol: float = Field(default=1e-3, gt=0, lt=0.5)
    init_step: float = Field(default=0.02, gt=0)
    # ---- best-k diagnostic (uncounted queries, never changes the attack)
    #: images per unit on which the k grid runs (the first ones attacked); 0 = none
    diag_images: int = Field(default=1, ge=0)
    #: grid step of k (the released code's TtBA_simp uses 0.01)
    diag_grid: float = Field(default=0.05, gt=0, lt=1)

    @field_validator("channels")
    @classmethod
    def _positive_channels(cls, v: list[int]) -> list[int]:
        if any(c < 1 for c in v):
            raise ValueError("channels must be two positive integers")
        return v

    def checkpoints(self) -> list[int]:
        """Query budgets of the L2-vs-queries curve (always include budget/4, /2, 1)."""
        grid = {round(self.budget * i / self.curve_points) for i in range(1, self.curve_points + 1)}
        grid |= {self.budget // 4, self.budget // 2, self.budget}
        return sorted(b for b in grid if b > 0)


PROFILE_DEFAULTS = {
    "smoke": {},
    "paper": {
        "datasets": ["mnist", "fashion_mnist"],
        "max_rows": 5000,
        "epochs": 5,
        "n_images": 10,
        "budget": 1000,
        "curve_points": 20,
        "diag_images": 3,
        "diag_grid": 0.01,
    },
}
