"""CRANE's token mask from a grammar engine: llguidance (Microsoft's Rust engine behind
guidance; pinned in requirements.lock), the kind of engine the paper's baselines use.

:class:`EngineMask` has :class:`~reprolab.methods.crane.grammar.TokenMask`'s interface
(``grammar``, ``allowed(span)``), so the decoder takes either. For a span it starts a
fresh ``LLMatcher`` on the compiled grammar, feeds it the span (any tokenization of the
span's bytes reaches the same grammar state), and reads the allowed tokens from
llguidance's bitmask over the whole vocabulary. The grammar is :data:`LARK`: the span's
language, ``sentence >>`` followed by anything (what follows ``>>`` is unconstrained), so
the engine answers exactly :meth:`Grammar.span_ok(span + token)
<reprolab.methods.crane.grammar.Grammar.span_ok>`. The lark grammar stays the reference:
the tests compare the engine's allowed set with brute force over SmolLM2's vocabulary.

Special tokens and tokens that decode to no text are never allowed (the decoder allows
EOS itself when the span is already a sentence).
"""

from __future__ import annotations

from collections.abc import Sequence

from reprolab.methods.crane.grammar import Grammar

#: the arithmetic span in llguidance's lark dialect: the same language as
#: ``grammar.ARITHMETIC`` (leading spaces are a lexeme of their own: llguidance's
#: ``%ignore`` applies between lexemes only), closed by ``>>``, then free text
LARK = r"""
start: SP? sum ">>" REST
sum: product | sum "+" product | sum "-" product
product: atom | product "*" atom | product "/" atom
atom: NUMBER | "-" atom | "(" sum ")"
NUMBER: /[0-9]+(\.[0-9]+)?/
SP: / +/
REST: /(?s:.*)/
%ignore / +/
"""
#: the same for CRANE's GSM-Symbolic grammar (``grammar.SYMBOLIC``: variables as atoms)
LARK_SYMBOLIC = LARK.replace("atom: NUMBER |", "atom: NUMBER | NAME |").replace(
    "SP: / +/", "NAME: /[a-z][a-z_0-9]*/\nSP: / +/"
)


def engine_lark(grammar: Grammar) -> str:
    """The llguidance grammar of a lark reference grammar (arithmetic or symbolic)."""
    from reprolab.methods.crane.grammar import SYMBOLIC

    return LARK_SYMBOLIC if grammar.text == SYMBOLIC else LARK


class EngineMask:
    """The token ids whose text keeps a constrained span valid, from llguidance.

    ``tokenizer``: the Hugging Face tokenizer ``vocab`` was decoded from (``vocab[i]``
    is token i's text, as the decoder appends it)."""

    def __init__(self, tokenizer, vocab: Sequence[str], grammar: Grammar | None = None):
        try:
            import llguidance
            import llguidance.hf
        except ImportError as err:  # pragma: no cover - pinned in requirements.lock
            raise ImportError(
                "crane needs llguidance: pip install --no-deps llguidance==1.9.1 "
                "(pinned in requirements.lock)"
            ) from err
        import numpy as np

        self.grammar = grammar or Grammar()
        self.vocab = list(vocab)
        self._tok = llguidance.hf.from_tokenizer(tokenizer)
        if self._tok.vocab_size < len(self.vocab):
            raise ValueError(
                f"llguidance sees {self._tok.vocab_size} tokens, the vocabulary has "
                f"{len(self.vocab)}: not the tokenizer the vocabulary came from"
            )
        self._grammar = llguidance.LLMatcher.grammar_from_lark(engine_lark(self.grammar))
        bad, messages = llguidance.LLMatcher.validate_grammar_with_warnings(self._grammar)
        if bad:
            raise ValueError(f"llguidance rejects the span grammar: {messages}")
        self._matcher = llguidance.LLMatcher
        special = set(getattr(tokenizer, "all_special_ids", ()))
        self._keep = np.array([bool(t) and i not in special for i, t in enumerate(self.vocab)])

    def allowed(self, span: str) -> list[int]:
        """Ids of the tokens t with ``grammar.span_ok(span + vocab[t])``."""
        import numpy as np

        matcher = self._matcher(self._tok, self._grammar, log_level=0)
        if not matcher.consume_tokens(self._tok.tokenize_str(span)) or matcher.is_error():
            return []  # not a valid prefix: no token can make it one
        # llguidance's bitmask: little-endian 32-bit words, bit i of the vector = token i
        bits = np.unpackbits(np.frombuffer(matcher.compute_bitmask(), np.uint8), bitorder="little")
        return np.flatnonzero(bits[: len(self.vocab)].astype(bool) & self._keep).tolist()
