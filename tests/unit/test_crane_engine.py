"""crane's token mask from llguidance against brute force over SmolLM2's vocabulary:
for every span state below, the engine's allowed set equals the tokens t for which the
lark reference check ``Grammar.span_ok(span + vocab[t])`` holds (over all 49,152 tokens),
and equals the lark :class:`TokenMask` the decoder used before."""

from __future__ import annotations

import pytest

from reprolab.core import lm
from reprolab.methods.crane.engine import EngineMask
from reprolab.methods.crane.grammar import Grammar, TokenMask

G = Grammar()
SPANS = [
    "",
    " ",
    "  1",
    "12",
    "12.",
    "1.5",
    "(3+4",
    "((2",
    "3*4 +",
    " 2*6 + 3*",
    "24*256-",
    "-",
    "-(-(1",
    "(1+2)",
    "(1*2)/",
    "1 ",
    "1 >",
    "7>",
    "1 2",  # not a valid prefix: nothing is allowed
    "2*/3",
]


@pytest.fixture(scope="module")
def setup():
    tok = lm.load_tokenizer()
    vocab = [
        tok.decode([i], skip_special_tokens=True, clean_up_tokenization_spaces=False)
        for i in range(len(tok))
    ]
    return vocab, EngineMask(tok, vocab), TokenMask(G, vocab)


#: brute force over all 49,152 tokens costs ~15 s per span: a few states of each kind
BRUTE = ["", "(3+4", " 2*6 + 3*", "1 >", "12."]


@pytest.mark.parametrize("span", BRUTE)
def test_engine_mask_equals_brute_force_over_the_real_vocabulary(setup, span):
    vocab, engine, _ = setup
    brute = [i for i, t in enumerate(vocab) if t and G.span_ok(span + t)]
    got = engine.allowed(span)
    assert got == brute, (span, {vocab[i] for i in set(got) ^ set(brute)})


def test_engine_mask_equals_the_lark_mask(setup):
    """The lark mask (itself checked against brute force) on every state above."""
    vocab, engine, lark_mask = setup
    for span in SPANS:
        assert engine.allowed(span) == lark_mask.allowed(span), span


def test_engine_mask_is_not_vacuous(setup):
    vocab, engine, _ = setup
    after_number = {vocab[i] for i in engine.allowed("12")}
    assert {"+", ">>", "3"} <= after_number and ")" not in after_number
    assert ">>" not in {vocab[i] for i in engine.allowed("1+")}
    assert engine.allowed("1 2") == []


def test_a_foreign_tokenizer_is_refused():
    tok = lm.load_tokenizer()
    with pytest.raises(ValueError, match="not the tokenizer"):
        EngineMask(tok, ["x"] * (len(tok) + 5))
