"""CRANE's prefix check and token mask against brute force."""

from __future__ import annotations

import itertools
import random

import pytest

from reprolab.methods.crane.grammar import Grammar, TokenMask

G = Grammar()


def brute_prefix(s: str, depth: int = 5) -> bool:
    """Some completion of length <= depth over {'1', ')'} makes ``s`` a sentence (lark's
    own full parse decides). Enough for the arithmetic grammar: a number and closing
    parentheses finish any valid prefix; a miss would show as a mismatch, not a pass."""
    return any(
        G.complete(s + "".join(c))
        for n in range(depth + 1)
        for c in itertools.product("1)", repeat=n)
    )


def test_valid_prefix_equals_brute_force_on_every_short_string():
    alphabet = "1.+-*/() "
    for n in range(4):
        for chars in itertools.product(alphabet, repeat=n):
            s = "".join(chars)
            assert G.valid_prefix(s) == brute_prefix(s), repr(s)


@pytest.mark.parametrize(
    "s", ["((1+", "12.", "1 + (2", "-(-(1", "(1*2)/", "3.25 - ", "1 2", "1..5", "(1))", "2*/3"]
)
def test_valid_prefix_longer_cases(s):
    assert G.valid_prefix(s) == brute_prefix(s)


def test_complete_agrees_with_python_on_random_expressions():
    rng = random.Random(0)

    def expr(d: int) -> str:
        if d == 0 or rng.random() < 0.3:
            return str(rng.randint(0, 99))
        op = rng.choice("+-*")
        return (
            f"({expr(d - 1)} {op} {expr(d - 1)})"
            if rng.random() < 0.5
            else f"{expr(d - 1)}{op}{expr(d - 1)}"
        )

    for _ in range(100):
        e = expr(3)
        assert G.complete(e), e
        eval(compile(e, "<expr>", "eval"))  # noqa: S307 - our own arithmetic
        assert not G.complete(e + "+")


def test_span_ok_around_the_closing_delimiter():
    assert G.span_ok("1+2>>") and G.span_ok("1+2>> so the answer") and G.span_ok("1+2>")
    assert not G.span_ok("1+>>") and not G.span_ok("(1>>") and not G.span_ok(">>")


VOCAB = [
    "1",
    "12",
    "3.5",
    ".",
    "+",
    "-",
    "*",
    "/",
    "(",
    ")",
    "))",
    "+(",
    " ",
    " 7",
    "1)",
    ">>",
    ">> The",
    ">",
    " >>",
    "abc",
    "x",
    "<<",
    "1 + 2",
    "=",
    "\n",
    "",
    "2>>",
]


@pytest.mark.parametrize("span", ["", "1", "12.", "(1+", "((", "1 +", "-", "1)", "(1+2)", "1 2"])
def test_token_mask_equals_brute_force_over_the_vocabulary(span):
    mask = TokenMask(G, VOCAB)
    expected = [i for i, tok in enumerate(VOCAB) if tok and G.span_ok(span + tok)]
    assert mask.allowed(span) == expected


def test_a_grammar_that_accepts_nothing_is_rejected():
    with pytest.raises(ValueError, match="accepts nothing"):
        Grammar(text='start: start "a"').valid_prefix("")
