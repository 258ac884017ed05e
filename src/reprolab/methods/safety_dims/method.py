"""safety_dims hooks for the pipeline stages (see reprolab.contract.MethodHooks).

One task (``safety``), one trained unit per seed: LoRA safety fine-tuning of the base
model (the tiny Llama at the smoke profile, SmolLM2-135M-Instruct at the paper
profile) on harmful prompts -> refusal, benign prompts -> a short compliant opening.
The checkpoint holds the adapter alone, plus the token positions the fp32 model's
relevance picks for removal (below). ``restore`` rebuilds a :class:`Bundle`: the base
model (the "before" reference) and the tuned model with the adapter merged (the
"after"), so that the quantize stage quantizes both and every analysis at int8 compares
an int8 base with an int8 tuned model.

Evaluation (test prompts: held-out topics and held-out request frames):

- ``safety_tuned``: last-token states at every layer, before and after; SVD of the
  shift; effective rank at each tau; component 0 as a refusal classifier and its
  alignment with a difference-of-means refusal probe, per layer; whether components
  1..k separate the wrapper types (permutation test, middle layer); refusal rates.
- ``remove_top`` / ``remove_random`` (evaluation-only): the refusal score of the tuned
  model on harmful test prompts after deleting the ``remove_tokens`` message tokens of
  highest relevance (gradient x input of the component-0 projection, middle layer), or as
  many random message tokens. Relevance needs gradients, which the int8 kernels do not
  have, so it is computed once on the fp32 tuned model at the end of training (as the
  reference picks its trigger words on a reference model and attacks other models);
  each precision then scores the same edited prompts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from reprolab.contract import Run, TrainedUnit, TrainedUnits, Unit
from reprolab.core import lm
from reprolab.methods.safety_dims import analysis, residual
from reprolab.methods.safety_dims import prompts as P
from reprolab.methods.safety_dims.config import SafetyDimsConfig

if TYPE_CHECKING:
    import pandas as pd

TASK = "safety"
TOP_KEY = "relevance_top"
WRAPPER_CODES = {w: i for i, w in enumerate(P.WRAPPERS)}


def mid_layers(n_layers: int) -> list[int]:
    """The middle third of the layers (at least one): 10..19 of SmolLM2's 30."""
    a = n_layers // 3
    return list(range(a, max(a + 1, n_layers - a)))


def analysis_layer(n_layers: int) -> int:
    """The layer of the relevance and of the separation test (15 of 30; the reference
    uses layer 15 of Llama-3.1-8B's 32)."""
    return n_layers // 2


# ---------------------------------------------------------------- prepare


def _encode_split(tokenizer, items: list[P.Prompt], pad: int) -> dict[str, np.ndarray]:
    enc = [residual.encode(tokenizer, p.text, p.triggers) for p in items]
    ids, lengths = residual.pad_rows([e[0] for e in enc], pad)
    trig = np.zeros(ids.shape, dtype=np.int8)
    for i, e in enumerate(enc):
        trig[i, : len(e[3])] = e[3]
    return {
        "ids": ids,
        "len": lengths,
        "ustart": np.array([e[1] for e in enc], dtype=np.int64),
        "uend": np.array([e[2] for e in enc], dtype=np.int64),
        "trigger": trig,
        "harmful": np.array([p.harmful for p in items], dtype=np.int8),
        "wrapper": np.array([WRAPPER_CODES[p.wrapper] for p in items], dtype=np.int64),
        "topic": np.array([p.topic for p in items], dtype=np.int64),
    }


def prepare(run: Run, raw_dir: Path) -> tuple[dict, dict]:
    cfg = run.cfg
    tokenizer = lm.load_asset_tokenizer(run.asset(lm.ASSET))
    train_topics, test_topics = P.split_topics(cfg.test_topics, cfg.data_seed)
    train = P.generate(train_topics, cfg.train_per_cell, cfg.data_seed, cfg.train_frames)
    test = P.generate(test_topics, cfg.test_per_cell, cfg.data_seed + 1, cfg.test_frames)
    meta_ids = residual.tokenizer_meta(tokenizer)
    pad = meta_ids[3] if meta_ids[3] >= 0 else meta_ids[2]
    refusal = list(tokenizer(P.REFUSAL, add_special_tokens=False).input_ids)
    comply_text = P.make_prompt(0, False, "plain", 0).target
    comply = list(tokenizer(comply_text, add_special_tokens=False).input_ids)
    if refusal[0] == comply[0]:
        raise ValueError("the refusal and the compliant answer start with the same token")
    arrays: dict[str, np.ndarray] = {
        "tok_meta": np.array(meta_ids, dtype=np.int64),
        "refusal_ids": np.array(refusal, dtype=np.int64),
        "comply_ids": np.array(comply, dtype=np.int64),
    }
    for split, items in (("train", train), ("test", test)):
        arrays.update({f"{split}_{k}": v for k, v in _encode_split(tokenizer, items, pad).items()})
    meta = {
        "sizes": {"train": len(train), "test": len(test)},
        "train_topics": train_topics,
        "test_topics": test_topics,
        "examples": {p.wrapper: p.text for p in test if p.harmful},
    }
    return {TASK: arrays}, meta


# ---------------------------------------------------------------- models


def _first(data: dict) -> tuple[int, int]:
    return int(data["refusal_ids"][0]), int(data["comply_ids"][0])


def _pad(data: dict) -> int:
    meta = data["tok_meta"]
    return int(meta[3]) if int(meta[3]) >= 0 else int(meta[2])


def base_model(cfg: SafetyDimsConfig, data: dict, asset: Path):
    """A fresh copy of the base model (eval mode, fp32). ``asset``: the verified folder
    of the ``smollm2`` asset (``Run.asset(lm.ASSET)``; the tiny model does not read it)."""
    if cfg.model == "tiny":
        info = residual.TokenizerInfo(data["tok_meta"])
        return lm.tiny_model(
            info,
            layers=cfg.tiny_layers,
            hidden=cfg.tiny_hidden,
            heads=4,
            kv_heads=2,
            intermediate=2 * cfg.tiny_hidden,
            context=256,
            seed=0,  # the same base for every seed: only the fine-tuning varies
        )
    model, _ = lm.load(asset)
    return model


def _bundle_class():
    import torch
    from torch import nn

    class Bundle(nn.Module):
        """The base model (before) and the safety-tuned model (after, adapter merged),
        and the removal positions picked by the fp32 tuned model's relevance."""

        def __init__(self, base: nn.Module, tuned: nn.Module, top: torch.Tensor) -> None:
            super().__init__()
            self.base = base
            self.tuned = tuned
            self.register_buffer(TOP_KEY, top.clone())

        def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
            """Both models on ``input_ids`` (stacked logits: base, tuned): what the
            quantize stage's layer errors and the latency measurement run."""
            base = self.base(input_ids=input_ids).logits
            return torch.stack([base, self.tuned(input_ids=input_ids).logits])

    return Bundle


# ---------------------------------------------------------------- train


def units(run: Run, tasks: Sequence[str]) -> list[Unit]:
    return run.default_units(tasks)


def training_batches(data: dict, batch_size: int, seed: int):
    """(input_ids, attention_mask, labels) batches: chat prompt + target + EOS, loss on the
    target tokens only (refusal for harmful prompts, the compliant opening otherwise)."""
    import torch

    from reprolab.core.training import EpochBatchSampler, TensorBatches

    eos = int(data["tok_meta"][2])
    refusal = [int(t) for t in data["refusal_ids"]] + [eos]
    comply = [int(t) for t in data["comply_ids"]] + [eos]
    rows, labels = [], []
    for ids, n, harmful in zip(
        data["train_ids"], data["train_len"], data["train_harmful"], strict=True
    ):
        prompt = [int(t) for t in ids[:n]]
        target = refusal if harmful else comply
        rows.append(prompt + target)
        labels.append([lm.IGNORE] * len(prompt) + target)
    x, lengths = residual.pad_rows(rows, _pad(data))
    y, _ = residual.pad_rows(labels, lm.IGNORE)
    mask = (np.arange(x.shape[1])[None, :] < lengths[:, None]).astype(np.int64)
    sampler = EpochBatchSampler(len(rows), batch_size, seed, shuffle=True)
    tensors = (torch.as_tensor(x), torch.as_tensor(mask), torch.as_tensor(y))
    return torch.utils.data.DataLoader(TensorBatches(*tensors), sampler=sampler, batch_size=None)


def _orient(component: np.ndarray, states: np.ndarray, positive: np.ndarray) -> np.ndarray:
    """``component`` signed so that the ``positive`` rows project higher on average."""
    proj = states @ component
    return component if proj[positive].mean() >= proj[~positive].mean() else -component


def train_unit(
    run: Run, unit: Unit, data: dict, resume_dir: Path, progress: Callable[[str], None]
) -> TrainedUnit:
    import torch

    cfg = run.cfg
    torch.manual_seed(int(unit.seed))
    base = base_model(cfg, data, run.asset(lm.ASSET))
    module = lm.LoraModule(base, lr=cfg.lr, r=cfg.lora_r, alpha=cfg.lora_alpha, seed=int(unit.seed))
    loader = training_batches(data, cfg.batch_size, int(unit.seed))
    lm.fit_lora(module, loader, cfg.epochs, resume_dir, trainer=run.trainer)
    progress(f"LoRA trained ({cfg.epochs} epochs)")
    peft_model = module.model.eval()
    adapter = {k: v.detach().clone() for k, v in peft_model.named_parameters() if v.requires_grad}
    # removal positions from the fp32 tuned model: component 0 of the shift at the
    # analysis layer, oriented towards harmful prompts, then gradient x input
    causal = peft_model.base_model.model
    ids, lengths, first = data["test_ids"], data["test_len"], _first(data)
    with peft_model.disable_adapter():
        before, _ = residual.last_states(causal, ids, lengths, first)
    after, _ = residual.last_states(causal, ids, lengths, first)
    layer = analysis_layer(after.shape[0])
    harmful = data["test_harmful"].astype(bool)
    comp0 = analysis.shift_spectrum(before[layer], after[layer]).components[0]
    comp0 = _orient(comp0, after[layer], harmful)
    rows = np.flatnonzero(harmful)  # removal is scored on harmful prompts only
    rel = residual.relevance(causal, ids[rows], lengths[rows], layer, comp0)
    top = np.full((len(lengths), cfg.remove_tokens), -1, dtype=np.int64)
    for r, i in enumerate(rows):
        pos = residual.top_positions(
            rel[r], int(data["test_ustart"][i]), int(data["test_uend"][i]), cfg.remove_tokens
        )
        top[i, : len(pos)] = pos
    progress("relevance of the test tokens computed")
    state = {**{f"adapter.{k}": v for k, v in adapter.items()}, TOP_KEY: torch.as_tensor(top)}
    return TrainedUnit(state=state, history=list(module.history))


# ---------------------------------------------------------------- restore


def restore(run: Run, unit: Unit, data: dict, state: dict):
    import torch

    cfg, asset = run.cfg, run.asset(lm.ASSET)
    adapter = {k[len("adapter.") :]: v for k, v in state.items() if k.startswith("adapter.")}
    if not adapter:
        raise lm.MissingAdapterError(f"{unit.id}: the checkpoint holds no LoRA adapter")
    wrapped = lm.lora_model(
        base_model(cfg, data, asset), cfg.lora_r, cfg.lora_alpha, 0, int(unit.seed)
    )
    expected = {k for k, v in wrapped.named_parameters() if v.requires_grad}
    missing = expected - set(adapter)
    if missing:
        raise lm.MissingAdapterError(
            f"{unit.id}: the checkpoint lacks {len(missing)} adapter tensors (e.g. "
            f"{sorted(missing)[0]}): it was written for another LoRA setup"
        )
    wrapped.load_state_dict(adapter, strict=False)
    tuned = wrapped.merge_and_unload().eval()
    top = state.get(TOP_KEY)
    top = torch.as_tensor(top) if top is not None else torch.full((1, 1), -1, dtype=torch.long)
    return _bundle_class()(base_model(cfg, data, asset), tuned, top).eval()


# ---------------------------------------------------------------- evaluate


def _probe_split(n: int, seed: int) -> np.ndarray:
    """The fit half of :func:`analysis.probe_accuracy`'s split (same generator)."""
    return np.random.default_rng(seed).permutation(n)[: n // 2]


def _mean_probe(states: np.ndarray, labels: np.ndarray, seed: int) -> tuple[float, np.ndarray]:
    """Difference-of-means refusal probe fitted on the fit half: (held-out accuracy, unit
    direction). A fit half without both labels gives chance (0.5) and a zero direction."""
    fit = np.zeros(len(labels), bool)
    fit[_probe_split(len(labels), seed)] = True
    if not (labels[fit].any() and (~labels[fit]).any()):
        return 0.5, np.zeros(states.shape[1])
    d = states[fit & labels].mean(0) - states[fit & ~labels].mean(0)
    norm = np.linalg.norm(d)
    d = d / norm if norm > 0 else d
    return analysis.probe_accuracy(states @ d, labels, seed), d


def analyse(base, tuned, cfg: SafetyDimsConfig, data: dict, seed: int) -> dict[str, float]:
    """Every residual-space metric of one (base, tuned) pair at one precision."""
    ids, lengths, first = data["test_ids"], data["test_len"], _first(data)
    before, base_scores = residual.last_states(base, ids, lengths, first)
    after, scores = residual.last_states(tuned, ids, lengths, first)
    harmful = data["test_harmful"].astype(bool)
    refused = scores > 0
    # the probe's labels: the tuned model's own refusals, or the targets it was taught
    # when one behaviour has fewer than 2 prompts (flagged as probe_on_targets)
    on_targets = min(refused.sum(), (~refused).sum()) < 2
    labels = harmful if on_targets else refused
    n_layers = after.shape[0]
    mid, layer_star = mid_layers(n_layers), analysis_layer(n_layers)
    rng = np.random.default_rng(seed)
    out: dict[str, float] = {}
    ranks = {tau: np.zeros(n_layers) for tau in cfg.taus}
    comp0_acc, probe_acc, rand_acc, cos = (np.zeros(n_layers) for _ in range(4))
    shift_norm = np.zeros(n_layers)
    spectra = {}
    plotted = sorted({0, layer_star, n_layers - 1})
    for layer in range(n_layers):
        shift = after[layer] - before[layer]
        shift_norm[layer] = float(np.linalg.norm(shift, axis=1).mean())
        if not np.any(shift):
            comp0_acc[layer], probe_acc[layer], rand_acc[layer] = 0.5, 0.5, 0.5
            continue  # no shift at all: rank 0, nothing to classify with
        spec = analysis.shift_spectrum(before[layer], after[layer])
        for tau in cfg.taus:
            ranks[tau][layer] = analysis.effective_rank(spec.eigenvalues, tau)
        comp0 = spec.components[0]
        comp0_acc[layer] = analysis.probe_accuracy(after[layer] @ comp0, labels, seed)
        probe_acc[layer], direction = _mean_probe(after[layer], labels, seed)
        cos[layer] = abs(float(comp0 @ direction))
        r = rng.standard_normal(after.shape[2])
        rand_acc[layer] = analysis.probe_accuracy(
            after[layer] @ (r / np.linalg.norm(r)), labels, seed
        )
        if layer in plotted:
            spectra[layer] = spec.eigenvalues / spec.eigenvalues.sum()
        if layer == layer_star:
            k = min(cfg.secondary, spec.components.shape[0] - 1)
            if k >= 1:
                proj = shift @ spec.components[1 : 1 + k].T
                share, p = analysis.separation_test(
                    proj, data["test_wrapper"], cfg.permutations, seed
                )
            else:
                share, p = 0.0, 1.0
            out["wrapper_share"], out["wrapper_p"] = share, p
    out.setdefault("wrapper_share", 0.0)
    out.setdefault("wrapper_p", 1.0)
    for tau in cfg.taus:
        tag = round(tau * 100)
        out[f"eff_rank_{tag}"] = float(ranks[tau][mid].mean())
        for layer in range(n_layers):
            out[f"eff_rank_{tag}_l{layer:02d}"] = float(ranks[tau][layer])
    out["eff_rank_90_max"] = float(ranks[0.9].max())
    out["comp0_acc_mid"] = float(comp0_acc[mid].mean())
    out["comp0_acc_max"] = float(comp0_acc.max())
    out["probe_acc_mid"] = float(probe_acc[mid].mean())
    out["rand_acc_mid"] = float(rand_acc[mid].mean())
    out["comp0_cos_mid"] = float(cos[mid].mean())
    out["shift_norm_mid"] = float(shift_norm[mid].mean())
    for layer in range(n_layers):
        out[f"comp0_acc_l{layer:02d}"] = float(comp0_acc[layer])
        out[f"probe_acc_l{layer:02d}"] = float(probe_acc[layer])
    for layer in plotted:
        shares = spectra.get(layer, np.zeros(0))
        for j in range(cfg.spectrum_k):
            out[f"ev_share_{j:02d}_l{layer:02d}"] = float(shares[j]) if j < len(shares) else 0.0
    out["refusal_rate_harmful"] = float(refused[harmful].mean())
    out["refusal_rate_benign"] = float(refused[~harmful].mean())
    out["base_refusal_rate_harmful"] = float((base_scores > 0)[harmful].mean())
    out["base_refusal_rate_benign"] = float((base_scores > 0)[~harmful].mean())
    out["refusal_margin_harmful"] = float(scores[harmful].mean())
    out["probe_on_targets"] = float(on_targets)
    out["n_layers"] = float(n_layers)
    return out


def _scores(model, rows: list[list[int]], data: dict) -> np.ndarray:
    ids, lengths = residual.pad_rows(rows, _pad(data))
    _, scores = residual.last_states(model, ids, lengths, _first(data), with_states=False)
    return scores


def removal(
    tuned, cfg: SafetyDimsConfig, data: dict, top: np.ndarray, how: str, seed: int
) -> dict[str, float]:
    """Refusal of the harmful test prompts before and after deleting tokens of the user's
    message: ``top`` (positions per prompt) or ``random_draws`` random sets of as many."""
    ids, lengths = data["test_ids"], data["test_len"]
    rows = np.flatnonzero(data["test_harmful"].astype(bool))
    original = [[int(t) for t in ids[i, : lengths[i]]] for i in rows]
    s0 = _scores(tuned, original, data)
    draws: list[list[np.ndarray]] = []
    if how == "top":
        draws.append([top[i][top[i] >= 0] for i in rows])
    else:
        rng = np.random.default_rng([seed, 7])
        for _ in range(cfg.random_draws):
            draws.append(
                [
                    residual.random_positions(
                        int(data["test_ustart"][i]),
                        int(data["test_uend"][i]),
                        int((top[i] >= 0).sum()),
                        rng,
                    )
                    for i in rows
                ]
            )
    drops, flips, trig = [], [], []
    for positions in draws:
        edited = [
            residual.remove_tokens(ids[i], int(lengths[i]), pos)
            for i, pos in zip(rows, positions, strict=True)
        ]
        s1 = _scores(tuned, edited, data)
        drops.append(float((s0 - s1).mean()))
        flips.append(float((s0 > 0).mean() - (s1 > 0).mean()))
        wrapped = [
            data["test_trigger"][i][pos].mean()
            for i, pos in zip(rows, positions, strict=True)
            if data["test_wrapper"][i] != WRAPPER_CODES["plain"] and len(pos)
        ]
        trig.append(float(np.mean(wrapped)) if wrapped else 0.0)
    return {
        "refusal_score_drop": float(np.mean(drops)),
        "refusal_drop": float(np.mean(flips)),
        "trigger_share": float(np.mean(trig)),
        "refusal_before": float((s0 > 0).mean()),
    }


def evaluate_unit(run: Run, model, unit: Unit, data: dict, history: list[dict]):
    cfg = run.cfg
    seed = int(unit.seed)
    if unit.variant == "safety_tuned":
        out = analyse(model.base, model.tuned, cfg, data, seed)
        if history:
            out["final_train_loss"] = float(history[-1]["train_loss"])
        return out
    top = getattr(model, TOP_KEY).cpu().numpy()
    how = "top" if unit.variant == "remove_top" else "random"
    return removal(model.tuned, cfg, data, top, how, seed)


def example_input(run: Run, unit: Unit, data: dict):
    import torch

    n = int(data["test_len"][0])
    return torch.as_tensor(data["test_ids"][:1, :n])


def calibration_inputs(run: Run, unit: Unit, data: dict, model) -> list:
    """A training prompt (never a test prompt); int8_dynamic itself needs no calibration,
    the quantize stage measures each layer's output error on it."""
    import torch

    n = int(data["train_len"][0])
    return [torch.as_tensor(data["train_ids"][:1, :n])]


def plots(run: Run, table: pd.DataFrame, out_dir: Path, trained: TrainedUnits) -> list[Path]:
    from reprolab.methods.safety_dims import plots as figs

    return [
        figs.spectra(table, out_dir / "singular_value_spectra.png"),
        figs.probe_accuracy(table, out_dir / "probe_accuracy_per_layer.png"),
        figs.effective_rank(table, out_dir / "effective_rank_per_layer.png"),
        figs.removal(table, out_dir / "trigger_removal.png"),
    ]
