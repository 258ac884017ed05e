"""safety_dims hooks for the pipeline stages (see reprolab.contract.MethodHooks).

One task (``safety``), two trained units per seed, each a LoRA fine-tuning of the base
model (the tiny Llama at the smoke profile, SmolLM2-135M-Instruct at the paper
profile): ``safety_tuned`` on harmful prompts -> refusal and benign prompts -> a short
compliant opening; ``control_tuned``, the harmless control, on as many benign prompts of
the same topics -> the compliant opening (as many rows, so the same steps). The
checkpoint holds the adapter alone, plus the token positions the fp32 model's relevance
picks for removal (safety_tuned only), and the training signals: refusal rates of the
tuned and the base model on the training prompts and on the calibration topics (held
out from training and test: the premise check). ``restore`` rebuilds a :class:`Bundle`:
the base model (the "before" reference) and the tuned model with the adapter merged
(the "after"), so that the quantize stage quantizes both and every analysis at int8
compares an int8 base with an int8 tuned model.

Evaluation (test prompts: held-out topics; the request frames and wrappers are shared
with training), in :mod:`reprolab.methods.safety_dims.analysis`:

- ``safety_tuned`` and ``control_tuned`` (:func:`analysis.analyse`): last-token states
  at every layer, before and after; SVD of the shift; effective rank at each tau;
  component 0 as a refusal classifier against random directions, and its alignment with
  a difference-of-means refusal probe, per layer; how far components 1..k separate the
  wrapper types beyond a shuffled-label null (middle layer); refusal rates on the test
  and the calibration prompts.
- ``remove_top`` / ``remove_random`` (evaluation-only, :func:`analysis.removal`): the
  refusal score of the safety-tuned model on harmful test prompts after deleting the
  ``remove_tokens`` message tokens of highest relevance (gradient x input of the
  component-0 projection, middle layer), or as many random message tokens. Relevance
  needs gradients, which the int8 kernels do not have, so it is computed once on the
  fp32 tuned model at the end of training (as the reference picks its trigger words on a
  reference model and attacks other models); each precision then scores the same edited
  prompts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from reprolab.contract import Run, TrainedUnit, Unit, figures_hook
from reprolab.core import lm
from reprolab.methods.safety_dims import analysis, residual
from reprolab.methods.safety_dims import prompts as P
from reprolab.methods.safety_dims.config import SafetyDimsConfig

if TYPE_CHECKING:
    pass

TASK = "safety"
TOP_KEY = "relevance_top"
#: the trained variants: the safety fine-tune and its harmless control (same steps)
SAFETY, CONTROL = "safety_tuned", "control_tuned"


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
        "wrapper": np.array([P.WRAPPER_CODES[p.wrapper] for p in items], dtype=np.int64),
        "topic": np.array([p.topic for p in items], dtype=np.int64),
    }


def prepare(run: Run, raw_dir: Path) -> tuple[dict, dict]:
    cfg = run.cfg
    tokenizer = lm.load_asset_tokenizer(run.asset(lm.ASSET))
    train_topics, calib_topics, test_topics = P.split_topics(
        cfg.test_topics, cfg.data_seed, cfg.calib_topics
    )
    train = P.generate(train_topics, cfg.train_per_cell, cfg.data_seed, cfg.train_frames)
    test = P.generate(test_topics, cfg.test_per_cell, cfg.data_seed + 1, cfg.test_frames)
    calib = P.generate(calib_topics, cfg.calib_per_cell, cfg.data_seed + 2, cfg.test_frames)
    # the harmless control fine-tune: benign prompts of the training topics only, as many
    # rows as the safety fine-tune's training set (so as many steps)
    control = P.generate(
        train_topics, 2 * cfg.train_per_cell, cfg.data_seed + 3, cfg.train_frames, (False,)
    )
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
    for split, items in (("train", train), ("calib", calib), ("test", test), ("control", control)):
        arrays.update({f"{split}_{k}": v for k, v in _encode_split(tokenizer, items, pad).items()})
    meta = {
        "sizes": {
            "train": len(train),
            "calib": len(calib),
            "test": len(test),
            "control": len(control),
        },
        "train_topics": train_topics,
        "calib_topics": calib_topics,
        "test_topics": test_topics,
        "examples": {p.wrapper: p.text for p in test if p.harmful},
    }
    return {TASK: arrays}, meta


# ---------------------------------------------------------------- models


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


def training_batches(data: dict, batch_size: int, seed: int, split: str = "train"):
    """(input_ids, attention_mask, labels) batches of ``split`` ("train": the safety
    fine-tune's prompts; "control": the harmless control's): chat prompt + target + EOS,
    loss on the target tokens only (refusal for harmful prompts, the compliant opening
    otherwise)."""
    import torch

    from reprolab.core.training import EpochBatchSampler, TensorBatches

    eos = int(data["tok_meta"][2])
    refusal = [int(t) for t in data["refusal_ids"]] + [eos]
    comply = [int(t) for t in data["comply_ids"]] + [eos]
    rows, labels = [], []
    for ids, n, harmful in zip(
        data[f"{split}_ids"], data[f"{split}_len"], data[f"{split}_harmful"], strict=True
    ):
        prompt = [int(t) for t in ids[:n]]
        target = refusal if harmful else comply
        rows.append(prompt + target)
        labels.append([lm.IGNORE] * len(prompt) + target)
    x, lengths = residual.pad_rows(rows, analysis.pad_id(data))
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
    split = "control" if unit.variant == CONTROL else "train"
    loader = training_batches(data, cfg.batch_size, int(unit.seed), split)
    lm.fit_lora(module, loader, cfg.epochs, resume_dir, trainer=run.trainer)
    progress(f"LoRA trained ({cfg.epochs} epochs, {split} prompts)")
    peft_model = module.model.eval()
    adapter = {k: v.detach().clone() for k, v in peft_model.named_parameters() if v.requires_grad}
    causal = peft_model.base_model.model
    # the training signals and the premise check: refusal of the tuned and the base
    # model on the calibration topics (held out from training and from the test), and of
    # the safety-tuned model on its training prompts
    signals = {
        f"calib_refusal_{k}": v for k, v in analysis.refusal_rates(causal, data, "calib").items()
    }
    if unit.variant == SAFETY:  # the control's own training prompts are all benign
        rates = analysis.refusal_rates(causal, data, "train")
        signals.update({f"train_refusal_{k}": v for k, v in rates.items()})
    with peft_model.disable_adapter():
        base_calib = analysis.refusal_rates(causal, data, "calib")
    signals.update({f"base_calib_refusal_{k}": v for k, v in base_calib.items()})
    # refusing harmful rather than benign requests: the score compares the first tokens
    # of the two targets ("I" / "Sure"), and SmolLM2 opens most answers with "I", so the
    # base model's raw rate is high for benign requests too
    for who in ("calib", "base_calib"):
        signals[f"{who}_selectivity"] = (
            signals[f"{who}_refusal_harmful"] - signals[f"{who}_refusal_benign"]
        )
    progress(
        f"refusal of harmful calibration prompts: tuned {signals['calib_refusal_harmful']:.2f}, "
        f"base {signals['base_calib_refusal_harmful']:.2f}"
    )
    history = [dict(h) for h in module.history]
    if history:  # measured after the last epoch; evaluate copies them into the metrics
        history[-1].update(signals)
    top = np.full((len(data["test_len"]), cfg.remove_tokens), -1, dtype=np.int64)
    if unit.variant == SAFETY:
        top = _removal_positions(cfg, causal, peft_model, data)
        progress("relevance of the test tokens computed")
    state = {**{f"adapter.{k}": v for k, v in adapter.items()}, TOP_KEY: torch.as_tensor(top)}
    return TrainedUnit(state=state, history=history, signals=signals)


def _removal_positions(cfg: SafetyDimsConfig, causal, peft_model, data: dict) -> np.ndarray:
    """The removal positions from the fp32 tuned model: component 0 of the shift at the
    analysis layer, oriented towards harmful prompts, then gradient x input."""
    ids, lengths, first = data["test_ids"], data["test_len"], analysis.first_tokens(data)
    with peft_model.disable_adapter():
        before, _ = residual.last_states(causal, ids, lengths, first)
    after, _ = residual.last_states(causal, ids, lengths, first)
    layer = analysis.analysis_layer(after.shape[0])
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
    return top


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


def evaluate_unit(run: Run, model, unit: Unit, data: dict, history: list[dict]):
    cfg = run.cfg
    seed = int(unit.seed)
    if unit.variant in (SAFETY, CONTROL):
        out = analysis.analyse(model.base, model.tuned, cfg, data, seed)
        if history:  # the training signals (fp32, measured at the end of training)
            out["final_train_loss"] = float(history[-1]["train_loss"])
            out.update(
                {
                    k: float(v)
                    for k, v in history[-1].items()
                    if k.startswith(("calib", "base_calib", "train_refusal"))
                }
            )
        return out
    top = getattr(model, TOP_KEY).cpu().numpy()
    how = "top" if unit.variant == "remove_top" else "random"
    return analysis.removal(model.tuned, cfg, data, top, how, seed)


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


plots = figures_hook()
