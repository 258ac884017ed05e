"""Slow tier: cot_order on the real SmolLM2-135M-Instruct (the paper profile's model), on a
tiny budget, through the method's own hooks: prepare, LoRA SFT of two units, restore,
int8 quantization stored against a shared base, and evaluation at both precisions."""

from __future__ import annotations

import math

import pytest
import torch

from reprolab.assets import smollm2
from reprolab.contract import Run, Unit
from reprolab.core import io, lm, quant
from reprolab.methods.cot_order import SPEC, method
from reprolab.paths import asset_dir

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def asset(tmp_path_factory):
    """The smollm2 asset with weights, built as the assets stage builds it."""
    root = tmp_path_factory.mktemp("project")
    out = asset_dir(root, lm.ASSET)
    with io.atomic_dir(out) as tmp:
        meta = smollm2.build(smollm2.Smollm2Config(weights=True), tmp, root)
        io.write_manifest(tmp, {**meta, "asset": lm.ASSET})
    return root, io.verified_asset(root, lm.ASSET)


def test_cot_order_trains_quantizes_and_evaluates_the_real_model(asset, tmp_path):
    root, folder = asset
    cfg = method.CotOrderConfig(
        model="smollm2",
        held_out_per_family=2,
        n_train=8,
        n_test=4,
        n_humaneval=0,
        lora_layers=1,
        epochs=2,
        batch_size=4,
        max_new_tokens=24,
        gen_batch=4,
        finish_check=2,
    )
    run = Run(spec=SPEC, cfg=cfg, seeds=(0, 1), root=root, assets={lm.ASSET: folder})
    datasets, meta = method.prepare(run, root)
    data = datasets[method.TASK]
    held_out = meta["held_out_by_seed"]
    assert len(held_out["0"]) == 6 and len(data["he_prompt"]) == 0

    base = method.base_model(cfg, folder)
    assert base.config.num_hidden_layers == 30
    keep = SPEC.quantization.keep_fp32
    shared, sizes, states = None, [], []
    for seed in (0, 1):
        unit = Unit(method.TASK, "code_first", seed)
        trained = method.train_unit(run, unit, data, tmp_path / f"resume{seed}", lambda m: None)
        losses = [h["train_loss"] for h in trained.history]
        assert len(losses) == 2 and all(math.isfinite(v) for v in losses)
        assert losses[-1] < losses[0]  # the real model learns the target format
        assert 0.0 <= trained.signals["train_ended"] <= 1.0
        # the adapter holds LoRA weights of the top layer only
        assert trained.state and all("layers.29." in k for k in trained.state)
        model = method.restore(run, unit, data, trained.state)
        top = "model.layers.29.self_attn.q_proj.weight"
        below = "model.layers.28.self_attn.q_proj.weight"
        weights, before = model.state_dict(), base.state_dict()
        assert not torch.equal(weights[top], before[top])
        assert torch.equal(weights[below], before[below])

        qmodel = quant.quantize(model, "int8_dynamic", keep_fp32=keep)
        path = tmp_path / f"{unit.id}.int8_dynamic.pt"
        shared = quant.save_state(qmodel.state_dict(), path, shared)
        sizes.append(path.stat().st_size)
        states.append((unit, trained.state, path))

        for precision, m in (("fp32", model), ("int8", qmodel)):
            metrics = method.evaluate_unit(run, m, unit, data, trained.history)
            for key in ("pass_at_1", "code_found", "finished", "syntax_errors"):
                assert 0.0 <= metrics[key] <= 1.0, (precision, key)
            assert 0 < metrics["new_tokens"] <= cfg.max_new_tokens
            assert math.isnan(metrics["humaneval_pass_at_1"])

    # the second unit's int8 state holds only its own top layer (a few MB against the
    # first one's whole model), and reads back the same quantized model
    assert sizes[1] < sizes[0] / 20, sizes
    unit, state, path = states[1]
    restored = quant.restore_quantized(
        method.restore(run, unit, data, state), "int8_dynamic", quant.load_state(path), keep
    )
    tok = method.tokenizer(folder)
    ids = torch.tensor([tok("def f(x):").input_ids])
    again = quant.quantize(method.restore(run, unit, data, state), "int8_dynamic", keep_fp32=keep)
    with torch.inference_mode():
        assert torch.equal(restored(ids).logits, again(ids).logits)
