"""Strategic classification as a Lightning module: PCSGD and DiceSGD clip every
per-sample gradient inside the optimizer step (``ClippedPerformativeSGD``), then average
over the minibatch (Zhang et al.'s DiceSGD). The model and its references are in
``strategic.py``.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

from reprolab.core.training import HistoryModule


def clip_rows(g: torch.Tensor, c: float) -> torch.Tensor:
    """clip_c over the last axis, as algorithms.clip."""
    norm = g.norm(dim=-1, keepdim=True)
    scale = torch.where(norm > 0, (c / norm).clamp(max=1.0), torch.ones_like(norm))
    return g * scale


@dataclasses.dataclass(frozen=True)
class UpdateRule:
    """The parameters of one PCSGD / DiceSGD update (the optimizer's param-group defaults):
    step size ``lr * lr_t0 / (lr_t0 + t)``, clip thresholds c (``clip``) and DiceSGD's C2
    (``clip2``), noise std ``sigma``, projection ``radius``, and the noise ``seed``."""

    variant: str
    lr: float
    lr_t0: float
    clip: float
    clip2: float
    sigma: float
    radius: float
    seed: int


class ClippedPerformativeSGD(torch.optim.Optimizer):
    """PCSGD / DiceSGD on a (chains, d) parameter, from per-sample gradients.

    ``step()`` reads the per-sample gradients from the parameter's ``grad_sample``
    (Opacus's convention; shape (chains, batch, d)), clips each, averages over the batch
    and updates every chain:
      pcsgd (and the non-binding control): theta <- P_X(theta - gamma_t (mean clip_c(g) + zeta))
      dicesgd: v = mean clip_C1(g) + clip_C2(e); theta <- theta - gamma_t (v + zeta);
               e <- e + mean g - v
    The noise zeta is a function of (seed, t) only, so a resumed run replays it exactly.
    """

    def __init__(self, params, rule: UpdateRule) -> None:
        super().__init__(params, dataclasses.asdict(rule))

    @torch.no_grad()
    def step(self, closure=None):
        if closure is not None:
            with torch.enable_grad():
                closure()
        for group in self.param_groups:
            (theta,) = group["params"]
            per_sample_grads = getattr(theta, "grad_sample", None)
            if per_sample_grads is None:
                raise ValueError("ClippedPerformativeSGD.step: set theta.grad_sample first")
            state = self.state[theta]
            t = int(state.get("step", 0))
            gamma = group["lr"] * group["lr_t0"] / (group["lr_t0"] + t)
            zeta = 0.0
            if group["sigma"] > 0:
                gen = torch.Generator().manual_seed(2 * (group["seed"] * 1_000_003 + t) + 1)
                zeta = group["sigma"] * torch.randn(theta.shape, generator=gen, dtype=theta.dtype)
            clipped = clip_rows(per_sample_grads, group["clip"]).mean(1)
            if group["variant"] == "dicesgd":
                if "e" not in state:
                    state["e"] = torch.zeros_like(theta)
                e = state["e"]
                v = clipped + clip_rows(e, group["clip2"])
                theta.sub_(gamma * (v + zeta))
                e.add_(per_sample_grads.mean(1) - v)
            else:
                new = theta - gamma * (clipped + zeta)
                norm = new.norm(dim=-1, keepdim=True)
                theta.copy_(new * (group["radius"] / norm).clamp(max=1.0))
            state["step"] = t + 1


class StrategicClassification(HistoryModule):
    """Chains of PCSGD / DiceSGD on strategic classification, one iteration per step.

    The data loader only paces the epochs: each step draws its minibatch from D(theta_t)
    itself (agents respond to the current model), ``batch`` agents per chain, with a
    generator that is a function of (seed, t). The squared error and the bias to theta_PS
    are recorded after every iteration in buffers, so a resumed run keeps them.
    """

    def __init__(
        self,
        x: np.ndarray,
        y: np.ndarray,
        mask: np.ndarray,
        theta_ps: np.ndarray,
        *,
        beta: float,
        lam: float,
        rule: UpdateRule,
        chains: int,
        batch: int,
        steps: int,
    ) -> None:
        super().__init__()
        self.automatic_optimization = False
        dt = torch.float64
        self.x = torch.as_tensor(x, dtype=dt)
        self.y = torch.as_tensor(y, dtype=dt)
        self.mask = torch.as_tensor(mask, dtype=dt)
        self.target = torch.as_tensor(theta_ps, dtype=dt)
        self.beta, self.lam, self.chains, self.batch = beta, lam, chains, batch
        self.rule = rule
        self.theta = torch.nn.Parameter(torch.zeros(chains, x.shape[1], dtype=dt))
        self.register_buffer("mse", torch.full((steps + 1,), math.nan, dtype=dt))
        self.register_buffer("bias", torch.full((steps + 1,), math.nan, dtype=dt))
        self.register_buffer("n_clipped", torch.zeros((), dtype=torch.int64))
        self._record(0)

    def _record(self, t: int) -> None:
        err = self.theta.detach() - self.target
        self.mse[t] = (err**2).sum(1).mean()
        self.bias[t] = err.mean(0).norm()

    def per_sample_grads(self, theta: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """(chains, batch, d) gradients with agents idx drawn from D(theta)."""
        xs = self.x[idx] - self.beta * (theta * self.mask)[:, None, :]
        p = torch.sigmoid((xs * theta[:, None, :]).sum(-1))
        return (p - self.y[idx])[..., None] * xs + self.lam * theta[:, None, :]

    def training_step(self, batch, batch_idx):
        t = self.global_step  # optimizer steps done so far (restored on resume)
        gen = torch.Generator().manual_seed(2 * (self.rule.seed * 1_000_003 + t))
        idx = torch.randint(len(self.y), (self.chains, self.batch), generator=gen)
        grads = self.per_sample_grads(self.theta.detach(), idx)
        self.n_clipped += int((grads.norm(dim=-1) > self.rule.clip).sum())
        self.theta.grad_sample = grads
        self.optimizers().step()
        self._record(t + 1)

    def configure_optimizers(self):
        return ClippedPerformativeSGD([self.theta], self.rule)
