"""SET-Adam: Adam with the range of its adaptive stepsizes suppressed layerwise.

The BDIA paper trains its BDIA-ViT with SET-Adam (G. Zhang, "On Suppressing Range of
Adaptive Stepsizes of Adam to Improve Generalisation Performance", arXiv 2302.01029).
SET names three operations on Adam's second moment ``v_t`` before the update, done per
layer ``l`` (here: per parameter tensor, ``d_l`` coordinates):

1. **down-scaling** by the squared cosine of the angle between ``v_l`` and the all-ones
   vector, ``cos^2 = (sum_i v_l[i])^2 / (d_l sum_i v_l[i]^2)`` (1 when every coordinate
   has the same ``v``, smaller the more they spread);
2. **epsilon-embedding**: ``w_l = sqrt(cos^2 v_l / (1 - beta2^t) + eps)``, eps under the
   square root (Adam adds it outside);
3. **down-translating**: ``w~_l = w_l - tau min_i w_l[i]`` (``tau = 0.5``), which lifts
   the smallest stepsizes most;

then ``theta_t = theta_{t-1} - lr / (1 - beta1^t) * m_t / w~_t``. The equations follow
the paper's abstract (the three operations, the layerwise angle to the all-one
subvector) and a public documentation page of the algorithm (secondary; the paper's
own algorithm box was not available here): ``eps`` and ``tau`` are that page's.

With ``tau = 0`` and ``eps = 0``, a layer of one coordinate (``cos^2 = 1``) takes Adam's
step with ``eps = 0`` exactly (the unit tests check this, and a closed form of the
first step of a two-coordinate layer).
"""

from __future__ import annotations

import torch


class SETAdam(torch.optim.Optimizer):
    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        tau: float = 0.5,
    ) -> None:
        if lr <= 0:
            raise ValueError(f"lr: {lr} is not positive")
        if not (0 <= betas[0] < 1 and 0 <= betas[1] < 1):
            raise ValueError(f"betas: {betas} not in [0, 1)")
        if eps < 0:
            raise ValueError(f"eps: {eps} is negative")
        if not 0 <= tau < 1:
            raise ValueError(f"tau: {tau} not in [0, 1) (the translated denominator must stay > 0)")
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "tau": tau})

    @staticmethod
    def cos2_to_ones(v: torch.Tensor) -> torch.Tensor:
        """``(sum v)^2 / (d sum v^2)``, the squared cosine between ``v >= 0`` and the
        all-ones vector; computed on ``v / max v`` so that tiny moments do not underflow;
        1 for an all-zero ``v``."""
        top = v.max()
        if top <= 0:
            return torch.ones((), dtype=v.dtype, device=v.device)
        u = v / top
        return u.sum() ** 2 / (u.numel() * (u * u).sum())

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                t = state["step"]
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m.mul_(beta1).add_(g, alpha=1 - beta1)
                v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
                # S: down-scale by cos^2 to the all-ones vector; E: eps under the root
                w = (v * self.cos2_to_ones(v) / (1 - beta2**t) + group["eps"]).sqrt_()
                # T: down-translate by tau times the layer's smallest denominator
                w.sub_(group["tau"] * w.min())
                p.addcdiv_(m, w, value=-group["lr"] / (1 - beta1**t))
        return loss
