"""Seeded (problem, reasoning, code, tests) quadruples for short Python functions.

The paper fine-tunes on teacher-written (problem, chain of thought, code) triples; here
they come from templates, so the reasoning is correct by construction: every template
is a list of steps, and each step carries both its line of code and the sentence that
explains it. The reasoning is the sentences of the program's own steps, in order, so it
is derivable from the code after the fact, as the card asks of the main arm.

Families: ``arithmetic`` (integers), ``list`` (lists of integers) and ``string``. A
template's name is the unit of the train / test split: :func:`split_templates` holds
out whole templates (with their function names and phrasings), so test problems are not
paraphrases of training problems.

The three SFT targets differ only in order (:func:`target`): ``code_only``,
``cot_first`` (reasoning, then code) and ``code_first`` (code, then reasoning). The code
is always one fenced ```python block, which :func:`extract_code` finds in a generation.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Family = Literal["arithmetic", "list", "string"]
Arm = Literal["code_only", "cot_first", "code_first"]
ARMS: tuple[Arm, ...] = ("code_only", "cot_first", "code_first")
FENCE = "```"


@dataclass(frozen=True)
class Example:
    """One program-synthesis problem with its reference solution and held-out tests."""

    template: str
    family: Family
    name: str  # the function's name
    problem: str
    reasoning: str
    code: str
    tests: tuple[str, ...]  # assert statements on ``name``
    params: tuple[tuple[str, Any], ...] = ()  # the template's drawn constants

    def test_source(self) -> str:
        return "\n".join(self.tests) + "\n"


@dataclass(frozen=True)
class Template:
    """A problem family member: ``sample(rng)`` draws its constants; ``steps(p)`` gives
    (code line, sentence) pairs; ``inputs(rng, p)`` draws test arguments."""

    name: str
    family: Family
    signature: str  # e.g. "x" or "xs, t"
    describe: Callable[[dict], str]
    sample: Callable[[random.Random], dict]
    steps: Callable[[dict], list[tuple[str, str]]]
    inputs: Callable[[random.Random, dict], tuple]


def _ints(rng: random.Random, n: int, lo: int = -9, hi: int = 9) -> list[int]:
    return [rng.randint(lo, hi) for _ in range(n)]


def _word(rng: random.Random, lo: int = 3, hi: int = 8) -> str:
    return "".join(rng.choice("abcdeilmnorst") for _ in range(rng.randint(lo, hi)))


TEMPLATES: tuple[Template, ...] = (
    # ---------------------------------------------------------------- arithmetic
    Template(
        "affine",
        "arithmetic",
        "x",
        lambda p: f"returns {p['a']} times x plus {p['b']}",
        lambda r: {"a": r.randint(2, 9), "b": r.randint(-9, 9)},
        lambda p: [
            (f"y = {p['a']} * x", f"Multiply x by {p['a']}."),
            (f"y = y + {p['b']}", f"Add {p['b']} to the product."),
            ("return y", "Return the result."),
        ],
        lambda r, p: (r.randint(-20, 20),),
    ),
    Template(
        "clamp",
        "arithmetic",
        "x",
        lambda p: f"returns x limited to the range from {p['lo']} to {p['hi']}",
        lambda r: {"lo": (lo := r.randint(-10, 0)), "hi": lo + r.randint(3, 15)},
        lambda p: [
            (
                f"if x < {p['lo']}:\n        return {p['lo']}",
                f"If x is below {p['lo']}, return {p['lo']}.",
            ),
            (
                f"if x > {p['hi']}:\n        return {p['hi']}",
                f"If x is above {p['hi']}, return {p['hi']}.",
            ),
            ("return x", "Otherwise x is in range: return it unchanged."),
        ],
        lambda r, p: (r.randint(-25, 25),),
    ),
    Template(
        "digit_sum",
        "arithmetic",
        "x",
        lambda p: "returns the sum of the decimal digits of abs(x)",
        lambda r: {},
        lambda p: [
            ("x = abs(x)", "Drop the sign of x."),
            ("total = 0", "Start a running total at 0."),
            (
                "while x > 0:\n        total += x % 10\n        x //= 10",
                "Add the last digit and remove it, until no digits are left.",
            ),
            ("return total", "Return the total."),
        ],
        lambda r, p: (r.randint(-9999, 9999),),
    ),
    Template(
        "remainder_flag",
        "arithmetic",
        "x",
        lambda p: f"returns True when x leaves remainder {p['m']} after division by {p['k']}",
        lambda r: {"k": (k := r.randint(2, 7)), "m": r.randint(0, k - 1)},
        lambda p: [
            (f"r = x % {p['k']}", f"Compute the remainder of x divided by {p['k']}."),
            (f"return r == {p['m']}", f"Return whether the remainder equals {p['m']}."),
        ],
        lambda r, p: (r.randint(-30, 30),),
    ),
    Template(
        "distance_to",
        "arithmetic",
        "x",
        lambda p: f"returns the distance between x and {p['c']} (never negative)",
        lambda r: {"c": r.randint(-9, 9)},
        lambda p: [
            (f"d = x - {p['c']}", f"Subtract {p['c']} from x."),
            ("if d < 0:\n        d = -d", "If the difference is negative, flip its sign."),
            ("return d", "Return the distance."),
        ],
        lambda r, p: (r.randint(-20, 20),),
    ),
    Template(
        "square_plus",
        "arithmetic",
        "x",
        lambda p: f"returns x squared plus {p['b']}",
        lambda r: {"b": r.randint(-9, 9)},
        lambda p: [
            ("y = x * x", "Multiply x by itself."),
            (f"y = y + {p['b']}", f"Add {p['b']} to the square."),
            ("return y", "Return the result."),
        ],
        lambda r, p: (r.randint(-12, 12),),
    ),
    # ---------------------------------------------------------------- list
    Template(
        "keep_above",
        "list",
        "xs",
        lambda p: f"returns the elements of the list xs that are greater than {p['t']}, in order",
        lambda r: {"t": r.randint(-3, 3)},
        lambda p: [
            ("out = []", "Start an empty result list."),
            (
                f"for v in xs:\n        if v > {p['t']}:\n            out.append(v)",
                f"Go through xs and keep each element greater than {p['t']}.",
            ),
            ("return out", "Return the kept elements."),
        ],
        lambda r, p: (_ints(r, r.randint(0, 7)),),
    ),
    Template(
        "scaled",
        "list",
        "xs",
        lambda p: f"returns a new list with every element of xs multiplied by {p['k']}",
        lambda r: {"k": r.randint(-4, 5)},
        lambda p: [
            (f"out = [v * {p['k']} for v in xs]", f"Multiply every element by {p['k']}."),
            ("return out", "Return the new list."),
        ],
        lambda r, p: (_ints(r, r.randint(0, 6)),),
    ),
    Template(
        "count_equal",
        "list",
        "xs",
        lambda p: f"returns how many elements of xs are equal to {p['t']}",
        lambda r: {"t": r.randint(-2, 2)},
        lambda p: [
            ("n = 0", "Start a counter at 0."),
            (
                f"for v in xs:\n        if v == {p['t']}:\n            n += 1",
                f"Add one for each element equal to {p['t']}.",
            ),
            ("return n", "Return the count."),
        ],
        lambda r, p: (_ints(r, r.randint(0, 8), -2, 2),),
    ),
    Template(
        "running_max",
        "list",
        "xs",
        lambda p: "returns the list of running maxima of xs (element i is max(xs[:i+1]))",
        lambda r: {},
        lambda p: [
            ("out = []", "Start an empty result list."),
            ("best = None", "No maximum has been seen yet."),
            (
                "for v in xs:\n        if best is None or v > best:\n            best = v\n        out.append(best)",
                "For each element, update the largest value seen so far and append it.",
            ),
            ("return out", "Return the running maxima."),
        ],
        lambda r, p: (_ints(r, r.randint(0, 7)),),
    ),
    Template(
        "sum_even",
        "list",
        "xs",
        lambda p: "returns the sum of the even elements of xs",
        lambda r: {},
        lambda p: [
            ("total = 0", "Start a running total at 0."),
            (
                "for v in xs:\n        if v % 2 == 0:\n            total += v",
                "Add each element that is divisible by 2.",
            ),
            ("return total", "Return the total."),
        ],
        lambda r, p: (_ints(r, r.randint(0, 7)),),
    ),
    Template(
        "last_or_default",
        "list",
        "xs",
        lambda p: f"returns the last element of xs, or {p['d']} when xs is empty",
        lambda r: {"d": r.randint(-5, 5)},
        lambda p: [
            (f"if not xs:\n        return {p['d']}", f"If xs is empty, return {p['d']}."),
            ("return xs[-1]", "Otherwise return the last element."),
        ],
        lambda r, p: (_ints(r, r.randint(0, 5)),),
    ),
    # ---------------------------------------------------------------- string
    Template(
        "reversed_text",
        "string",
        "s",
        lambda p: "returns the string s reversed",
        lambda r: {},
        lambda p: [
            ("out = s[::-1]", "Read s from the last character to the first."),
            ("return out", "Return the reversed string."),
        ],
        lambda r, p: (_word(r, 0, 9),),
    ),
    Template(
        "char_count",
        "string",
        "s",
        lambda p: f"returns how many times the character {p['c']!r} occurs in s",
        lambda r: {"c": r.choice("aeiost")},
        lambda p: [
            (f"n = s.count({p['c']!r})", f"Count the occurrences of {p['c']!r} in s."),
            ("return n", "Return the count."),
        ],
        lambda r, p: (_word(r, 0, 10),),
    ),
    Template(
        "swap_letters",
        "string",
        "s",
        lambda p: f"returns s with every {p['a']!r} replaced by {p['b']!r}",
        lambda r: {"a": (a := r.choice("aeio")), "b": r.choice([c for c in "xyz" if c != a])},
        lambda p: [
            (
                f"out = s.replace({p['a']!r}, {p['b']!r})",
                f"Replace each {p['a']!r} in s by {p['b']!r}.",
            ),
            ("return out", "Return the new string."),
        ],
        lambda r, p: (_word(r, 0, 10),),
    ),
    Template(
        "first_upper",
        "string",
        "s",
        lambda p: f"returns s with its first {p['k']} characters in upper case",
        lambda r: {"k": r.randint(1, 4)},
        lambda p: [
            (
                f"head = s[:{p['k']}].upper()",
                f"Take the first {p['k']} characters and make them upper case.",
            ),
            (f"tail = s[{p['k']}:]", "Keep the rest as it is."),
            ("return head + tail", "Return the two parts joined."),
        ],
        lambda r, p: (_word(r, 0, 8),),
    ),
    Template(
        "starts_with",
        "string",
        "s",
        lambda p: f"returns True when s begins with {p['pre']!r}",
        lambda r: {"pre": _word(r, 1, 2)},
        lambda p: [
            (f"head = s[:{len(p['pre'])}]", f"Take the first {len(p['pre'])} characters of s."),
            (f"return head == {p['pre']!r}", f"Return whether they equal {p['pre']!r}."),
        ],
        lambda r, p: (p["pre"] + _word(r, 0, 5) if r.random() < 0.5 else _word(r, 0, 7),),
    ),
    Template(
        "repeat_joined",
        "string",
        "s",
        lambda p: f"returns {p['k']} copies of s joined by {p['sep']!r}",
        lambda r: {"k": r.randint(2, 4), "sep": r.choice(["-", ",", " ", "+"])},
        lambda p: [
            (f"parts = [s] * {p['k']}", f"Make a list holding s {p['k']} times."),
            (f"return {p['sep']!r}.join(parts)", f"Join the copies with {p['sep']!r}."),
        ],
        lambda r, p: (_word(r, 0, 5),),
    ),
)
BY_NAME = {t.name: t for t in TEMPLATES}


def split_templates(held_out_per_family: int, seed: int | str) -> tuple[list[str], list[str]]:
    """(train templates, test templates): ``held_out_per_family`` whole templates of each
    family, chosen by ``seed``, are kept for testing only."""
    rng = random.Random(seed)
    train, test = [], []
    for family in ("arithmetic", "list", "string"):
        names = sorted(t.name for t in TEMPLATES if t.family == family)
        if not 0 <= held_out_per_family < len(names):
            raise ValueError(
                f"held_out_per_family must be in [0, {len(names) - 1}] ({family} has "
                f"{len(names)} templates), got {held_out_per_family}"
            )
        held = set(rng.sample(names, held_out_per_family))
        train += [n for n in names if n not in held]
        test += [n for n in names if n in held]
    return train, test


def seed_split(held_out_per_family: int, data_seed: int, seed: int) -> tuple[list[str], list[str]]:
    """The (train, test) templates of replicate ``seed``: :func:`split_templates` drawn
    per seed (issue 46), from the key ``"<data_seed>/<seed>"``, so every seed holds out
    its own templates, and a seed always the same ones."""
    return split_templates(held_out_per_family, f"{int(data_seed)}/{int(seed)}")


def _function(template: Template, name: str, params: dict) -> str:
    body = "\n".join(f"    {line}" for line, _ in template.steps(params))
    return f"def {name}({template.signature}):\n{body}\n"


def reference(code: str, name: str) -> Callable[..., Any]:
    """The reference function defined by our own generated ``code`` (trusted: it comes
    from the templates above, never from a model)."""
    scope: dict[str, Any] = {}
    exec(compile(code, f"<{name}>", "exec"), scope)  # noqa: S102 - template code only
    return scope[name]


def make_example(template: Template, rng: random.Random, n_tests: int, index: int) -> Example:
    params = template.sample(rng)
    name = f"{template.name}_{index}"
    code = _function(template, name, params)
    fn = reference(code, name)
    tests = []
    for _ in range(n_tests):
        args = template.inputs(rng, params)
        expected = fn(*[list(a) if isinstance(a, list) else a for a in args])
        shown = ", ".join(repr(a) for a in args)
        tests.append(f"assert {name}({shown}) == {expected!r}")
    problem = (
        f"Write a Python function `{name}({template.signature})` that {template.describe(params)}."
    )
    reasoning = " ".join(sentence for _, sentence in template.steps(params))
    return Example(
        template.name,
        template.family,
        name,
        problem,
        reasoning,
        code,
        tuple(tests),
        tuple(sorted(params.items())),
    )


def generate(templates: Sequence[str], n: int, seed: int, n_tests: int = 5) -> list[Example]:
    """``n`` examples drawn round-robin from ``templates`` with one seeded generator."""
    unknown = sorted(set(templates) - set(BY_NAME))
    if unknown:
        raise ValueError(f"unknown template(s) {', '.join(unknown)}; known: {', '.join(BY_NAME)}")
    if not templates:
        raise ValueError("no templates to draw from")
    rng = random.Random(seed)
    return [make_example(BY_NAME[templates[i % len(templates)]], rng, n_tests, i) for i in range(n)]


def prompt(example: Example) -> str:
    return f"{example.problem}\n"


def target(example: Example, arm: Arm) -> str:
    """The SFT completion of one arm: the same reasoning and code, in a different order."""
    block = f"{FENCE}python\n{example.code}{FENCE}\n"
    why = f"Reasoning: {example.reasoning}\n"
    if arm == "code_only":
        return block
    if arm == "cot_first":
        return why + block
    if arm == "code_first":
        return block + why
    raise ValueError(f"unknown arm {arm!r}; expected one of {', '.join(ARMS)}")


_BLOCK = re.compile(r"```(?:python)?[ \t]*\n(.*?)```", re.DOTALL)


def extract_code(generation: str) -> str | None:
    """The first fenced code block of a generation (an unclosed last block counts: the
    token budget may end inside it); None when there is none."""
    match = _BLOCK.search(generation)
    if match:
        return match.group(1)
    start = generation.find(FENCE)
    if start < 0:
        return None
    rest = generation[start + len(FENCE) :]
    return rest.removeprefix("python").lstrip(" \t").removeprefix("\n") or None
