"""cplearn hooks for the pipeline stages (see reprolab.contract.MethodHooks)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from reprolab.contract import Run, TrainedUnit, Unit, figures_hook
from reprolab.core import datasets
from reprolab.methods.cplearn.config import CPLearnConfig

if TYPE_CHECKING:
    import torch

# ---------------------------------------------------------------- prepare


def task_name(dataset: str, ratio: int) -> str:
    return f"{dataset}_r{ratio}"


def prepare(run: Run, raw_dir: Path) -> tuple[dict, dict]:
    """One task per (dataset, c / f): the same arrays under each ratio's name, so that
    every unit has its own id; the units carry dataset, f and ratio as parameters."""
    cfg = run.cfg
    split, parts = (1 - cfg.test_frac, 0.0, cfg.test_frac), ("train", None, "test")
    tasks, info = datasets.image_tasks(
        run.asset("images"), cfg.datasets, cfg.max_rows, split, cfg.data_seed, parts
    )
    out = {task_name(d, r): arrays for d, arrays in tasks.items() for r in cfg.code_ratios}
    return out, info


# ---------------------------------------------------------------- train


def units(run: Run, tasks: Sequence[str]) -> list[Unit]:
    cfg = run.cfg
    # cplearn runs at every c / f of the sweep; the baselines run once, at
    # baseline_ratio, and carry that ratio so that they pair with cplearn there
    # (barlow_twins has no codes: its ratio is the pairing key, nothing else).
    out = []
    for d in sorted(cfg.datasets):
        for s in run.seeds:
            for v in run.variants:
                ratios = cfg.code_ratios if v == "cplearn" else [cfg.baseline_ratio]
                out += [
                    Unit(task_name(d, r), v, s, {"dataset": d, "f": cfg.proj_dim, "ratio": r})
                    for r in ratios
                    if task_name(d, r) in tasks
                ]
    return out


def n_codes(unit: Unit, cfg: CPLearnConfig) -> int:
    """c of the unit: ratio x f."""
    return int(unit.param["ratio"]) * int(unit.param["f"])


def _net(unit: Unit, cfg: CPLearnConfig, in_dim: int):
    from reprolab.methods.cplearn.net import SSLNet

    return SSLNet(
        in_dim=in_dim,
        width=cfg.width,
        feat_dim=cfg.feat_dim,
        proj_dim=int(unit.param["f"]),
        n_codes=n_codes(unit, cfg),
        hyperdimensional=unit.variant != "barlow_twins",
        codebook_seed=cfg.codebook_seed + unit.seed,
    )


def train_unit(
    run: Run, unit: Unit, data: dict, resume_dir: Path, progress: Callable[[str], None]
) -> TrainedUnit:
    import torch

    from reprolab.core.training import fit_resumable
    from reprolab.methods.cplearn.module import SSLModule, full_batches

    cfg = run.cfg
    x = datasets.part_tensors(data, "train")[0]
    torch.manual_seed(unit.seed)
    net = _net(unit, cfg, x.shape[1])
    module = SSLModule(net, unit.variant, cfg, unit.seed, n_codes(unit, cfg))
    train = full_batches(x, cfg.batch_size, unit.seed)
    fit_resumable(module, train, None, cfg.epochs, resume_dir, trainer=run.trainer)
    return TrainedUnit(state=module.net.state_dict(), history=module.history)


def restore(run: Run, unit: Unit, data: dict, state: dict) -> torch.nn.Module:
    from reprolab.core.training import restore_module

    return restore_module(_net(unit, run.cfg, np.asarray(data["x_train"]).shape[1]), state)


# ---------------------------------------------------------------- evaluate


def _embed(model, x: torch.Tensor, chunk: int = 1024):
    """(h, e, argmax code or None) of every row, in eval mode, batch by batch."""
    import torch

    hs, es, codes = [], [], []
    with torch.inference_mode():
        for part in x.split(chunk):
            h, e, z = model(part)
            hs.append(h)
            es.append(e)
            if z is not None:
                codes.append(z.argmax(dim=1))
    h, e = torch.cat(hs).numpy(), torch.cat(es).numpy()
    return h, e, (torch.cat(codes).numpy() if codes else None)


def linear_probe(h_train, y_train, h_test, y_test, c: float, max_iter: int, seed: int) -> float:
    """Accuracy on the test split of a logistic regression fitted on the frozen,
    standardised features of the train split."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    probe = make_pipeline(
        StandardScaler(), LogisticRegression(C=c, max_iter=max_iter, random_state=seed)
    )
    probe.fit(h_train, y_train)
    return float(probe.score(h_test, y_test))


def evaluate_unit(run: Run, model, unit: Unit, data: dict, history: list[dict]) -> dict[str, float]:
    import warnings

    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.metrics import normalized_mutual_info_score

    from reprolab.methods.cplearn import metrics

    cfg = run.cfg
    model.eval()
    y_tr, y_te = np.asarray(data["y_train"]), np.asarray(data["y_test"])
    h_tr, _, _ = _embed(model, datasets.part_tensors(data, "train")[0])
    h_te, e_te, codes = _embed(model, datasets.part_tensors(data, "test")[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        probe = linear_probe(h_tr, y_tr, h_te, y_te, cfg.probe_c, cfg.probe_max_iter, unit.seed)
        k = len(np.unique(y_tr))
        e_unit = e_te / np.maximum(np.linalg.norm(e_te, axis=1, keepdims=True), 1e-12)
        kmeans = KMeans(k, n_init=cfg.kmeans_init, random_state=unit.seed).fit(e_unit)
    # The variant's own clusters: CPLearn's argmax code (c-way); Barlow Twins has none,
    # so k-means with k = #classes on its normalised embeddings stands in.
    own, n_own = (codes, n_codes(unit, cfg)) if codes is not None else (kmeans.labels_, k)
    erank = metrics.effective_rank(e_te)
    usage = metrics.usage_entropy(own, n_own)
    return {
        "probe_acc": probe,
        "nmi": float(normalized_mutual_info_score(y_te, own)),
        "nmi_kmeans": float(normalized_mutual_info_score(y_te, kmeans.labels_)),
        "usage_entropy": usage,
        "clusters_used": float(len(np.unique(own))),
        "code_perplexity": metrics.usage_perplexity(own),
        "erank": erank,
        "erank_frac": erank / e_te.shape[1],
        "intra_var": metrics.intra_cluster_variance(e_te, kmeans.labels_),
    }


example_input = datasets.example_rows(256)


plots = figures_hook()
