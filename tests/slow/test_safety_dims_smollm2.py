"""Slow tier: safety_dims' hooks on the real SmolLM2-135M-Instruct (``model: smollm2``),
on a tiny budget: prepare, LoRA-train the safety fine-tune a few steps, restore, and
evaluate the shift analysis and a removal variant. The metrics are checked against
an independent reference: one plain transformers forward per prompt (the residual
stream from ``output_hidden_states``, the refusal score from the logits), and numpy's
SVD of the shift."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reprolab import config
from reprolab.assets import smollm2
from reprolab.contract import Run, Unit
from reprolab.core import io, lm
from reprolab.methods.safety_dims import SPEC, analysis, method
from reprolab.paths import asset_dir

pytestmark = pytest.mark.slow

TINY = {
    "model": "smollm2",
    "test_topics": 2,
    "calib_topics": 1,
    "train_per_cell": 2,
    "calib_per_cell": 2,
    "test_per_cell": 2,
    "epochs": 1,
    "batch_size": 4,
    "permutations": 19,
    "random_dirs": 2,
    "random_draws": 1,
    "spectrum_k": 4,
}


def _reference(model, data, split="test"):
    """(last-token states L x n x d, refusal scores n), one prompt at a time through the
    plain transformers forward."""
    refuse, comply = analysis.first_tokens(data)
    states, scores = [], []
    with torch.inference_mode():
        for ids, n in zip(data[f"{split}_ids"], data[f"{split}_len"], strict=True):
            out = model(input_ids=torch.as_tensor(ids[None, :n]), output_hidden_states=True)
            states.append([h[0, -1].numpy() for h in out.hidden_states[1:]])
            logits = out.logits[0, -1]
            scores.append(float(logits[refuse] - logits[comply]))
    return np.transpose(np.array(states), (1, 0, 2)), np.array(scores)


def test_safety_dims_on_the_real_model(tmp_path):
    torch.set_num_threads(1)
    folder = asset_dir(tmp_path, "smollm2")
    with io.atomic_dir(folder) as tmp:
        meta = smollm2.build(smollm2.Smollm2Config(weights=True), tmp, tmp_path)
        io.write_manifest(tmp, {**meta, "asset": "smollm2"})
    cfg = config.method_config("safety_dims", "paper", TINY, "test")
    run = Run(
        spec=SPEC, cfg=cfg, seeds=(0,), root=tmp_path, assets={lm.ASSET: folder}, profile="paper"
    )
    datasets, _ = method.prepare(run, tmp_path)
    data = datasets[method.TASK]
    unit = Unit(method.TASK, method.SAFETY, 0)
    trained = method.train_unit(run, unit, data, tmp_path / "resume", lambda _: None)
    assert len(trained.history) == 1 and np.isfinite(trained.history[0]["train_loss"])
    for key, v in trained.signals.items():  # rates in [0, 1], selectivities in [-1, 1]
        assert (-1.0 if "selectivity" in key else 0.0) <= v <= 1.0, key
    bundle = method.restore(run, unit, data, trained.state)
    metrics = method.evaluate_unit(run, bundle, unit, data, trained.history)

    before, base_scores = _reference(bundle.base, data)
    after, scores = _reference(bundle.tuned, data)
    assert before.shape[:2] == (30, len(data["test_len"]))  # SmolLM2's 30 layers
    assert metrics["n_layers"] == 30
    harmful = data["test_harmful"].astype(bool)
    for key, s in (("refusal_rate", scores), ("base_refusal_rate", base_scores)):
        assert metrics[f"{key}_harmful"] == pytest.approx((s[harmful] > 0).mean())
        assert metrics[f"{key}_benign"] == pytest.approx((s[~harmful] > 0).mean())
    for key in ("calib_refusal_harmful", "base_calib_refusal_benign", "comp0_acc_mid"):
        assert 0.0 <= metrics[key] <= 1.0, key
    # a few steps already move the residual stream; its rank per layer is numpy's
    shift = after - before
    assert metrics["shift_norm_mid"] > 0 and np.abs(shift[15]).max() > 1e-3
    for layer in (0, 15, 29):
        s = np.linalg.svd(shift[layer], compute_uv=False)
        share = np.cumsum(s**2) / np.sum(s**2)
        rank = int(np.argmax(share >= 0.9 - 1e-9) + 1)
        assert metrics[f"eff_rank_90_l{layer:02d}"] == rank >= 1, layer
    assert metrics["wrapper_share"] == pytest.approx(
        analysis.between_share(
            shift[15] @ np.linalg.svd(shift[15], full_matrices=False)[2][1:4].T,
            data["test_wrapper"],
        ),
        abs=0.02,  # the batched and one-at-a-time states agree to fp32 rounding
    )
    top = method.TOP_KEY
    removed = method.evaluate_unit(
        run, bundle, Unit(method.TASK, "remove_top", 0), data, trained.history
    )
    assert getattr(bundle, top).max() >= 0  # relevance picked message tokens
    assert removed["refusal_before"] == pytest.approx((scores[harmful] > 0).mean())
    assert np.isfinite(removed["refusal_score_drop"])
