"""The point encoder with K mask queries, the matched mask loss shared by the three
training signals, and the 3D evaluation (Hungarian-matched IoU per object)."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from reprolab.methods.lift_gs.render import hungarian, iou_3d


def _mlp(i: int, h: int, o: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(i, h), nn.ReLU(), nn.Linear(h, o))


class PointQueryNet(nn.Module):
    """Points (B, N, 3) -> mask logits (B, N, K).

    Encoder: two EdgeConv layers on a spatial kNN graph (max over neighbours of an MLP of
    [x_i, x_j - x_i]), a max-pooled scene feature, a per-point head. Decoder: K learned
    queries (conditioned on the scene feature) that cross-attend to the point features
    ``rounds`` times; a mask logit is the scaled dot product of a point and a query.
    Every weight sits in an nn.Linear, so the quantizers reach all of it."""

    def __init__(self, queries: int = 6, hidden: int = 64, knn: int = 8, rounds: int = 2):
        super().__init__()
        h = hidden
        self.k, self.knn, self.h = queries, knn, h
        self.edge1 = _mlp(6, h, h)
        self.edge2 = _mlp(2 * h, h, h)
        self.scene = nn.Linear(2 * h, h)
        self.point = _mlp(3 * h + 3, h, h)
        self.query_embed = nn.Linear(queries, h, bias=False)
        self.query_scene = nn.Linear(h, h)
        self.attn_q = nn.ModuleList(nn.Linear(h, h) for _ in range(rounds))
        self.attn_k = nn.ModuleList(nn.Linear(h, h) for _ in range(rounds))
        self.attn_v = nn.ModuleList(nn.Linear(h, h) for _ in range(rounds))
        self.attn_o = nn.ModuleList(nn.Linear(h, h) for _ in range(rounds))
        self.ffn = nn.ModuleList(_mlp(h, 2 * h, h) for _ in range(rounds))
        self.norm1 = nn.ModuleList(nn.LayerNorm(h) for _ in range(rounds))
        self.norm2 = nn.ModuleList(nn.LayerNorm(h) for _ in range(rounds))
        self.mask_point = nn.Linear(h, h)
        self.mask_query = nn.Linear(h, h)
        self.centre = nn.Linear(h, 4)  # a query's centre (3) and log sharpness (1)

    @staticmethod
    def _edge(mlp: nn.Module, f: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        B, N, C = f.shape
        nb = torch.gather(f, 1, idx.reshape(B, -1, 1).expand(-1, -1, C)).reshape(B, N, -1, C)
        centre = f[:, :, None, :].expand_as(nb)
        return mlp(torch.cat([centre, nb - centre], -1)).amax(2)

    def forward(self, points: torch.Tensor) -> torch.Tensor:
        B, N, _ = points.shape
        k = min(self.knn + 1, N)
        idx = torch.cdist(points, points).topk(k, largest=False).indices[..., 1:]
        f1 = self._edge(self.edge1, points, idx)
        f2 = self._edge(self.edge2, torch.relu(f1), idx)
        f12 = torch.cat([f1, f2], -1)
        g = self.scene(f12).amax(1)  # (B, h)
        pf = self.point(torch.cat([f12, g[:, None, :].expand(-1, N, -1), points], -1))
        eye = torch.eye(self.k, dtype=points.dtype, device=points.device)
        q = self.query_embed(eye)[None] + self.query_scene(g)[:, None, :]  # (B, K, h)
        scale = 1.0 / math.sqrt(self.h)
        for i in range(len(self.attn_q)):
            att = torch.softmax(self.attn_q[i](q) @ self.attn_k[i](pf).transpose(1, 2) * scale, -1)
            q = self.norm1[i](q + self.attn_o[i](att @ self.attn_v[i](pf)))
            q = self.norm2[i](q + self.ffn[i](q))
        c = self.centre(q)  # (B, K, 4)
        d2 = torch.cdist(points, c[..., :3]) ** 2  # (B, N, K)
        spatial = -d2 * torch.exp(c[..., 3])[:, None, :]
        return self.mask_point(pf) @ self.mask_query(q).transpose(1, 2) * scale + spatial


# ---------------------------------------------------------------- loss


def pair_costs(pred: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """BCE and dice cost of every (query, mask) pair: pred (K, Q) probabilities, target
    (M, Q) in {0, 1}; both (K, M)."""
    p = pred.clamp(1e-5, 1 - 1e-5)
    q = target.shape[1]
    bce = -(torch.log(p) @ target.T + torch.log1p(-p) @ (1 - target).T) / q
    inter = pred @ target.T
    dice = 1 - (2 * inter + 1) / (pred.sum(1)[:, None] + target.sum(1)[None, :] + 1)
    return bce, dice


def matched_mask_loss(
    pred: torch.Tensor, target: torch.Tensor, empty_weight: float
) -> torch.Tensor:
    """Hungarian-matched mask loss: queries (K, Q) matched one-to-one to masks (M, Q);
    matched pairs pay BCE + dice, unmatched queries pay ``empty_weight`` x BCE against
    an empty mask. The matching minimises this total (a query matched to a mask saves
    its empty-mask cost), so the loss is the minimum over all assignments. The same loss
    serves pixels (render supervision) and points (unprojection, 3D labels)."""
    p = pred.clamp(1e-5, 1 - 1e-5)
    empty = -torch.log1p(-p).mean(1)  # (K,)
    if target.shape[0] == 0:
        return empty_weight * empty.mean()
    bce, dice = pair_costs(pred, target)
    cost = (bce + dice - empty_weight * empty[:, None]).detach().cpu().numpy()
    rows, cols = hungarian(cost)
    rows_t, cols_t = torch.as_tensor(rows), torch.as_tensor(cols)
    matched = (bce[rows_t, cols_t] + dice[rows_t, cols_t]).sum()
    unmatched = torch.ones(pred.shape[0], dtype=torch.bool)
    unmatched[rows_t] = False
    rest = empty_weight * empty[unmatched].sum()
    return (matched + rest) / pred.shape[0]


# ---------------------------------------------------------------- evaluation


def instance_ious(logits: np.ndarray, ids: np.ndarray, n_objects: int) -> np.ndarray:
    """Per ground-truth object, the 3D IoU of its matched predicted instance. Each point
    goes to its argmax query; predicted instances are matched one-to-one to objects by
    maximal total IoU (Hungarian); an unmatched object scores 0."""
    assign = logits.argmax(1)
    K = logits.shape[1]
    iou = np.zeros((n_objects, K))
    for o in range(n_objects):
        for k in range(K):
            iou[o, k] = iou_3d(assign == k, ids == o)
    rows, cols = hungarian(-iou)
    out = np.zeros(n_objects)
    out[rows] = iou[rows, cols]
    return out
