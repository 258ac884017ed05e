"""The paper's objects as pure torch functions: KL, the k-head mixture, its training.

Bregman divergence of the negative entropy on the simplex: D(p, q) = KL(p || q). The
paper's Pythagorean inequality (convex strong class F, f* in F, f_sw the Bregman
projection argmin_{f in F} E KL(f || f_w)):

    E KL(f* || f_sw) <= E KL(f* || f_w) - E KL(f_sw || f_w),

i.e. gain = E KL(f*||f_w) - E KL(f*||f_sw) >= misfit = E KL(f_sw||f_w). The strong model
is trained on KL(f_strong || f_weak), strong prediction first, as in the authors' code
(``KLDivergence(outputs, labels)`` with the strong outputs as its first argument).
"""

from __future__ import annotations

import torch
from torch import nn


def kl(log_p: torch.Tensor, log_q: torch.Tensor) -> torch.Tensor:
    """KL(p || q) per row from log-probabilities (0 log 0 = 0)."""
    p = log_p.exp()
    return torch.where(p > 0, p * (log_p - log_q), torch.zeros_like(p)).sum(-1)


class MixtureHeads(nn.Module):
    """f(x) = sum_j softmax(a)_j softmax(W_j x + b_j): k linear softmax heads mixed with
    learned softmax weights in probability space (as the authors' ``LogisticRegression``
    with num_heads > 1). ``forward`` returns log f(x), shape (batch, classes)."""

    def __init__(self, dim: int, classes: int, heads: int) -> None:
        super().__init__()
        self.classes, self.heads = classes, heads
        self.linear = nn.Linear(dim, classes * heads)
        self.mix = nn.Parameter(torch.zeros(heads))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.linear(x).view(-1, self.heads, self.classes)
        log_heads = torch.log_softmax(logits, dim=-1)
        log_mix = torch.log_softmax(self.mix, dim=0)
        return torch.logsumexp(log_heads + log_mix[None, :, None], dim=1)


def fixed_atoms(module: MixtureHeads, weights: torch.Tensor) -> MixtureHeads:
    """Freeze the heads to given (heads, classes, dim) weights, zero bias: only the mixture
    weights are trained, so the class is the convex hull of the heads."""
    h, c, d = weights.shape
    with torch.no_grad():
        module.linear.weight.copy_(weights.reshape(h * c, d))
        module.linear.bias.zero_()
    module.linear.requires_grad_(False)
    return module


def fit_projection(
    module: MixtureHeads,
    x: torch.Tensor,
    log_q: torch.Tensor,
    steps: int,
    lr: float,
    weight_decay: float = 0.0,
    history_every: int = 0,
) -> list[dict[str, float]]:
    """Minimise mean KL(f(x) || q(x)) by full-batch AdamW for ``steps`` steps (weight decay
    only on the heads' weights, as in the authors' code)."""
    decay = [p for n, p in module.named_parameters() if n == "linear.weight" and p.requires_grad]
    other = [p for n, p in module.named_parameters() if n != "linear.weight" and p.requires_grad]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": weight_decay}, {"params": other, "weight_decay": 0.0}],
        lr=lr,
    )
    history = []
    for step in range(1, steps + 1):
        opt.zero_grad(set_to_none=True)
        loss = kl(module(x), log_q).mean()
        loss.backward()
        opt.step()
        if history_every and (step % history_every == 0 or step == steps):
            with torch.no_grad():
                mix = torch.softmax(module.mix, 0)
                ent = float(-(mix * mix.clamp_min(1e-12).log()).sum())
            history.append({"step": step, "train_kl": float(loss.detach()), "mix_entropy": ent})
    return history


def fit_softmax_head(
    z: torch.Tensor, y: torch.Tensor, classes: int, steps: int, lr: float
) -> nn.Linear:
    """The weak model: multinomial logistic regression on z by cross-entropy (full batch)."""
    head = nn.Linear(z.shape[1], classes)
    opt = torch.optim.Adam(head.parameters(), lr=lr)
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(head(z), y).backward()
        opt.step()
    return head


def misfit_gain(log_star, log_w, log_sw) -> dict[str, float]:
    """Expected KLs in both argument orders, gain, misfit and their gap."""
    m = {
        "kl_star_w": kl(log_star, log_w).mean(),
        "kl_star_sw": kl(log_star, log_sw).mean(),
        "misfit": kl(log_sw, log_w).mean(),
        "kl_w_star": kl(log_w, log_star).mean(),
        "kl_sw_star": kl(log_sw, log_star).mean(),
        "misfit_rev": kl(log_w, log_sw).mean(),
    }
    out = {k: float(v) for k, v in m.items()}
    out["gain"] = out["kl_star_w"] - out["kl_star_sw"]
    out["gain_minus_misfit"] = out["gain"] - out["misfit"]
    out["gain_rev"] = out["kl_w_star"] - out["kl_sw_star"]
    out["gain_minus_misfit_rev"] = out["gain_rev"] - out["misfit_rev"]
    return out
