"""Semi-Clipped settings. Defaults are the smoke profile; PROFILE_DEFAULTS['paper'] scales up."""

from __future__ import annotations

from pydantic import Field

from reprolab.contract import MethodConfig


class SemiClippedConfig(MethodConfig):
    #: simulator draws; each is one task (its own pathways, maps and batch effects)
    n_sims: int = Field(default=3, ge=1)
    data_seed: int = Field(default=0, ge=0)
    n_pathways: int = Field(default=8, ge=2)
    perts_per_pathway: int = Field(default=10, ge=2)
    n_batches: int = Field(default=6, ge=2)
    #: batches held out (evaluation only); the rest train
    test_batches: int = Field(default=2, ge=1)
    #: fraction of perturbations held out (never seen in training)
    test_perts: float = Field(default=0.3, gt=0, lt=1)
    n_controls: int = Field(default=48, ge=4)
    reps: int = Field(default=2, ge=1)
    latent: int = Field(default=8, ge=1)
    tx_dim: int = Field(default=32, ge=2)
    img_dim: int = Field(default=24, ge=2)
    noise: float = Field(default=1.0, gt=0)
    hidden: int = Field(default=64, ge=1)
    epochs: int = Field(default=20, ge=1)
    batch_size: int = Field(default=32, ge=2)
    lr: float = Field(default=3e-3, gt=0)
    temperature: float = Field(default=0.1, gt=0)
    #: PEA: random corrections per batch and epoch, smallest control fraction, TVN shrinkage
    pea_bank: int = Field(default=8, ge=1)
    pea_min_frac: float = Field(default=0.3, gt=0, le=1)
    shrink: float = Field(default=0.1, ge=0, lt=1)
    k: int = Field(default=5, ge=1)


PROFILE_DEFAULTS = {
    "smoke": {},
    "paper": {"n_sims": 5, "perts_per_pathway": 16, "epochs": 80},
}
