"""Lightning module: DiGress's training objective. A graph of the batch is noised to a
uniform random step t in 1..T; the denoiser predicts the clean node and edge types;
loss = CE(nodes) + lambda CE(edges) over real nodes and real off-diagonal node pairs
(DiGress: lambda = 5). Noise draws are a function of (seed, step): resumable."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from reprolab.core.training import HistoryModule
from reprolab.methods.bit_dgdm import diffusion
from reprolab.methods.bit_dgdm.net import GraphDiffusion


def node_mask_of(n: torch.Tensor, n_max: int) -> torch.Tensor:
    return torch.arange(n_max)[None] < n[:, None]


def denoising_loss(
    model: GraphDiffusion,
    x0: torch.Tensor,
    e0: torch.Tensor,
    n: torch.Tensor,
    lambda_e: float,
    gen: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(total, node CE, edge CE) of one batch of clean integer graphs."""
    x0, e0 = x0.long(), e0.long()
    mask = node_mask_of(n, x0.shape[1])
    pair = diffusion.node_pair_mask(mask)
    t = torch.randint(1, model.steps + 1, (len(n),), generator=gen)
    xt, et = diffusion.noise(x0, e0, mask, model.abar[t], model.m_x, model.m_e, gen)
    xo, eo = diffusion.one_hot_graph(xt, et, mask, model.m_x.numel(), model.m_e.numel())
    logits_x, logits_e = model(xo, eo, (t.float() / model.steps)[:, None], mask)
    loss_x = F.cross_entropy(logits_x[mask], x0[mask])
    loss_e = F.cross_entropy(logits_e[pair], e0[pair])
    return loss_x + lambda_e * loss_e, loss_x, loss_e


class DiffusionModule(HistoryModule):
    def __init__(
        self, model: GraphDiffusion, lr: float, lambda_e: float, epochs: int, seed: int
    ) -> None:
        super().__init__()
        self.model = model
        self.lr, self.lambda_e, self.epochs, self.seed = lr, lambda_e, epochs, seed
        self._train = [0.0, 0]
        self._val = [0.0, 0.0, 0]

    def training_step(self, batch, batch_idx):
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + self.global_step)
        loss, _, _ = denoising_loss(self.model, *batch, self.lambda_e, gen)
        self._train[0] += float(loss.detach())
        self._train[1] += 1
        return loss

    def validation_step(self, batch, batch_idx):
        # the same noise every epoch: the curve shows the model, not the draw
        gen = torch.Generator().manual_seed(7_919 + batch_idx)
        _, loss_x, loss_e = denoising_loss(self.model, *batch, self.lambda_e, gen)
        self._val[0] += float(loss_x)
        self._val[1] += float(loss_e)
        self._val[2] += 1

    def on_validation_epoch_end(self) -> None:
        nb = max(self._val[2], 1)
        self.history.append(
            {
                "epoch": self.current_epoch,
                "train_loss": self._train[0] / max(self._train[1], 1),
                "val_ce_nodes": self._val[0] / nb,
                "val_ce_edges": self._val[1] / nb,
            }
        )
        self._train, self._val = [0.0, 0], [0.0, 0.0, 0]

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.lr, weight_decay=0.0)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=self.epochs)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "epoch"}}
