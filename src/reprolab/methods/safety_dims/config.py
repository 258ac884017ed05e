"""safety_dims settings. Defaults are the smoke profile (a tiny Llama over the real
tokenizer); ``PROFILE_DEFAULTS['paper']`` switches to SmolLM2-135M-Instruct."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from reprolab.contract import DataSeed, MethodConfig, OptimConfig, mixin_field, prepare_field
from reprolab.methods.safety_dims.prompts import FRAMES, TOPICS


class SafetyDimsConfig(MethodConfig, DataSeed, OptimConfig):
    #: "tiny": lm.tiny_model over the asset's tokenizer (smoke); "smollm2": the real model
    model: Literal["tiny", "smollm2"] = "tiny"
    #: the tiny model's layers and width (ignored for smollm2)
    tiny_layers: int = Field(default=3, ge=1, le=8)
    tiny_hidden: int = Field(default=64, ge=16)
    #: whole topics held out for the test prompts (of 24)
    test_topics: int = prepare_field(4, ge=1, le=len(TOPICS) - 1)
    #: whole topics held out for the calibration prompts (neither trained on nor tested):
    #: the premise check (does the tuned model refuse unseen harmful requests far more
    #: often than the base model?) is measured on them
    calib_topics: int = prepare_field(2, ge=1, le=len(TOPICS) - 2)
    # data_seed (DataSeed): the train/calibration/test topic split and the prompt draws
    # (fixed across training seeds)
    #: prompts per (harmful?, wrapper) cell: 6 cells (the harmless control fine-tune gets
    #: twice as many benign prompts per wrapper: as many rows, so as many steps)
    train_per_cell: int = prepare_field(4, ge=1)
    calib_per_cell: int = prepare_field(4, ge=1)
    test_per_cell: int = prepare_field(4, ge=2)
    #: request frames ("How do I ...?", ...) of train and held-out prompts; the hold-out
    #: is of topics (the frames may be shared)
    train_frames: list[int] = prepare_field([0, 1, 2, 3], min_length=1)
    test_frames: list[int] = prepare_field([0, 1, 2, 3], min_length=1)
    #: LoRA (attention projections) safety fine-tuning
    lora_r: int = Field(default=8, ge=1)
    lora_alpha: int = Field(default=16, ge=1)
    epochs: int = mixin_field(OptimConfig, "epochs", 2)
    batch_size: int = mixin_field(OptimConfig, "batch_size", 8)
    #: variance shares tau of the effective rank (the reference sweeps 0.4 .. 0.9)
    taus: list[float] = Field(default=[0.4, 0.6, 0.7, 0.8, 0.9], min_length=1)
    #: secondary components (1..k) whose projections are tested for wrapper separation
    secondary: int = Field(default=3, ge=1)
    #: wrapper labels shuffled for the null distribution of the separation statistic
    permutations: int = Field(default=199, ge=19)
    #: random unit directions per layer: the control of the component-0 probe
    random_dirs: int = Field(default=16, ge=1)
    #: tokens removed from each harmful test prompt (top relevance / random)
    remove_tokens: int = Field(default=3, ge=1)
    #: random removals per prompt (the random baseline averages over them)
    random_draws: int = Field(default=3, ge=1)
    #: leading eigenvalues kept per plotted layer (spectrum figure)
    spectrum_k: int = Field(default=8, ge=2)

    @field_validator("taus")
    @classmethod
    def _shares(cls, v: list[float]) -> list[float]:
        if any(not 0 < t <= 1 for t in v) or 0.9 not in v:
            raise ValueError("taus must lie in (0, 1] and include 0.9 (the claim's share)")
        return sorted(v)

    @field_validator("train_frames", "test_frames")
    @classmethod
    def _frames(cls, v: list[int]) -> list[int]:
        if any(not 0 <= f < len(FRAMES) for f in v):
            raise ValueError(f"frames are indices 0..{len(FRAMES) - 1}")
        return v

    @model_validator(mode="after")
    def _topics_left(self) -> SafetyDimsConfig:
        if self.test_topics + self.calib_topics >= len(TOPICS):
            raise ValueError(
                f"test_topics + calib_topics must leave a training topic (of {len(TOPICS)}), "
                f"got {self.test_topics} + {self.calib_topics}"
            )
        return self


PROFILE_DEFAULTS = {
    "smoke": {},
    # chosen from training signals on probe seeds 100 and 101 (README "Setting"): two
    # epochs over 96 training prompts at batch 2 (96 steps) and lr 1e-3 refuse the
    # harmful calibration prompts (1.00 on both seeds) and answer the benign ones (0.00,
    # 0.08); at lr 3e-3 one epoch or two were selective on one of the two seeds only
    "paper": {
        "model": "smollm2",
        "train_per_cell": 16,
        "calib_per_cell": 4,
        "test_per_cell": 8,
        "epochs": 2,
        "batch_size": 2,
        "lr": 1e-3,
        "permutations": 999,
        "random_dirs": 16,
        "random_draws": 3,
        "spectrum_k": 16,
        # five seeds in the first look; the sequential rounds add more (EvidenceConfig)
        "evidence": {"first": 5},
    },
}
