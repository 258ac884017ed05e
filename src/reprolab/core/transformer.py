"""A tiny transformer toolkit shared by the transformer methods.

Every projection is an ``nn.Linear`` (never ``nn.MultiheadAttention``), so the quantize
stage reaches Q, K, V, O and the MLP of every block. Attention is pluggable:

- ``kind="softmax"``: standard scaled dot-product attention;
- ``kind="linear"``: the same scores without the softmax (``(X Wq)(X Wk)^T X Wv``, the
  linear self-attention of the interaction papers), masked entries set to zero;
- any boolean ``mask`` of shape (L, L) (``mask[i, j]``: query i may read key j), so a
  causal mask or the mask of an arbitrary DAG (``dag_mask``) is one argument.

Blocks are pre-norm and expose ``delta(x)`` = ``block(x) - x`` (the residual branch as
a function), which reversible update rules (BDIA, RevViT) need.

Seeded synthetic sequence tasks (``sequence_task``) give methods long-range targets
without any download.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import torch
from torch import nn

AttentionKind = Literal["softmax", "linear"]


# ---------------------------------------------------------------- masks


def causal_mask(length: int) -> torch.Tensor:
    """``mask[i, j]`` is True when position i may attend to j (j <= i)."""
    return torch.ones(length, length, dtype=torch.bool).tril()


def dag_mask(adjacency: np.ndarray | torch.Tensor, self_loops: bool = True) -> torch.Tensor:
    """Attention mask of a DAG: ``adjacency[j, i] = 1`` is an edge j -> i, so node i reads
    from its in-neighbours j (and itself when ``self_loops``)."""
    adj = torch.as_tensor(np.asarray(adjacency) != 0)
    if adj.ndim != 2 or adj.shape[0] != adj.shape[1]:
        raise ValueError(f"adjacency must be square, got shape {tuple(adj.shape)}")
    mask = adj.T.clone()
    if self_loops:
        mask |= torch.eye(len(mask), dtype=torch.bool)
    return mask


# ---------------------------------------------------------------- embeddings


def sinusoidal_positions(length: int, dim: int) -> torch.Tensor:
    """The fixed sin/cos table of "Attention is all you need" (any length, no training)."""
    pos = torch.arange(length, dtype=torch.float32)[:, None]
    freq = torch.exp(-math.log(10_000.0) * torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    table = torch.zeros(length, dim)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq[: dim // 2])
    return table


class TokenEmbedding(nn.Module):
    """Token ids (B, L) -> (B, L, d) with sinusoidal, learned or no positions."""

    def __init__(
        self,
        vocab: int,
        dim: int,
        max_len: int = 512,
        positions: Literal["sinusoidal", "learned", "none"] = "sinusoidal",
    ) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = positions
        if positions == "learned":
            self.pos = nn.Parameter(torch.randn(max_len, dim) * 0.02)
        elif positions == "sinusoidal":
            self.register_buffer("pos", sinusoidal_positions(max_len, dim), persistent=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.tokens(ids)
        if self.positions != "none":
            if ids.shape[1] > len(self.pos):
                raise ValueError(f"sequence length {ids.shape[1]} > max_len {len(self.pos)}")
            x = x + self.pos[: ids.shape[1]]
        return x


class PatchEmbedding(nn.Module):
    """Images (B, C, H, W) or flat (B, C*H*W) -> patch tokens (B, 1 + P, d) with a class
    token and learned positions. The patch projection is an ``nn.Linear``."""

    def __init__(self, image_size: int, patch: int, dim: int, channels: int = 1) -> None:
        super().__init__()
        if image_size % patch:
            raise ValueError(f"image size {image_size} is not a multiple of patch {patch}")
        self.image_size, self.patch, self.channels = image_size, patch, channels
        self.n_patches = (image_size // patch) ** 2
        self.proj = nn.Linear(channels * patch * patch, dim)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, 1 + self.n_patches, dim) * 0.02)

    def patches(self, x: torch.Tensor) -> torch.Tensor:
        s, p, c = self.image_size, self.patch, self.channels
        x = x.reshape(len(x), c, s // p, p, s // p, p)
        return x.permute(0, 2, 4, 1, 3, 5).reshape(len(x), self.n_patches, c * p * p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.proj(self.patches(x))
        cls = self.cls.expand(len(x), -1, -1)
        return torch.cat([cls, tokens], dim=1) + self.pos


# ---------------------------------------------------------------- attention and blocks


class Attention(nn.Module):
    """Multi-head attention from four ``nn.Linear`` projections (q, k, v, o)."""

    def __init__(
        self, dim: int, heads: int = 1, kind: AttentionKind = "softmax", bias: bool = True
    ) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim {dim} is not divisible by heads {heads}")
        if kind not in ("softmax", "linear"):
            raise ValueError(f"unknown attention kind {kind!r}: softmax or linear")
        self.dim, self.heads, self.kind = dim, heads, kind
        self.head_dim = dim // heads
        self.q = nn.Linear(dim, dim, bias=bias)
        self.k = nn.Linear(dim, dim, bias=bias)
        self.v = nn.Linear(dim, dim, bias=bias)
        self.o = nn.Linear(dim, dim, bias=bias)

    def _split(self, x: torch.Tensor) -> torch.Tensor:  # (B, L, d) -> (B, h, L, dh)
        b, n, _ = x.shape
        return x.view(b, n, self.heads, self.head_dim).transpose(1, 2)

    def weights(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Attention weights (B, h, L, L); rows are queries."""
        q, k = self._split(self.q(x)), self._split(self.k(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        if self.kind == "softmax":
            if mask is not None:
                scores = scores.masked_fill(~mask, float("-inf"))
            return scores.softmax(dim=-1)
        return scores if mask is None else scores * mask

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        v = self._split(self.v(x))
        out = self.weights(x, mask) @ v
        return self.o(out.transpose(1, 2).reshape(x.shape))


class Block(nn.Module):
    """Pre-norm transformer block: ``x + a(ln1 x)``, then ``+ m(ln2 .)``."""

    def __init__(
        self,
        dim: int,
        heads: int = 1,
        mlp_ratio: float = 2.0,
        kind: AttentionKind = "softmax",
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads, kind)
        self.ln2 = nn.LayerNorm(dim)
        hidden = max(1, int(dim * mlp_ratio))
        self.mlp = nn.Sequential(
            nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim), nn.Dropout(dropout)
        )

    def delta(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """The residual branch h(x), so that ``forward(x) == x + delta(x)``."""
        a = self.attn(self.ln1(x), mask)
        return a + self.mlp(self.ln2(x + a))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        return x + self.delta(x, mask)


class Encoder(nn.Module):
    """Embedding -> blocks -> final norm -> linear head, pooled one of three ways:
    ``cls`` (first token), ``mean`` (over tokens), ``last`` (last token), ``none``
    (per-token outputs)."""

    def __init__(
        self,
        embed: nn.Module,
        dim: int,
        depth: int,
        out_dim: int,
        heads: int = 1,
        mlp_ratio: float = 2.0,
        kind: AttentionKind = "softmax",
        pool: Literal["cls", "mean", "last", "none"] = "cls",
    ) -> None:
        super().__init__()
        self.embed = embed
        self.blocks = nn.ModuleList(Block(dim, heads, mlp_ratio, kind) for _ in range(depth))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, out_dim)
        self.pool = pool

    def features(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        h = self.embed(x)
        for block in self.blocks:
            h = block(h, mask)
        return h

    def readout(self, h: torch.Tensor) -> torch.Tensor:
        h = self.norm(h)
        if self.pool == "cls":
            h = h[:, 0]
        elif self.pool == "mean":
            h = h.mean(dim=1)
        elif self.pool == "last":
            h = h[:, -1]
        return self.head(h)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.readout(self.features(x, mask))


def vit(
    image_size: int = 28,
    patch: int = 7,
    dim: int = 32,
    depth: int = 2,
    heads: int = 2,
    classes: int = 10,
    mlp_ratio: float = 2.0,
) -> Encoder:
    """A tiny ViT for 28x28 grey images (flat or (B, 1, 28, 28) input)."""
    return Encoder(PatchEmbedding(image_size, patch, dim), dim, depth, classes, heads, mlp_ratio)


def n_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


# ---------------------------------------------------------------- synthetic sequence tasks

SequenceTaskName = Literal[
    "first_token", "sum_mod", "max_token", "majority", "minority", "prefix_majority"
]
#: how many leading tokens ``prefix_majority`` counts (fixed, whatever the length)
PREFIX = 8


def sequence_task(
    name: SequenceTaskName, n: int, length: int, vocab: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Seeded token sequences (n, length) in [0, vocab) and one label per sequence, read at
    the last position. All three need information from far positions to reach the end:

    - ``first_token``: the label is the first token (one long-range hop);
    - ``sum_mod``: the sum of all tokens mod ``vocab`` (every position matters);
    - ``max_token``: the largest token (an order statistic over all positions);
    - ``majority``: the most frequent token, ties to the smallest (a count over all
      positions: a sink that averages only part of the sequence estimates it with
      sampling error, so accuracy grades with how evenly the graph mixes every position
      into the sink);
    - ``minority``: the least frequent token, ties to the smallest (a count over all
      positions that must also see which tokens are rare or absent);
    - ``prefix_majority``: the most frequent of the first ``PREFIX`` tokens, ties to the
      smallest (a count over positions far from the sink: a graph must both reach the
      start of the sequence and mix those positions evenly).
    """
    rng = np.random.default_rng(seed)
    x = rng.integers(0, vocab, size=(n, length), dtype=np.int64)
    if name == "first_token":
        y = x[:, 0].copy()
    elif name == "sum_mod":
        y = x.sum(axis=1) % vocab
    elif name == "max_token":
        y = x.max(axis=1)
    elif name in ("majority", "minority", "prefix_majority"):
        seen = x[:, :PREFIX] if name == "prefix_majority" else x
        counts = (seen[:, :, None] == np.arange(vocab)).sum(axis=1)
        y = counts.argmin(axis=1) if name == "minority" else counts.argmax(axis=1)
    else:
        raise ValueError(
            f"unknown sequence task {name!r}: first_token, sum_mod, max_token, majority, "
            "minority or prefix_majority"
        )
    return x, y.astype(np.int64)
