"""GrokFormer and its baselines as torch modules, every weight in an ``nn.Linear`` where
the architecture allows it (torch_geometric's GCNConv keeps its own ``Linear``, which the
quantizer does not replace: see the README's coverage table).

Node classifiers take node features (N, d) and return logits (N, C); the graph (edge
list, eigenvalues, eigenvectors of the normalized Laplacian) is held in non-persistent
buffers set at construction, so checkpoints hold weights only and ``model(x)`` is the
whole call. Filter-fitting models map signals (N, B) to filtered signals (N, B).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from reprolab.core.transformer import Attention, Block

# ---------------------------------------------------------------- spectral filters


class FourierFilter(nn.Module):
    """GrokFormer's learnable filter on the eigenvalues:

        h(lambda) = sum_k alpha_k [w_k0 + sum_{m=1..M} (a_km sin(m lambda^k) + b_km cos(m lambda^k))]

    for k = 1..K; ``terms[k-1]`` is an ``nn.Linear(2M + 1, 1)`` whose bias is w_k0 and
    whose weights are (a_k1..a_kM, b_k1..b_kM) (plus one for a constant feature, as the
    reference's ``[1, sin, cos]`` encoding); ``alpha`` is ``nn.Linear(K, 1)`` without bias."""

    def __init__(self, orders: int, freqs: int) -> None:
        super().__init__()
        self.orders, self.freqs = orders, freqs
        self.terms = nn.ModuleList(nn.Linear(2 * freqs + 1, 1) for _ in range(orders))
        self.alpha = nn.Linear(orders, 1, bias=False)

    def basis(self, lam: torch.Tensor, k: int) -> torch.Tensor:
        """[1, sin(m lambda^k), cos(m lambda^k)] for m = 1..M, shape (N, 2M + 1)."""
        m = torch.arange(1, self.freqs + 1, dtype=lam.dtype, device=lam.device)
        arg = lam.pow(k)[:, None] * m[None, :]
        return torch.cat([torch.ones_like(lam)[:, None], arg.sin(), arg.cos()], dim=1)

    def forward(self, lam: torch.Tensor) -> torch.Tensor:
        per_order = [self.terms[k - 1](self.basis(lam, k)) for k in range(1, self.orders + 1)]
        return self.alpha(torch.cat(per_order, dim=1)).squeeze(1)


def spectral_apply(evecs: torch.Tensor, response: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """U diag(response) U^T h for h of shape (N, F)."""
    return evecs @ (response[:, None] * (evecs.T @ h))


class EigenEncoder(nn.Module):
    """Specformer-lite's filter: eigenvalues -> sinusoidal encoding (lambda scaled by
    100, as Specformer) -> ``nn.Linear`` -> one transformer block over the N eigenvalue
    tokens (set-to-set, the eigenvalues attend to each other) -> ``nn.Linear`` to
    ``filters`` responses, shape (N, filters)."""

    def __init__(self, dim: int, filters: int) -> None:
        super().__init__()
        self.dim = dim
        self.embed = nn.Linear(dim + 1, dim)
        self.block = Block(dim, heads=1)
        self.norm = nn.LayerNorm(dim)
        self.decode = nn.Linear(dim, filters)

    def forward(self, lam: torch.Tensor) -> torch.Tensor:
        div = torch.exp(
            torch.arange(0, self.dim, 2, dtype=lam.dtype, device=lam.device)
            * (-math.log(10_000.0) / self.dim)
        )
        pe = (100 * lam)[:, None] * div[None, :]
        enc = torch.cat([lam[:, None], pe.sin(), pe.cos()], dim=1)
        tokens = self.block(self.embed(enc)[None])[0]
        return self.decode(self.norm(tokens))


def gcn_operator(edge_index: torch.Tensor, n: int) -> torch.Tensor:
    """GCN's propagation matrix D~^-1/2 (A + I) D~^-1/2 (torch_geometric ``gcn_norm``), sparse."""
    from torch_geometric.nn.conv.gcn_conv import gcn_norm

    ei, w = gcn_norm(edge_index, None, n, add_self_loops=True)
    return torch.sparse_coo_tensor(ei, w, (n, n), check_invariants=False).coalesce()


class Hops(nn.Module):
    """GPR-GNN's propagation: sum_k gamma_k A^k z for k = 0..K, gamma_k the weights of one
    ``nn.Linear(K + 1, 1)`` without bias, initialised to personalised PageRank
    (alpha (1 - alpha)^k, last (1 - alpha)^K)."""

    def __init__(self, operator: torch.Tensor, hops: int, alpha: float) -> None:
        super().__init__()
        self.register_buffer("op", operator, persistent=False)
        self.hops = hops
        self.gamma = nn.Linear(hops + 1, 1, bias=False)
        init = [alpha * (1 - alpha) ** k for k in range(hops)] + [(1 - alpha) ** hops]
        with torch.no_grad():
            self.gamma.weight.copy_(torch.tensor(init)[None])

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        stack = [z]
        for _ in range(self.hops):
            stack.append(torch.sparse.mm(self.op, stack[-1]))
        return self.gamma(torch.stack(stack, dim=-1)).squeeze(-1)


# ---------------------------------------------------------------- node classifiers


def _mlp(nfeat: int, hidden: int, out: int, dropout: float) -> nn.Sequential:
    return nn.Sequential(
        nn.Dropout(dropout), nn.Linear(nfeat, hidden), nn.ReLU(), nn.Dropout(dropout),
        nn.Linear(hidden, out),
    )  # fmt: skip


def reference_init(module: nn.Module) -> None:
    """The reference's ``init_params`` (GGA23/GrokFormer utils.py), for ``Module.apply``:
    an ``nn.Linear``'s weight ~ N(0, 0.01) (std 0.01), its bias 0; other modules as they
    are. Draws from torch's global generator, in ``apply``'s (post-)order."""
    if isinstance(module, nn.Linear):
        with torch.no_grad():
            module.weight.normal_(mean=0.0, std=0.01)
            if module.bias is not None:
                module.bias.zero_()


class GrokFormer(nn.Module):
    """The GrokFormer node classifier (the reference's ``norm='none'`` path): an MLP
    encoder to C channels, then ``layers`` applications of one shared layer

        h <- h + MHA(LN h) + U diag(h(lambda)) U^T h ;  h <- h + FFN(LN h)

    with MHA the reference's linear attention Q (K^T V) (no softmax) from the core
    toolkit's ``Attention(kind="linear")``; ``Attention`` scales by 1/sqrt(d_head), the
    reference does not (a constant the learned projections absorb).

    The encoder's width is ``cfg.grok_hidden`` (None: ``cfg.hidden``, the baselines'
    width). ``cfg.grok_init == "reference"`` re-initialises every ``nn.Linear`` as the
    reference's ``init_params`` (:func:`reference_init`)."""

    def __init__(self, graph: dict, nfeat: int, classes: int, cfg) -> None:
        super().__init__()
        self.register_buffer("evals", graph["evals"], persistent=False)
        self.register_buffer("evecs", graph["evecs"], persistent=False)
        self.layers = cfg.layers
        width = cfg.hidden if cfg.grok_hidden is None else cfg.grok_hidden
        self.encoder = _mlp(nfeat, width, classes, cfg.dropout)
        self.filter = FourierFilter(cfg.grok_orders, cfg.grok_freqs)
        self.mha_norm = nn.LayerNorm(classes)
        self.mha = Attention(classes, heads=1, kind="linear")
        self.ffn_norm = nn.LayerNorm(classes)
        self.ffn = nn.Sequential(
            nn.Linear(classes, classes), nn.GELU(), nn.Linear(classes, classes)
        )
        self.drop = nn.Dropout(cfg.layer_dropout)
        if cfg.grok_init == "reference":
            self.apply(reference_init)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.encoder(x)
        response = self.filter(self.evals)
        for _ in range(self.layers):
            spec = spectral_apply(self.evecs, response, h)
            h = h + self.drop(self.mha(self.mha_norm(h)[None])[0]) + self.drop(spec)
            h = h + self.drop(self.ffn(self.ffn_norm(h)))
        return h


class SpecformerLite(nn.Module):
    """Specformer, reduced: an ``EigenEncoder`` gives ``filters`` responses; per layer the
    bases U diag(s_j) U^T h are concatenated and mixed by an ``nn.Linear`` (residual),
    then a linear classifier."""

    def __init__(self, graph: dict, nfeat: int, classes: int, cfg) -> None:
        super().__init__()
        self.register_buffer("evals", graph["evals"], persistent=False)
        self.register_buffer("evecs", graph["evecs"], persistent=False)
        self.layers = cfg.layers
        self.encoder = nn.Sequential(nn.Dropout(cfg.dropout), nn.Linear(nfeat, cfg.hidden))
        self.eig = EigenEncoder(cfg.spec_dim, cfg.spec_filters)
        self.mix = nn.Linear(cfg.spec_filters * cfg.hidden, cfg.hidden)
        self.drop = nn.Dropout(cfg.layer_dropout)
        self.classify = nn.Sequential(nn.Dropout(cfg.dropout), nn.Linear(cfg.hidden, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.encoder(x))
        s = self.eig(self.evals)
        for _ in range(self.layers):
            utx = self.evecs.T @ h
            bases = [self.evecs @ (s[:, j : j + 1] * utx) for j in range(s.shape[1])]
            h = torch.relu(h + self.drop(self.mix(torch.cat(bases, dim=1))))
        return self.classify(h)


class MLP(nn.Module):
    def __init__(self, graph: dict, nfeat: int, classes: int, cfg) -> None:
        super().__init__()
        self.net = _mlp(nfeat, cfg.hidden, classes, cfg.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class GCN(nn.Module):
    """Two torch_geometric ``GCNConv`` layers."""

    def __init__(self, graph: dict, nfeat: int, classes: int, cfg) -> None:
        super().__init__()
        from torch_geometric.nn import GCNConv

        self.register_buffer("edge_index", graph["edge_index"], persistent=False)
        self.conv1 = GCNConv(nfeat, cfg.hidden)
        self.conv2 = GCNConv(cfg.hidden, classes)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.conv1(self.drop(x), self.edge_index))
        return self.conv2(self.drop(h), self.edge_index)


class APPNPNet(nn.Module):
    """An MLP, then torch_geometric's ``APPNP`` propagation (K hops, teleport alpha)."""

    def __init__(self, graph: dict, nfeat: int, classes: int, cfg) -> None:
        super().__init__()
        from torch_geometric.nn import APPNP

        self.register_buffer("edge_index", graph["edge_index"], persistent=False)
        self.net = _mlp(nfeat, cfg.hidden, classes, cfg.dropout)
        self.prop = APPNP(cfg.gpr_hops, cfg.gpr_alpha)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.prop(self.net(x), self.edge_index)


class GPRGNN(nn.Module):
    """GPR-GNN: an MLP, then learnable generalised PageRank propagation (:class:`Hops`)
    on torch_geometric's GCN-normalised adjacency."""

    def __init__(self, graph: dict, nfeat: int, classes: int, cfg) -> None:
        super().__init__()
        op = gcn_operator(graph["edge_index"], graph["evals"].shape[0])
        self.net = _mlp(nfeat, cfg.hidden, classes, cfg.dropout)
        self.prop = Hops(op, cfg.gpr_hops, cfg.gpr_alpha)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.prop(self.net(x))


NODE_MODELS = {
    "grokformer": GrokFormer,
    "mlp": MLP,
    "gcn": GCN,
    "appnp": APPNPNet,
    "gpr": GPRGNN,
    "specformer": SpecformerLite,
}

# ---------------------------------------------------------------- filter fitting


class GrokFilter(nn.Module):
    """GrokFormer's spectral branch alone on raw signals: U diag(h(lambda)) U^T X."""

    def __init__(self, graph: dict, cfg) -> None:
        super().__init__()
        self.register_buffer("evals", graph["evals"], persistent=False)
        self.register_buffer("evecs", graph["evecs"], persistent=False)
        self.filter = FourierFilter(cfg.grok_orders, cfg.grok_freqs)

    def response(self) -> torch.Tensor:
        return self.filter(self.evals)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return spectral_apply(self.evecs, self.response(), x)


class SpecFilter(nn.Module):
    """Specformer-lite's eigenvalue transformer as one filter: U diag(s(lambda)) U^T X."""

    def __init__(self, graph: dict, cfg) -> None:
        super().__init__()
        self.register_buffer("evals", graph["evals"], persistent=False)
        self.register_buffer("evecs", graph["evecs"], persistent=False)
        self.eig = EigenEncoder(cfg.spec_dim, 1)

    def response(self) -> torch.Tensor:
        return self.eig(self.evals)[:, 0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return spectral_apply(self.evecs, self.response(), x)


class GPRFilter(nn.Module):
    """GPR-GNN's polynomial filter alone: sum_k gamma_k A^k X (a degree-K polynomial in
    the GCN-normalised adjacency with self loops)."""

    def __init__(self, graph: dict, cfg) -> None:
        super().__init__()
        # the eigenpairs of L only serve effective_response (plots)
        self.register_buffer("evals", graph["evals"], persistent=False)
        self.register_buffer("evecs", graph["evecs"], persistent=False)
        op = gcn_operator(graph["edge_index"], graph["evals"].shape[0])
        self.prop = Hops(op, cfg.gpr_hops, cfg.gpr_alpha)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.prop(x)


FILTER_MODELS = {"grok_filter": GrokFilter, "gpr_filter": GPRFilter, "spec_filter": SpecFilter}


def effective_response(model: nn.Module, evecs: torch.Tensor) -> torch.Tensor:
    """diag(U^T F U): the response of a linear graph filter F at each eigenvalue (exact
    for a spectral filter; the Rayleigh quotient u_i^T F u_i for a polynomial in a
    matrix whose eigenvectors differ, as GCN's self-loop normalisation)."""
    with torch.no_grad():
        return (evecs * model(evecs)).sum(dim=0)
