"""CRANE's constrained span: an incremental LALR prefix check (lark) and the token mask.

CRANE decodes unconstrained until the model writes ``<<``; inside ``<< ... >>`` every
sampled token is checked, and only when ``span + token`` is no longer a prefix of the
grammar's language are the logits masked to the tokens that keep it one. This module
answers the two questions that needs, for any lark grammar:

- :meth:`Grammar.valid_prefix` / :meth:`Grammar.complete`: is a string a prefix of some
  sentence / a sentence? The prefix is lexed with maximal munch against the grammar's
  terminals (the ``regex`` module's partial matching decides whether the unfinished last
  lexeme can still grow into a terminal) and fed token by token to lark's interactive
  LALR parser, whose ``accepts()`` gives the terminals allowed next.
- :meth:`Grammar.span_ok`: the check CRANE applies inside the delimiters: a span is fine
  when it is a valid prefix, or a complete sentence followed by ``>>`` (or by the first
  ``>`` of it); what follows ``>>`` is unconstrained again.
- :class:`TokenMask`: the tokens of a vocabulary that keep a span fine. Precomputed: the
  vocabulary is cut once to the tokens made of the grammar's characters (``alphabet``),
  and the parser state before the span's last lexeme is reused for every candidate, so a
  masked step checks a few hundred short strings instead of the whole vocabulary.

The default grammar is arithmetic over decimal numbers (the numeric reasoning-gym
families); :data:`SYMBOLIC` adds named variables, as CRANE's own ``gsm_grammar.lark``
does for GSM-Symbolic, whose answers are expressions over the question's variables (the
``symbolic`` family, :mod:`reprolab.methods.crane.tasks`). :meth:`Grammar.value` takes
the variables' values; :func:`equivalent` compares two expressions on random values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

ARITHMETIC = r"""
?start: sum
?sum: product | sum PLUS product | sum MINUS product
?product: atom | product STAR atom | product SLASH atom
?atom: NUMBER | MINUS atom | LPAR sum RPAR
PLUS: "+"
MINUS: "-"
STAR: "*"
SLASH: "/"
LPAR: "("
RPAR: ")"
NUMBER: /[0-9]+(\.[0-9]+)?/
WS: / +/
%ignore WS
"""
ARITHMETIC_ALPHABET = frozenset("0123456789.+-*/() ")
#: CRANE's GSM-Symbolic answer language: the arithmetic grammar whose atoms may also be
#: variables (lower-case names); ``2x`` (a number then a name) and ``x y`` are not sentences
SYMBOLIC = ARITHMETIC.replace(
    "?atom: NUMBER | MINUS atom | LPAR sum RPAR",
    "?atom: NUMBER | NAME | MINUS atom | LPAR sum RPAR",
).replace("WS: / +/", "NAME: /[a-z][a-z_0-9]*/\nWS: / +/")
SYMBOLIC_ALPHABET = ARITHMETIC_ALPHABET | frozenset("abcdefghijklmnopqrstuvwxyz_")
OPEN, CLOSE = "<<", ">>"


@dataclass
class Grammar:
    """A lark grammar (LALR) with prefix checks. ``alphabet``: every character a sentence
    can contain (used only to cut the vocabulary; the tests check it against brute force)."""

    text: str = ARITHMETIC
    alphabet: frozenset[str] = ARITHMETIC_ALPHABET
    start: str = "start"

    @classmethod
    def symbolic(cls) -> Grammar:
        """CRANE's GSM-Symbolic answer grammar (numbers and named variables)."""
        return cls(SYMBOLIC, SYMBOLIC_ALPHABET)

    @cached_property
    def parser(self):
        try:
            import lark
        except ImportError as err:  # pragma: no cover - lark is in requirements.lock
            raise ImportError(
                "crane needs lark: pip install lark (pinned in requirements.lock)"
            ) from err
        parser = lark.Lark(self.text, parser="lalr", lexer="basic", start=self.start)
        if not parser.parse_interactive("").accepts():
            raise ValueError("the grammar accepts nothing: no terminal can start a sentence")
        return parser

    @cached_property
    def _terminals(self) -> list:
        """(name, compiled pattern) of every terminal, for maximal munch and partial
        matching (the ``regex`` module, which can tell an unfinished match)."""
        import regex

        return [(t.name, regex.compile(t.pattern.to_regexp())) for t in self.parser.terminals]

    @cached_property
    def _ignore(self) -> set[str]:
        return set(self.parser.ignore_tokens)

    # ------------------------------------------------------------ lexing and feeding

    def _fresh(self):
        return self.parser.parse_interactive("")

    def _feed(self, ip, text: str, pos: int = 0, partial: bool = True) -> tuple[bool, int]:
        """Advance ``ip`` over ``text[pos:]`` (mutates ``ip``). Returns (ok, start of
        the last lexeme): ok is False as soon as no completion can exist. With
        ``partial``, an unfinished last lexeme that can still become an acceptable
        terminal ends the walk (ok, not fed); without, every lexeme is fed."""
        from lark import Token

        last = pos
        while pos < len(text):
            rest = text[pos:]
            accepts = ip.accepts()
            if partial and any(
                (name in accepts or name in self._ignore)
                and pattern.fullmatch(rest, partial=True) is not None
                for name, pattern in self._terminals
            ):
                return True, pos  # the rest is (a prefix of) one acceptable lexeme
            best, best_end = None, pos
            for name, pattern in self._terminals:
                m = pattern.match(text, pos)
                if m is not None and m.end() > best_end:
                    best, best_end = name, m.end()
            if best is None:
                return False, pos
            if best not in self._ignore:
                if best not in accepts:
                    return False, pos
                ip.feed_token(Token(best, text[pos:best_end]))
            last, pos = pos, best_end
        return True, last

    # ------------------------------------------------------------ the checks

    def valid_prefix(self, text: str) -> bool:
        return self._feed(self._fresh(), text)[0]

    def complete(self, text: str) -> bool:
        """Whether ``text`` is a whole sentence (lexed in full, then end of input)."""
        from lark.exceptions import LarkError

        try:
            self.parser.parse(text)
        except LarkError:
            return False
        return True

    def value(self, text: str, env: dict | None = None):
        """The exact value (a ``Fraction``) of a sentence, or None when ``text`` is not a
        sentence, divides by zero, or names a variable ``env`` does not give. Computed
        from lark's parse tree, never by ``eval``."""
        from fractions import Fraction

        from lark import Token, Tree
        from lark.exceptions import LarkError

        try:
            tree = self.parser.parse(text)
        except LarkError:
            return None

        def walk(node):
            if isinstance(node, Token):
                if node.type == "NAME":
                    return Fraction((env or {})[str(node)])  # KeyError: unknown name
                return Fraction(str(node))
            kids = [
                k
                for k in node.children
                if not (isinstance(k, Token) and k.type in ("LPAR", "RPAR"))
            ]
            if len(kids) == 1:
                return walk(kids[0])
            if len(kids) == 2:  # MINUS atom
                return -walk(kids[1])
            left, op, right = walk(kids[0]), kids[1], walk(kids[2])
            if op.type == "PLUS":
                return left + right
            if op.type == "MINUS":
                return left - right
            if op.type == "STAR":
                return left * right
            return left / right  # SLASH; ZeroDivisionError caught below

        try:
            out = walk(tree)
        except (ZeroDivisionError, KeyError):
            return None
        return out if isinstance(tree, Tree | Token) else None

    def span_ok(self, span: str) -> bool:
        """CRANE's check inside ``<< ... >>`` (see the module docstring)."""
        end = span.find(CLOSE)
        if end >= 0:
            return self.complete(span[:end])
        if span.endswith(">"):
            return self.complete(span[:-1])
        return self.valid_prefix(span)


def names(grammar: Grammar, text: str) -> set[str]:
    """The variable names of a sentence (empty when it is none or has none)."""
    from lark.exceptions import LarkError

    try:
        return {str(t) for t in grammar.parser.lex(text) if t.type == "NAME"}
    except LarkError:
        return set()


def equivalent(grammar: Grammar, text: str, gold: str, trials: int = 6) -> bool:
    """Whether sentence ``text`` has ``gold``'s value at ``trials`` random assignments of
    ``gold``'s variables (integers 2-97 drawn with a seed fixed by ``gold``; a name not in
    ``gold``, a non-sentence or a division by zero in ``text`` is never equivalent).
    Polynomials and ratios of degree < trials that differ cannot agree everywhere unless
    the random points hit a root: at these sizes the tests find no false match."""
    import random
    import zlib

    rng = random.Random(zlib.crc32(gold.encode()))
    variables = sorted(names(grammar, gold))
    if not grammar.complete(text) or names(grammar, text) - set(variables):
        return False
    hits = 0
    for _ in range(trials):
        env = {v: rng.randint(2, 97) for v in variables}
        want, got = grammar.value(gold, env), grammar.value(text, env)
        if want is None:
            continue  # gold divides by zero here: skip the point
        if got is None or got != want:
            return False
        hits += 1
    return hits > 0


class TokenMask:
    """The token ids whose text keeps a constrained span valid, for one vocabulary.

    ``vocab[i]`` is the text token i decodes to. Tokens with a character outside the
    grammar's alphabet (and ``>``) can never help inside the span unless they close it
    with ``>>`` (then what follows is free): those are kept as candidates too."""

    def __init__(self, grammar: Grammar, vocab: Sequence[str]):
        self.grammar = grammar
        self.vocab = list(vocab)
        allowed = set(grammar.alphabet) | {">"}
        self.candidates = [
            i
            for i, tok in enumerate(self.vocab)
            if tok and (set(tok) <= allowed or CLOSE in tok or tok.startswith(">"))
        ]

    def allowed(self, span: str) -> list[int]:
        """Ids of the tokens t with ``grammar.span_ok(span + vocab[t])``."""
        g = self.grammar
        ip = g._fresh()
        ok, last = g._feed(ip, span)
        if not ok:  # a span that is already invalid: only closing it could be judged
            return [i for i in self.candidates if g.span_ok(span + self.vocab[i])]
        # re-feed up to the start of the last lexeme, then try each candidate from there
        base = g._fresh()
        g._feed(base, span[:last], partial=False)
        out = []
        for i in self.candidates:
            tok = self.vocab[i]
            text = span + tok
            if ">" in tok or span.endswith(">"):
                keep = g.span_ok(text)
            else:
                keep = g._feed(base.copy(), text, last)[0]
            if keep:
                out.append(i)
        return out
