"""safety_dims' model side: prompt encoding, last-token states, the refusal score,
gradient x input relevance (against finite differences), token removal, and the
adapter round trip of train -> restore (against the peft model itself)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reprolab import config
from reprolab.core import lm
from reprolab.methods.safety_dims import analysis, method, residual
from reprolab.methods.safety_dims import prompts as P


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tok():
    return lm.load_tokenizer()


@pytest.fixture(scope="module")
def model(tok):
    return lm.tiny_model(tok, layers=3, context=128, init_std=0.3, seed=0)


@pytest.fixture(scope="module")
def batch(tok):
    items = [P.make_prompt(t, h, w, f) for t, h, w, f in
             ((0, True, "roleplay", 0), (1, False, "plain", 1), (2, True, "hypothetical", 2),
              (3, True, "plain", 3), (4, False, "roleplay", 2))]  # fmt: skip
    for p, f in zip(items, (0, 1, 2, 3, 2), strict=True):
        FRAME_OF[p] = f
    enc = [residual.encode(tok, p.text, p.triggers) for p in items]
    ids, lengths = residual.pad_rows([e[0] for e in enc], tok.pad_token_id)
    return items, enc, ids, lengths


FRAME_OF: dict = {}
FIRST = (57, 34355)  # "I", "Sure" in SmolLM2's vocabulary


def test_encode_spans_the_message_and_its_trigger_words(tok, batch):
    items, enc, _, _ = batch
    for p, (ids, start, end, mask) in zip(items, enc, strict=True):
        assert tok.decode(ids[start:end]) == p.text
        assert tok.decode(ids) == lm.chat_prompt(tok, p.text)
        assert all(not m or start <= i < end for i, m in enumerate(mask))
        wrapper_words = "".join(P.WRAPS[p.wrapper])
        flagged = [tok.decode([t]).strip() for t, m in zip(ids, mask, strict=True) if m]
        assert bool(flagged) == (p.wrapper != "plain")
        assert all(w in wrapper_words for w in flagged)
        # the request's own tokens are never flagged
        head = len(P.WRAPS[p.wrapper][0])
        request = P.make_prompt(p.topic, p.harmful, "plain", FRAME_OF[p]).text
        offsets = tok(p.text, add_special_tokens=False, return_offsets_mapping=True).offset_mapping
        for (a, b), m in zip(offsets, mask[start:end], strict=True):
            if a >= head and b <= head + len(request) and p.text[a:b].strip():
                assert not m, p.text[a:b]


def test_last_states_match_one_prompt_at_a_time(model, batch):
    _, _, ids, lengths = batch
    states, scores = residual.last_states(model, ids, lengths, FIRST, batch_size=2)
    assert states.shape == (3, len(lengths), 64)
    with torch.inference_mode():
        for i, n in enumerate(lengths):
            out = model(input_ids=torch.as_tensor(ids[i : i + 1, :n]), output_hidden_states=True)
            for layer in range(3):
                ref = out.hidden_states[layer + 1][0, -1].numpy()
                if layer < 2:  # the last entry may be taken after the final norm
                    np.testing.assert_allclose(states[layer, i], ref, rtol=1e-4, atol=1e-4)
            logits = out.logits[0, -1]
            assert scores[i] == pytest.approx(float(logits[FIRST[0]] - logits[FIRST[1]]), abs=1e-3)


def test_relevance_is_gradient_times_input(model, batch):
    """rel_i = d/de proj(embedding row i scaled by 1 + e) at e = 0 (finite differences)."""
    _, _, ids, lengths = batch
    layer = 1
    direction = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    rel = residual.relevance(model, ids, lengths, layer, direction, batch_size=2)
    assert np.all(rel[np.arange(ids.shape[1])[None, :] >= lengths[:, None]] == 0)
    row = 2
    n = int(lengths[row])
    emb = model.get_input_embeddings()(torch.as_tensor(ids[row : row + 1, :n])).detach()
    v = torch.as_tensor(direction)

    def proj(e):
        with torch.inference_mode():
            h = model.model(inputs_embeds=e, output_hidden_states=True).hidden_states[layer + 1]
        return float(h[0, -1] @ v)

    eps = 1e-2  # central differences: error O(eps^2) against fp32 rounding
    fd = np.zeros(n)
    for i in range(n):
        up, down = emb.clone(), emb.clone()
        up[0, i] *= 1 + eps
        down[0, i] *= 1 - eps
        fd[i] = (proj(up) - proj(down)) / (2 * eps)
    np.testing.assert_allclose(rel[row, :n], fd, rtol=0.1, atol=0.02)
    assert np.corrcoef(rel[row, :n], fd)[0, 1] > 0.99


def test_positions_and_removal():
    rel = np.array([0.0, 5.0, 1.0, 9.0, 3.0, 7.0, 8.0])
    assert residual.top_positions(rel, 1, 6, 2).tolist() == [3, 5]  # 6 is outside the span
    assert len(residual.top_positions(rel, 1, 3, 5)) == 1  # one message token always stays
    rng = np.random.default_rng(0)
    for _ in range(20):
        pos = residual.random_positions(2, 7, 3, rng)
        assert len(set(pos)) == 3 and all(2 <= p < 7 for p in pos)
    row = np.array([10, 11, 12, 13, 14, 0, 0])
    assert residual.remove_tokens(row, 5, [1, 3]) == [10, 12, 14]
    assert residual.remove_tokens(row, 5, []) == [10, 11, 12, 13, 14]
    assert analysis.mid_layers(30) == list(range(10, 20)) and analysis.mid_layers(2) == [0, 1]


def _tiny_data(tok, root):
    from reprolab.contract import Run
    from reprolab.methods.safety_dims import SPEC

    cfg = config.method_config(
        "safety_dims", "smoke",
        {"tiny_layers": 2, "tiny_hidden": 32, "test_topics": 2, "calib_topics": 1,
         "train_per_cell": 1, "calib_per_cell": 1, "test_per_cell": 2},
        "test",
    )  # fmt: skip
    folder = lm.tokenizer_cache()
    run = Run(spec=SPEC, cfg=cfg, seeds=(0,), root=root, assets={lm.ASSET: folder})
    datasets, _ = method.prepare(run, folder)
    return run, datasets[method.TASK]


def test_restore_merges_the_adapter_exactly_and_names_a_missing_one(tok, tmp_path):
    from reprolab.contract import Unit

    run, data = _tiny_data(tok, tmp_path)
    cfg, folder = run.cfg, run.asset(lm.ASSET)
    # held-out topics: test and calibration prompts ask about topics training never saw
    for held in ("test", "calib"):
        assert not set(data["train_topic"]) & set(data[f"{held}_topic"])
    assert not set(data["calib_topic"]) & set(data["test_topic"])
    held_out = set(data["test_topic"]) | set(data["calib_topic"])
    assert not set(data["control_topic"]) & held_out  # the control's topics are training's
    assert len(data["control_len"]) == len(data["train_len"]) and not data["control_harmful"].any()
    wrapped = lm.lora_model(method.base_model(cfg, data, folder), cfg.lora_r, cfg.lora_alpha, 0, 3)
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in wrapped.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.1)
    state = {f"adapter.{k}": v.detach().clone() for k, v in wrapped.named_parameters()
             if v.requires_grad}  # fmt: skip
    state[method.TOP_KEY] = torch.zeros((len(data["test_len"]), 3), dtype=torch.long)
    unit = Unit(method.TASK, "safety_tuned", 0)
    bundle = method.restore(run, unit, data, state)
    x = torch.as_tensor(data["test_ids"][:1, : int(data["test_len"][0])])
    with torch.inference_mode():
        ref = wrapped.eval()(input_ids=x).logits
        np.testing.assert_allclose(bundle(x)[1].numpy(), ref.numpy(), rtol=1e-4, atol=1e-4)
        base = method.base_model(cfg, data, folder)(input_ids=x).logits
        np.testing.assert_allclose(bundle.base(input_ids=x).logits.numpy(), base.numpy())
    with pytest.raises(lm.MissingAdapterError):
        method.restore(run, unit, data, {method.TOP_KEY: state[method.TOP_KEY]})
    partial = {k: v for k, v in state.items() if "q_proj" not in k}
    with pytest.raises(lm.MissingAdapterError, match="lacks"):
        method.restore(run, unit, data, partial)


def test_training_batches_put_the_loss_on_the_target_only(tok, tmp_path):
    _, data = _tiny_data(tok, tmp_path)
    eos = int(data["tok_meta"][2])
    refusal = [*data["refusal_ids"].tolist(), eos]
    comply = [*data["comply_ids"].tolist(), eos]
    for split in ("train", "control"):
        batches = list(method.training_batches(data, 4, seed=0, split=split))
        # as many steps for the control as for the safety fine-tune
        assert len(batches) == -(-len(data["train_len"]) // 4)
        targets = []
        for ids, mask, labels in batches:
            for r in range(len(ids)):
                target = labels[r][labels[r] != lm.IGNORE].tolist()
                targets.append(target)
                n = int(mask[r].sum())
                assert ids[r, n - len(target) : n].tolist() == target
        assert refusal in targets if split == "train" else all(t == comply for t in targets)
        assert comply in targets
