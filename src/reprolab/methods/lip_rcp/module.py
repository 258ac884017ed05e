"""Lightning module: the 1-Lipschitz classifier or, for RSCP, a ReLU MLP trained on
Gaussian-noise-augmented inputs (noise std sigma). The optimiser and accuracy
bookkeeping are core's ``ClassifierModule``; its loss is cross-entropy on logits / T,
except for the 1-Lipschitz net with ``loss="hkr"``: deel-torchlip's soft
hinge-Kantorovich-Rubinstein multiclass loss on the raw logits (the official training
script's default, ``--loss_fn shkr``; Serrurier, Mamalet, Fel et al., "On the
explainable properties of 1-Lipschitz neural networks: an optimal transport
perspective", 2024, as the library cites it): per class, alpha x a hinge term
relu(min_margin / 2 - sign * f) plus (1 - alpha) x the Kantorovich-Rubinstein term
-sign * f, summed over the classes with weight 1 for the true class and a softmax of
the other classes' logits for the rest. That loss keeps a running mean of |logits|; it is a
buffer of this module, so it is saved in the resume checkpoint and a resumed run goes on
with it exactly."""

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
        hkr: dict | None = None,
    ) -> None:
        if lipschitz:
            net = lip_mlp(in_dim, hidden, depth, n_classes, bjorck_iters)
        else:
            net = relu_mlp(in_dim, hidden, depth, n_classes)
        super().__init__(net, lr=lr, epochs=epochs, temp=temp)
        self.noise, self.seed = noise, seed
        self.hkr = None
        if hkr is not None:  # alpha, min_margin, temperature
            from deel.torchlip import SoftHKRMulticlassLoss

            self.hkr = SoftHKRMulticlassLoss(**hkr)
            self.register_buffer("hkr_mean", self.hkr.current_mean.clone())

    def loss(self, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.hkr is None:
            return super().loss(logits, y)
        self.hkr.current_mean = self.hkr_mean.clone()
        target = torch.nn.functional.one_hot(y, logits.shape[-1])
        value = self.hkr(logits, target)
        self.hkr_mean.copy_(self.hkr.current_mean)
        return value

    def augment(self, x: torch.Tensor) -> torch.Tensor:
        if self.noise > 0:  # noise draws are a function of (seed, step): resumable
            gen = torch.Generator().manual_seed(self.seed * 1_000_003 + self.global_step)
            x = x + self.noise * torch.randn(x.shape, generator=gen)
        return x
