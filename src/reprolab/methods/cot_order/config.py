"""cot_order settings. Defaults are the smoke profile (a tiny model over the real
tokenizer); ``PROFILE_DEFAULTS['paper']`` runs the real SmolLM2-135M-Instruct."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from reprolab.contract import DataSeed, MethodConfig, prepare_field


class CotOrderConfig(MethodConfig, DataSeed):
    # ------------------------------------------------------------------ data (prepare)
    #: whole templates of each family kept for the test split, drawn per seed
    #: (programs.seed_split: every seed holds out its own, a seed always the same ones)
    held_out_per_family: int = prepare_field(1, ge=1, le=3)
    #: SFT examples per seed (the same examples, in the same order, for every arm)
    n_train: int = prepare_field(16, ge=1)
    #: problems of the own test split per seed (its held-out templates)
    n_test: int = prepare_field(6, ge=1)
    #: assert statements per problem
    n_tests: int = prepare_field(5, ge=1, le=20)
    #: HumanEval problems: the first ones of the file (0: none; the HumanEval claims are
    #: out of reach at 135M, so the paper profile spends no decoding on them)
    n_humaneval: int = prepare_field(3, ge=0, le=164)
    # ------------------------------------------------------------------ model
    #: "tiny": lm.tiny_model over the asset's tokenizer (smoke); "smollm2": the real model
    model: Literal["tiny", "smollm2"] = "tiny"
    tiny_layers: int = Field(default=2, ge=1)
    tiny_hidden: int = Field(default=64, ge=8)
    tiny_context: int = Field(default=512, ge=64)
    # ------------------------------------------------------------------ SFT (LoRA)
    #: LoRA on the attention projections of the top ``lora_layers`` decoder layers; the
    #: frozen layers below are computed once per arm (sft.py)
    lora_layers: int = Field(default=1, ge=1)
    lora_r: int = Field(default=8, ge=1)
    lora_alpha: int = Field(default=16, ge=1)
    lr: float = Field(default=2e-3, gt=0)
    epochs: int = Field(default=1, ge=1)
    batch_size: int = Field(default=8, ge=1)
    max_len: int = Field(default=256, ge=16)
    # ------------------------------------------------------------------ decoding
    #: token budget of every arm, own test split and HumanEval alike (greedy decoding
    #: that stops after the code block; one generate call per model and precision)
    max_new_tokens: int = Field(default=24, ge=1)
    gen_batch: int = Field(default=8, ge=1)
    #: a generation signal for choosing ``max_new_tokens`` (method.budget_for): after
    #: SFT, decode this many fresh problems of the seed's training templates and as many
    #: of its held-out templates (never the test problems) and record the share whose
    #: answer ended (closing fence or end of text) within each budget
    #: (``TrainedUnit.signals``, read by ``make probe``); 0: none (paper runs)
    finish_check: int = Field(default=0, ge=0)
    #: sandboxes run at a time when scoring
    sandbox_workers: int = Field(default=2, ge=1)

    @model_validator(mode="after")
    def _tiny_fits(self) -> CotOrderConfig:
        if self.model == "tiny" and self.lora_layers > self.tiny_layers:
            raise ValueError(
                f"lora_layers ({self.lora_layers}) exceeds the tiny model's layers "
                f"({self.tiny_layers})"
            )
        return self


#: paper: lora_layers, lr and steps were set on the SFT loss and on fresh draws of the
#: *training* templates (never the test templates or HumanEval): with 2 layers at lr 3e-3
#: for 8 steps the reasoning-first arm had not learnt its format; 4 layers at lr 1e-2
#: for 12 steps had (loss 0.48). Budget: 96 new tokens fit the longest training target
#: (92 tokens, reasoning + code).
PROFILE_DEFAULTS = {
    "smoke": {},
    "paper": {
        "model": "smollm2",
        "n_train": 48,
        "n_test": 16,
        "n_humaneval": 8,
        # three seeds in the first look; the sequential rounds add more (EvidenceConfig)
        "evidence": {"first": 3},
        "lora_layers": 4,
        "lr": 1e-2,
        "epochs": 2,
        "max_new_tokens": 96,
        "gen_batch": 24,
    },
}
