"""Lightning module: the 1-Lipschitz classifier (cross-entropy on logits / T, Adam) or,
for RSCP, a ReLU MLP trained on Gaussian-noise-augmented inputs (noise std sigma). The
loss, optimiser and accuracy bookkeeping are core's ``ClassifierModule``."""

from __future__ import annotations

import torch

from reprolab.core.training import ClassifierModule
from reprolab.methods.lip_rcp.net import lip_mlp, relu_mlp


class Classifier(ClassifierModule):
    def __init__(
        self,
        in_dim: int,
        n_classes: int,
        hidden: int,
        depth: int,
        lipschitz: bool,
        bjorck_iters: int,
        temp: float,
        noise: float,
        lr: float,
        epochs: int,
        seed: int,
    ) -> None:
        if lipschitz:
            net = lip_mlp(in_dim, hidden, depth, n_classes, bjorck_iters)
        else:
            net = relu_mlp(in_dim, hidden, depth, n_classes)
        super().__init__(net, lr=lr, epochs=epochs, temp=temp)
        self.noise, self.seed = noise, seed

    def augment(self, x: torch.Tensor) -> torch.Tensor:
        if self.noise > 0:  # noise draws are a function of (seed, step): resumable
            gen = torch.Generator().manual_seed(self.seed * 1_000_003 + self.global_step)
            x = x + self.noise * torch.randn(x.shape, generator=gen)
        return x
