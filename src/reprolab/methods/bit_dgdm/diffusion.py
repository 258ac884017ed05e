"""DiGress's discrete diffusion with marginal transitions (Vignac et al. 2023, sec. 3-4).

Every node (edge) type is a categorical variable. One step of noise multiplies its
one-hot row by ``Q_t = alpha_t I + (1 - alpha_t) 1 m^T``, where ``m`` is the marginal
distribution of the types in the training graphs; ``t`` steps multiply by
``Qbar_t = Q_1 ... Q_t = abar_t I + (1 - abar_t) 1 m^T`` with ``abar_t = prod alpha_s``.
``m^T Q_t = m^T``: the marginal is stationary, and ``Qbar_T -> 1 m^T`` is the prior.
Edges are noised on the upper triangle and mirrored (undirected graphs).

The reverse step (DiGress eq. 4) mixes the closed-form posterior over the denoiser's
prediction of the clean graph: ``p(z_s | z_t) = sum_c p(x = c | z_t) q(z_s | z_t, x = c)``
with ``q(z_s = k | z_t, x = c) = Q_t[k, z_t] Qbar_s[c, k] / Qbar_t[c, z_t]``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def cosine_schedule(steps: int, s: float = 0.008) -> tuple[torch.Tensor, torch.Tensor]:
    """(alpha_t, abar_t) for t = 0..steps (index 0: no noise, alpha_0 = abar_0 = 1), from
    the cosine schedule of Nichol & Dhariwal as DiGress uses it (alpha_t >= 1e-4)."""
    t = torch.arange(steps + 1, dtype=torch.float64) / steps
    f = torch.cos(0.5 * math.pi * (t + s) / (1 + s)) ** 2
    abar = f / f[0]
    alpha = torch.ones(steps + 1, dtype=torch.float64)
    alpha[1:] = (abar[1:] / abar[:-1]).clamp(min=1e-4, max=1.0)
    return alpha.float(), torch.cumprod(alpha, 0).float()


def transition(a: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """``a I + (1 - a) 1 m^T`` for every entry of ``a``: shape (*a.shape, K, K)."""
    k = m.numel()
    eye = torch.eye(k, dtype=m.dtype, device=m.device)
    a = a[..., None, None]
    return a * eye + (1 - a) * m.expand(k, k)


def node_pair_mask(node_mask: torch.Tensor) -> torch.Tensor:
    """(B, n, n) bool: both ends are real nodes and i != j."""
    pair = node_mask[:, :, None] & node_mask[:, None, :]
    eye = torch.eye(node_mask.shape[1], dtype=torch.bool, device=node_mask.device)
    return pair & ~eye


def categorical(probs: torch.Tensor, gen: torch.Generator | None) -> torch.Tensor:
    """One draw per row of ``probs`` (..., K) -> integer tensor (...)."""
    flat = probs.reshape(-1, probs.shape[-1]).clamp_min(0)
    flat = flat / flat.sum(-1, keepdim=True).clamp_min(1e-30)
    return torch.multinomial(flat, 1, generator=gen).reshape(probs.shape[:-1])


def one_hot_graph(
    x: torch.Tensor, e: torch.Tensor, node_mask: torch.Tensor, kx: int, ke: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Integer types -> one-hot float tensors; padding rows, the diagonal and pairs with
    a padding node are all-zero vectors."""
    xo = F.one_hot(x.long(), kx).float() * node_mask[..., None]
    eo = F.one_hot(e.long(), ke).float() * node_pair_mask(node_mask)[..., None]
    return xo, eo


def symmetric_edges(upper: torch.Tensor) -> torch.Tensor:
    """(B, n, n) integer edge types from the strict upper triangle of ``upper``."""
    triu = torch.triu(torch.ones(upper.shape[-2:], dtype=torch.bool, device=upper.device), 1)
    e = upper * triu
    return e + e.transpose(1, 2)


def sample_graph(
    px: torch.Tensor, pe: torch.Tensor, node_mask: torch.Tensor, gen: torch.Generator | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Integer node types (B, n) and symmetric edge types (B, n, n), padding and diagonal 0,
    drawn from per-node probabilities ``px`` and per-pair ``pe`` (upper triangle used)."""
    x = categorical(px, gen) * node_mask
    e = symmetric_edges(categorical(pe, gen)) * node_pair_mask(node_mask)
    return x, e


def noise(
    x0: torch.Tensor,
    e0: torch.Tensor,
    node_mask: torch.Tensor,
    abar: torch.Tensor,
    m_x: torch.Tensor,
    m_e: torch.Tensor,
    gen: torch.Generator | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw (x_t, e_t) ~ q(. | x_0, e_0) = Cat(x_0 Qbar_t) for a per-graph ``abar`` (B,)."""
    xo, eo = one_hot_graph(x0, e0, node_mask, m_x.numel(), m_e.numel())
    px = xo @ transition(abar, m_x)  # (B, n, Kx) @ (B, Kx, Kx)
    pe = eo @ transition(abar, m_e)[:, None]  # (B, n, n, Ke) @ (B, 1, Ke, Ke)
    # padding rows are zero: give them a proper distribution, the draw is masked anyway
    px = torch.where(node_mask[..., None], px, m_x)
    pe = torch.where(node_pair_mask(node_mask)[..., None], pe, m_e)
    return sample_graph(px, pe, node_mask, gen)


def posterior(
    p0: torch.Tensor,
    zt: torch.Tensor,
    q_t: torch.Tensor,
    qbar_s: torch.Tensor,
    qbar_t: torch.Tensor,
) -> torch.Tensor:
    """``p(z_s | z_t)`` (..., K) from the predicted clean distribution ``p0`` (..., K) and
    the one-hot noisy state ``zt`` (..., K); the matrices are (K, K) or batched with
    leading dimensions that broadcast against ``p0`` minus its last axis."""
    left = zt @ q_t.transpose(-1, -2)  # [k] = Q_t[k, z_t]
    denom = zt @ qbar_t.transpose(-1, -2)  # [c] = Qbar_t[c, z_t]
    weight = p0 / denom.clamp_min(1e-30)
    probs = left * (weight @ qbar_s)  # sum_c w[c] Qbar_s[c, k], times Q_t[k, z_t]
    return probs / probs.sum(-1, keepdim=True).clamp_min(1e-30)


def prior(node_mask: torch.Tensor, m_x: torch.Tensor, m_e: torch.Tensor, gen) -> tuple:
    b, n = node_mask.shape
    return sample_graph(m_x.expand(b, n, -1), m_e.expand(b, n, n, -1), node_mask, gen)


@torch.inference_mode()
def sample(
    model, n_graphs: int, gen: torch.Generator, batch_size: int, collect: list | None = None
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Reverse diffusion with ``model`` (a ``GraphDiffusion``, fp32 or quantized): node
    counts from the training distribution, the prior ``Cat(m)``, then ``T`` posterior
    steps. Returns integer (node types, edge types) per graph, unpadded. ``collect``, when
    given, receives the denoiser's positional inputs at every step (calibration)."""
    out = []
    kx, ke, steps = model.m_x.numel(), model.m_e.numel(), model.steps
    for start in range(0, n_graphs, batch_size):
        b = min(batch_size, n_graphs - start)
        n_nodes = torch.multinomial(model.n_dist, b, replacement=True, generator=gen)
        n_max = model.n_dist.numel() - 1
        node_mask = torch.arange(n_max)[None] < n_nodes[:, None]
        x, e = prior(node_mask, model.m_x, model.m_e, gen)
        for t in range(steps, 0, -1):
            xo, eo = one_hot_graph(x, e, node_mask, kx, ke)
            t_norm = torch.full((b, 1), t / steps)
            if collect is not None:
                collect.append((xo, eo, t_norm, node_mask))
            logits_x, logits_e = model(xo, eo, t_norm, node_mask)
            q_t = (transition(model.alpha[t], model.m_x), transition(model.alpha[t], model.m_e))
            qs = (
                transition(model.abar[t - 1], model.m_x),
                transition(model.abar[t - 1], model.m_e),
            )
            qt = (transition(model.abar[t], model.m_x), transition(model.abar[t], model.m_e))
            px = posterior(torch.softmax(logits_x, -1), xo, q_t[0], qs[0], qt[0])
            pe = posterior(torch.softmax(logits_e, -1), eo, q_t[1], qs[1], qt[1])
            px = torch.where(node_mask[..., None], px, model.m_x)
            pe = torch.where(node_pair_mask(node_mask)[..., None], pe, model.m_e)
            x, e = sample_graph(px, pe, node_mask, gen)
        out += [(x[i, : n_nodes[i]], e[i, : n_nodes[i], : n_nodes[i]]) for i in range(b)]
    return out
