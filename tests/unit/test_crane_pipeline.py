"""crane's pieces around the decoder: exact answer values, the scorer, the batched LM
driver (against the one-row reference decoder), the splits, and the token mask over the
real SmolLM2 vocabulary (against brute force)."""

from __future__ import annotations

import random
from fractions import Fraction
from types import SimpleNamespace

import pytest
import torch

from reprolab.core import lm
from reprolab.methods.crane import batched
from reprolab.methods.crane import tasks as T
from reprolab.methods.crane.decode import decode
from reprolab.methods.crane.grammar import Grammar, TokenMask
from reprolab.methods.crane.method import _Shape, score

G = Grammar()


def test_value_agrees_with_exact_arithmetic():
    rng = random.Random(1)

    def expr(d: int) -> tuple[str, Fraction]:
        if d == 0 or rng.random() < 0.3:
            n = rng.randint(1, 99)
            return str(n), Fraction(n)
        (a, x), (b, y) = expr(d - 1), expr(d - 1)
        op = rng.choice("+-*/")
        v = {"+": x + y, "-": x - y, "*": x * y, "/": x / y}[op]
        return f"({a} {op} {b})", v

    for _ in range(200):
        text, v = expr(3)
        assert G.value(text) == v, text
    assert G.value("-(2 - 5)") == 3 and G.value("012 + 1") == 13 and G.value("1.5*2") == 3
    assert G.value("7/(3-3)") is None and G.value("1 +") is None and G.value("") is None


def test_score_reads_the_first_closed_span():
    out = SimpleNamespace
    assert score(out(text=" 2+3>>."), False, 5.0) == (True, True, True)  # prompt opened <<
    assert score(out(text=" so <<2*3>> and <<7>>"), True, 6.0) == (True, True, True)
    assert score(out(text="2+>>"), False, 2.0) == (True, False, False)  # does not parse
    assert score(out(text="It is 5."), True, 5.0) == (False, False, False)  # no answer
    assert score(out(text="<<5"), True, 5.0) == (False, False, False)  # never closed
    assert score(out(text=""), True, 0.0) == (False, False, False)


VOCAB = [*"0123456789+-*/() ", "<<", ">>", " so", "\n", "", "ab", " is", "1+", ">>."]
EOS = VOCAB.index("")


@pytest.mark.parametrize("mode", ["unconstrained", "constrained", "crane"])
def test_batched_driver_matches_the_one_row_decoder(mode):
    """Shared prefix cache, padding inside the block, rows leaving the batch: the batched
    tokens equal the reference decoder's, fed by full forward passes without a cache."""
    model = lm.tiny_model(_Shape(len(VOCAB), EOS, EOS), layers=2, hidden=32, init_std=0.4, seed=3)
    with torch.no_grad():  # make "<<" likely so that crane's spans open
        model.lm_head.weight[VOCAB.index("<<")] *= 3
    mask = TokenMask(G, VOCAB)
    prefix = [19, 3, 4, 21, 1]
    suffixes = [[2], [5, 6, 7, 8], [9, 9], [1, 2, 3, 4, 5, 6, 7]]
    common = dict(max_new_tokens=12, eos_id=EOS, temperature=0.0, stop=(">>",))
    got = batched.run(
        model,
        prefix,
        suffixes,
        VOCAB,
        mask,
        mode,
        row_seeds=[0, 1, 2, 3],
        pad_id=EOS,
        batch_size=3,
        **common,
    )

    def step(ids):
        with torch.inference_mode():
            return model(input_ids=torch.tensor([ids])).logits[0, -1]

    for (out, _), suffix in zip(got, suffixes, strict=True):
        ref = decode(step, prefix + suffix, VOCAB, mask, mode, **common)
        assert out.token_ids == ref.token_ids and out.stopped == ref.stopped
        assert out.masked_steps == ref.masked_steps


def test_a_prompt_over_the_window_is_a_failed_sample():
    model = lm.tiny_model(_Shape(len(VOCAB), EOS, EOS), layers=1, hidden=16, context=16)
    rows = batched.run(
        model,
        [1] * 10,
        [[2] * 8, [3]],
        VOCAB,
        TokenMask(G, VOCAB),
        "crane",
        max_new_tokens=4,
        eos_id=EOS,
        temperature=1.0,
        row_seeds=[0, 1],
        stop=(),
        pad_id=EOS,
        batch_size=2,
    )
    assert rows[0][0].stopped == "prompt_too_long" and rows[0][0].token_ids == []
    assert score(rows[0][0], True, 1.0) == (False, False, False)
    assert 1 <= len(rows[1][0].token_ids) <= 4


@pytest.mark.parametrize(
    "family", ["chain_sum_1digit", "leg_counting", "chain_sum", "gsm_symbolic"]
)
def test_splits_are_disjoint_and_exemplars_are_right(family):
    shots = T.exemplars(family, 2, G)
    for p in shots:  # the derived expression evaluates to the gold answer
        assert float(G.value(p.expression)) == pytest.approx(p.gold)
    seen = {p.question for p in shots}
    cal = T.draw_problems(family, T.CALIBRATION_SEED, 6, seen, G)
    seen |= {p.question for p in cal}
    ev = T.draw_problems(family, T.EVAL_SEED, 6, seen, G)
    assert len(ev) == 6 and not seen & {p.question for p in ev}


def test_token_mask_over_the_real_vocabulary_equals_brute_force():
    tok = lm.load_tokenizer()
    vocab = [tok.decode([i], skip_special_tokens=True) for i in range(len(tok))]
    mask = TokenMask(G, vocab)
    for span in ["", "(3+4"]:
        brute = [i for i, t in enumerate(vocab) if t and G.span_ok(span + t)]
        assert mask.allowed(span) == brute, span


@pytest.mark.slow
def test_crane_on_the_real_model():
    """SmolLM2-135M-Instruct from the GGUF, the CoT prompt of the easiest family: CRANE
    writes tokens, and every span it closes parses."""
    model, tok = lm.load_gguf()
    vocab = [tok.decode([i], skip_special_tokens=True) for i in range(len(tok))]
    family = "chain_sum_1digit"
    prefix = tok(T.prefix(T.exemplars(family, 2, G), True)).input_ids
    problems = T.draw_problems(family, T.CALIBRATION_SEED, 2, set(), G)
    suffixes = [tok(T.query(p, True), add_special_tokens=False).input_ids for p in problems]
    rows = batched.run(
        model,
        prefix,
        suffixes,
        vocab,
        TokenMask(G, vocab),
        "crane",
        max_new_tokens=30,
        eos_id=tok.eos_token_id,
        temperature=0.5,
        row_seeds=[0, 1],
        stop=T.STOP,
        pad_id=lm._pad_id(tok),
        batch_size=2,
    )
    for out, _ in rows:
        assert out.token_ids
        assert all(G.complete(span) for span in out.spans)


def test_calibration_measures_crane_condition():
    """The premise check on hand-made outputs: the span breaks the grammar (the mask would
    fire) and the reasoning reaches the gold answer, counted independently."""
    from reprolab.methods.crane.config import CraneConfig
    from reprolab.methods.crane.method import (
        calibrate,
        choose_family,
        reasoning_right,
        span_breaks,
    )

    texts = [
        " 3 + 4 = 7. So the answer is <<7 apples>>.",  # breaks, reasoning right
        " 3 + 4 = 7. So the answer is <<3 + 4 = 7>>",  # breaks ('='), right
        " 3 + 4 = 8. So the answer is <<8>>.",  # valid, wrong
        " 3 + 4 = 7. So the answer is <<7>>.",  # valid, right
        " 3 + 4 is seven",  # no span: nothing breaks, no number
        " 3 + 4 = 7. So the answer is <<7 +",  # open but a valid prefix; right
    ]
    assert [span_breaks(t, G) for t in texts] == [True, True, False, False, False, False]
    assert [reasoning_right(t, 7.0) for t in texts] == [True, True, False, True, False, True]
    c = calibrate(texts, [7.0] * 6, CraneConfig(premise_reasoning_min=0.5), G)
    assert c["invalid_span_rate"] == pytest.approx(2 / 6)
    assert c["reasoning_correct"] == pytest.approx(4 / 6)
    assert c["accuracy"] == pytest.approx(1 / 6) and c["premise_holds"]
    assert not calibrate(texts, [7.0] * 6, CraneConfig(premise_invalid_min=0.5), G)["premise_holds"]
    cal = {
        "a": {"premise_holds": False, "in_range": True, "accuracy": 0.6},
        "b": {"premise_holds": True, "in_range": False, "accuracy": 0.05},
    }
    assert choose_family(cal) == "b"
    cal["b"]["premise_holds"] = False
    assert choose_family(cal) == "a"


def test_bad_premise_threshold_names_the_key():
    from pydantic import ValidationError

    from reprolab.methods.crane.config import CraneConfig

    with pytest.raises(ValidationError, match="premise_invalid_min"):
        CraneConfig(premise_invalid_min=1.5)
