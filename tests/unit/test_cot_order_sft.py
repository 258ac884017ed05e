"""cot_order's SFT and scoring: the cached top-layer LoRA equals LoRA on the full model,
the adapter round-trips into a merged model, decoding stops after the code, and bad
samples are failures."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from reprolab.contract import Run, TrainerConfig
from reprolab.core import io, lm
from reprolab.methods.cot_order import SPEC, humaneval, method, sft
from reprolab.methods.cot_order import programs as P


@pytest.fixture(scope="module")
def tok():
    return lm.load_tokenizer()


@pytest.fixture(scope="module")
def batch(tok):
    train, _ = P.split_templates(1, 0)
    pairs = [(P.prompt(e), P.target(e, "cot_first")) for e in P.generate(train, 6, 0)]
    return sft.sft_tensors(tok, pairs, 256)


def _model(tok, layers=3):
    return lm.tiny_model(tok, layers=layers, init_std=0.3, seed=1)


def test_cached_top_layers_give_the_full_models_logits(tok, batch):
    ids, mask, _ = batch
    model = _model(tok)
    with torch.no_grad():
        full = model(input_ids=ids, attention_mask=mask).logits
        emb = model.model.embed_tokens(ids)
    assert torch.equal(sft.hidden_before(model, 0, ids, mask, 4), emb)
    hidden = sft.hidden_before(model, 1, ids, mask, 4)
    top = sft.truncate_to_top(copy.deepcopy(model), 2)
    with torch.no_grad():
        cut = top(inputs_embeds=hidden, attention_mask=mask, use_cache=False).logits
    real = mask.bool()
    assert torch.allclose(full[real], cut[real], atol=1e-5)
    # a different layer's stream does not give the same logits (the check can fail)
    wrong = sft.hidden_before(model, 0, ids, mask, 4)
    with torch.no_grad():
        off = top(inputs_embeds=wrong, attention_mask=mask, use_cache=False).logits
    assert not torch.allclose(full[real], off[real], atol=1e-3)
    with pytest.raises(ValueError, match="layer must be"):
        sft.hidden_before(model, 3, ids, mask)


def test_trained_adapter_merges_into_the_full_model(tok, batch, tmp_path):
    ids, mask, labels = batch
    base = _model(tok)
    hidden = sft.hidden_before(base, 1, ids, mask, 4)
    top = sft.truncate_to_top(copy.deepcopy(base), 2)
    module = sft.module_class()(top, lr=5e-2, r=4, alpha=8, seed=0)
    train = sft.hidden_batches(hidden, mask, labels, 3, 0)
    lm.fit_lora(module, train, 2, tmp_path / "r", trainer=TrainerConfig())
    losses = [h["train_loss"] for h in module.history]
    assert len(losses) == 2 and losses[1] < losses[0]
    state = sft.adapter_state(module.model, 1)
    assert sft.adapted_layers(state) == [1, 2] and all("lora_" in k for k in state)
    merged = sft.merged(copy.deepcopy(base), state, 4, 8)
    assert not any("lora" in n for n, _ in merged.named_modules())
    with torch.no_grad():
        got = merged(input_ids=ids, attention_mask=mask).logits
        want = module.model(inputs_embeds=hidden, attention_mask=mask, use_cache=False).logits
        before = base(input_ids=ids, attention_mask=mask).logits
    real = mask.bool()
    assert torch.allclose(got[real], want[real], atol=1e-4)
    assert not torch.allclose(got[real], before[real], atol=1e-3)  # training changed it


def test_missing_or_foreign_adapter_is_an_error(tok):
    with pytest.raises(lm.MissingAdapterError):
        sft.merged(_model(tok), {}, 4, 8)
    bogus = {"base_model.model.model.layers.7.self_attn.q_proj.lora_A.weight": torch.zeros(4, 64)}
    with pytest.raises(lm.MissingAdapterError, match="does not fit"):
        sft.merged(_model(tok), bogus, 4, 8)


def test_shift_layers():
    state = {"a.layers.0.q.lora_A.weight": 1, "a.layers.1.q.lora_B.weight": 2}
    assert sft.shift_layers(state, 28) == {
        "a.layers.28.q.lora_A.weight": 1,
        "a.layers.29.q.lora_B.weight": 2,
    }
    with pytest.raises(ValueError, match="names 0 layers"):
        sft.shift_layers({"lm_head.weight": 0}, 1)


@pytest.mark.parametrize("arm", P.ARMS)
def test_decoding_stops_after_the_code_and_the_code_runs(arm):
    ex = P.generate(["clamp"], 1, seed=4)[0]
    text = P.target(ex, arm)
    cut = lm._cut(text, method.STOP)
    assert cut is not None
    shown = text[:cut]
    assert "Reasoning" not in shown or arm == "cot_first"
    code = P.extract_code(shown)
    assert code is not None and code.rstrip() == ex.code.rstrip()
    statuses = method.score([shown], [False], lambda i, c: c, [ex.test_source()], 1)
    assert statuses == ["passed"]


def test_bad_samples_are_failures_not_crashes():
    ex = P.generate(["affine"], 1, seed=0)[0]
    tests = [ex.test_source()] * 5
    texts = [
        "",  # empty generation (flagged failed by lm.generate)
        "I do not know.",  # no code block
        "```python\ndef f(:\n```",  # does not parse
        P.target(ex, "code_only").replace("return y", "return y + 1"),  # wrong
        P.target(ex, "code_only"),  # right
    ]
    failed = [True, False, False, False, False]
    got = method.score(texts, failed, lambda i, c: c, tests, 2)
    assert got == [method.NO_GENERATION, method.NO_CODE, "syntax_error", "failed", "passed"]


def test_humaneval_prompt_and_program():
    problems = humaneval.load(4)
    for p in problems:
        text = humaneval.task_prompt(p)
        assert text.startswith(f"Write a Python function `{p.entry_point}(")
    right = [p.prompt + p.canonical_solution for p in problems]  # a whole function
    wrong = [f"def {p.entry_point}(*args):\n    return None\n" for p in problems]
    run = lambda codes: method.score(  # noqa: E731
        codes,
        [False] * 4,
        lambda i, c: humaneval.program_of(problems[i], c),
        [p.tests() for p in problems],
        2,
    )
    fenced = [f"```python\n{c}```\n" for c in right]
    assert run(fenced) == ["passed"] * 4
    assert "passed" not in run([f"```python\n{c}```\n" for c in wrong])


def test_prepared_arrays_store_without_pickle(tmp_path):
    cfg = method.CotOrderConfig(n_train=3, n_test=2, n_humaneval=2)
    run = Run(spec=SPEC, cfg=cfg, seeds=(0,), root=tmp_path)
    datasets, meta = method.prepare(run, tmp_path)
    arrays = datasets[method.TASK]
    path = io.save_arrays(tmp_path, "synth", arrays)
    back = io.load_arrays(path)
    assert all(np.array_equal(back[k], v) for k, v in arrays.items())
    held_out = meta["held_out_by_seed"]["0"]
    train_rows, test_rows = method.unit_rows(cfg, back, 0)
    assert set(back["test_template"][test_rows]) <= set(held_out)
    assert not set(back["train_template"][train_rows]) & set(held_out)
    pairs = {arm: method.sft_pairs(back, arm, train_rows) for arm in P.ARMS}
    assert [p for p, _ in pairs["code_first"]] == [p for p, _ in pairs["cot_first"]]
    assert all(
        sorted(a) == sorted(b)
        for (_, a), (_, b) in zip(pairs["code_first"], pairs["cot_first"], strict=True)
    )


def test_ended_within_counts_answers_that_ended_inside_the_budget():
    reasons = ["stop", "eos", "length", "stop", "prompt_too_long"]
    used = [10, 40, 64, 64, 0]
    assert method.ended_within(reasons, used, 64) == 3 / 5
    assert method.ended_within(reasons, used, 40) == 2 / 5
    assert method.ended_within(reasons, used, 9) == 0.0


def test_finish_check_reports_every_budget_step_on_training_and_held_out_templates(
    tok, monkeypatch, tmp_path
):
    cfg = method.CotOrderConfig(finish_check=3, max_new_tokens=70)
    train, test = method.split_for(cfg, 5)
    seen = []
    real = lm.generate

    def spy(model, tokenizer, prompts, *args, **kwargs):
        seen.extend(prompts)
        return real(model, tokenizer, prompts, *args, **kwargs)

    monkeypatch.setattr(lm, "generate", spy)
    monkeypatch.setattr(method, "tokenizer", lambda folder: tok)
    run = Run(spec=SPEC, cfg=cfg, seeds=(5,), root=tmp_path, assets={lm.ASSET: tmp_path})
    signals = method.finish_signals(run, _model(tok, layers=1), {}, 5)
    assert sorted(signals) == sorted(
        f"{w}_ended{s}" for w in ("train", "held_out") for s in ("", "_at_32", "_at_64")
    )
    assert all(0.0 <= v <= 1.0 for v in signals.values())
    for w in ("train", "held_out"):
        assert signals[f"{w}_ended_at_32"] <= signals[f"{w}_ended_at_64"] <= signals[f"{w}_ended"]
    # fresh problems: the first three of the seed's training templates, then of its
    # held-out templates (never the prepared test problems)
    names = [p.split("`")[1].rsplit("_", 1)[0] for p in seen]
    assert len(seen) == 6 and set(names[:3]) <= set(train) and set(names[3:]) <= set(test)
