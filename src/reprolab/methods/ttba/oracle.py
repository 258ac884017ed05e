"""The hard-label oracle every attack queries: predicted labels only, every query counted.

One oracle serves one attacked image ``x0`` (label ``y0``) at a time. It

- clips each query to [0, 1] (the image box) and answers with the victim's top-1 label;
- counts one query per row, except rows equal to ``x0`` itself, whose label the attacker
  already has (ART's attacks predict the clean input first; the count stays comparable);
- refuses a call that would take the count over the budget (:class:`BudgetExhausted`), so
  no attack ever uses more than the budget, whatever its own bookkeeping says;
- records, per counted query, the L2 distance of the (clipped) query to ``x0`` when it was
  adversarial and ``inf`` otherwise. The best L2 an attack had found after ``B`` queries
  is then the running minimum of that trace at ``B``: the same definition for every
  attack, whichever point it would have returned itself.

Each row is classified alone (batch of one): PyTorch's dynamic int8 linear layers
quantize activations with one scale per *batch*, so a batched query's label could
depend on the other rows in the batch.

As an ``nn.Module`` (``forward`` returns one-hot labels) it is the model that ART's
``PyTorchClassifier`` wraps, so ART's attacks see labels only and are counted here.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn


class BudgetExhausted(RuntimeError):
    """The attack asked for more queries than its budget allows."""


class HardLabelOracle(nn.Module):
    def __init__(self, model: nn.Module, n_classes: int) -> None:
        super().__init__()
        self.model = model.eval()
        self.n_classes = n_classes
        self.x0: torch.Tensor | None = None
        self.y0 = -1
        self.budget = 0
        self.count = 0
        self.trace: list[float] = []

    def reset(self, x0: torch.Tensor, y0: int, budget: int) -> None:
        """Start a new attack on ``x0`` (a flat row) with a fresh query budget."""
        self.x0 = x0.detach().float().reshape(-1).clone()
        self.y0, self.budget, self.count, self.trace = int(y0), int(budget), 0, []

    @torch.inference_mode()
    def predict_rows(self, x: torch.Tensor) -> torch.Tensor:
        """Top-1 labels of ``x`` (n, d), one row per forward pass; not counted."""
        x = x.detach().float().reshape(len(x), -1).clamp(0.0, 1.0)
        return torch.cat([self.model(row[None]).argmax(-1) for row in x])

    def labels(self, x: torch.Tensor) -> torch.Tensor:
        """Counted hard-label queries: the labels of the rows of ``x`` (n, d)."""
        if self.x0 is None:
            raise RuntimeError("HardLabelOracle.reset(x0, y0, budget) must come first")
        x = x.detach().float().reshape(len(x), -1).clamp(0.0, 1.0)
        dist = (x - self.x0).norm(dim=1)
        original = dist == 0
        n_new = int((~original).sum())
        if self.count + n_new > self.budget:
            raise BudgetExhausted(
                f"{n_new} more queries asked with {self.budget - self.count} of {self.budget} left"
            )
        out = torch.full((len(x),), self.y0, dtype=torch.long)
        if n_new:
            out[~original] = self.predict_rows(x[~original])
            adv = out[~original] != self.y0
            d = torch.where(adv, dist[~original], torch.full_like(dist[~original], math.inf))
            self.trace.extend(d.tolist())
            self.count += n_new
        return out

    def is_adversarial(self, x: torch.Tensor) -> bool:
        """One counted query: is the single point ``x`` misclassified (untargeted)?"""
        return bool(self.labels(x.reshape(1, -1))[0] != self.y0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.one_hot(self.labels(x), self.n_classes).float()

    def best_l2_at(self, budgets: list[int] | np.ndarray) -> np.ndarray:
        """Smallest L2 of an adversarial query among the first ``B`` queries, per ``B``
        (``inf`` when none was adversarial yet)."""
        best = np.minimum.accumulate(np.asarray(self.trace, dtype=float))
        out = np.full(len(budgets), math.inf)
        for i, b in enumerate(budgets):
            if b > 0 and best.size:
                out[i] = best[min(int(b), best.size) - 1]
        return out

    def queries_to_reach(self, l2: float) -> int | None:
        """Index (1-based) of the first query adversarial within ``l2``, else None."""
        hits = np.flatnonzero(np.asarray(self.trace, dtype=float) <= l2)
        return int(hits[0]) + 1 if hits.size else None
