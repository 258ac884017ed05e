"""crane's problems and prompts: GSM-Symbolic and easier families from reasoning-gym.

Three disjoint splits per family, each drawn from reasoning-gym with its own seed:
exemplars (the few-shot prompt), calibration (which easier family to evaluate), and
evaluation (one draw per evaluation seed). A question that occurs in an earlier split is
dropped from a later one, so no evaluated problem is an exemplar or a calibration item.

Every answer is written between ``<<`` and ``>>`` as an arithmetic expression (CRANE's
GSM-Symbolic format, with numbers where CRANE has variables); the prompts differ only in
whether the exemplars reason first:

- direct: ``Question: ...\\nAnswer: <<expr>>.`` and the query ends with ``Answer: <<``;
- chain of thought: ``Question: ...\\nAnswer: <reasoning> So the answer is <<expr>>.``
  and the query ends with ``Answer:``.

The ``symbolic`` family is CRANE's GSM-Symbolic setting in miniature: word problems
whose quantities are variables (``Ava buys x boxes of y pens ...``), so the answer is an
expression over those variables (``<<x*y - z>>``), written in :data:`grammar.SYMBOLIC
<reprolab.methods.crane.grammar.SYMBOLIC>` and judged by its value at random values of
the variables (:func:`~reprolab.methods.crane.grammar.equivalent`). Its problems come
from :data:`SYMBOLIC_TEMPLATES` (one split per seed, like the reasoning-gym families):
each template's answer expression and reasoning are written with the template, so the
exemplars are correct by construction (the tests check every template by brute force).

The exemplars' reasoning is derived from each problem (leg counts from reasoning-gym's
own animal table, left-to-right sums, GSM-Symbolic's ``answer_cot``), so it is correct by
construction; the exemplar expression is checked against the gold answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from reprolab.methods.crane.grammar import Grammar

GSM = "gsm_symbolic"
#: reasoning-gym settings per family (the easier families made small on purpose)
FAMILY_SETTINGS: dict[str, dict] = {
    "leg_counting": {"min_animals": 1, "max_animals": 2, "min_instances": 1, "max_instances": 5},
    "chain_sum": {"min_terms": 2, "max_terms": 3, "min_digits": 1, "max_digits": 2},
    # chain_sum at its smallest: two one-digit terms (+ or -)
    "chain_sum_1digit": {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1},
    GSM: {},
    # CRANE's symbolic-variable answers: SYMBOLIC_TEMPLATES, three variables at most
    "symbolic": {"templates": "SYMBOLIC_TEMPLATES", "variables": "a-z but l, o, i"},
}
#: the reasoning-gym dataset behind each family (a family is a dataset and its settings)
SOURCE = {"chain_sum_1digit": "chain_sum"}
#: reasoning-gym seeds of the splits (evaluation seed s draws with EVAL_SEED + s)
EXEMPLAR_SEED, CALIBRATION_SEED, EVAL_SEED = 1_000, 2_000, 4_000
# (3_000 + s was a development draw looked at while the prompts were written; the
# evaluation never uses it)
HEADER = (
    "Answer each question. Write the final answer as an arithmetic expression "
    "between << and >>.\n\n"
)
_GSM_TAIL = " Give the result as your final answer. Do not include units."


SYMBOLIC = "symbolic"
#: (question, reasoning, answer) with ``{N}`` a person and ``{a}``, ``{b}``, ``{c}`` the
#: variables; the reasoning ends on the answer expression, in words a 2-shot prompt shows
SYMBOLIC_TEMPLATES: tuple[tuple[str, str, str], ...] = (
    (
        "{N} has {a} apples and buys {b} more. How many apples does {N} have?",
        "{N} starts with {a} apples and adds {b}, so {a} + {b}.",
        "{a} + {b}",
    ),
    (
        "{N} buys {a} boxes with {b} pens in each box and gives away {c} pens. "
        "How many pens does {N} have left?",
        "{a} boxes of {b} pens are {a}*{b} pens. Giving away {c} leaves {a}*{b} - {c}.",
        "{a}*{b} - {c}",
    ),
    (
        "{N} reads {a} pages a day for {b} days and then {c} more pages. "
        "How many pages does {N} read?",
        "{a} pages a day for {b} days is {a}*{b} pages. Then {c} more: {a}*{b} + {c}.",
        "{a}*{b} + {c}",
    ),
    (
        "A farm has {a} cows and {b} chickens. How many legs do the animals have?",
        "A cow has 4 legs, so {a} cows have 4*{a} legs. A chicken has 2 legs, so {b} "
        "chickens have 2*{b}. Together 4*{a} + 2*{b}.",
        "4*{a} + 2*{b}",
    ),
    (
        "{N} shares {a} cookies equally among {b} friends. How many cookies does each friend get?",
        "{a} cookies split among {b} friends is {a}/{b} each.",
        "{a}/{b}",
    ),
    (
        "A rectangle is {a} meters long and {b} meters wide. What is its perimeter?",
        "The perimeter is two lengths and two widths: 2*{a} + 2*{b}, which is 2*({a} + {b}).",
        "2*({a} + {b})",
    ),
    (
        "{N} had {a} marbles, lost {b} of them, and then doubled what was left. "
        "How many marbles does {N} have now?",
        "After losing {b}, {N} has {a} - {b}. Doubling gives 2*({a} - {b}).",
        "2*({a} - {b})",
    ),
    (
        "{N} earns {a} dollars an hour, works {b} hours a week, and spends {c} dollars "
        "a week. How many dollars does {N} save in a week?",
        "{N} earns {a}*{b} dollars a week and spends {c}, so {a}*{b} - {c}.",
        "{a}*{b} - {c}",
    ),
    (
        "A train travels {a} kilometers in {b} hours. How many kilometers does it travel "
        "in {c} hours at the same speed?",
        "The speed is {a}/{b} kilometers an hour, so in {c} hours it travels {a}/{b}*{c}.",
        "{a}/{b}*{c}",
    ),
    (
        "{N} buys {a} shirts at {b} dollars each and pays with {c} dollars. "
        "How much change does {N} get?",
        "The shirts cost {a}*{b} dollars. The change is {c} - {a}*{b}.",
        "{c} - {a}*{b}",
    ),
)
SYMBOLIC_NAMES = ("Ava", "Ben", "Mia", "Noah", "Lena", "Omar", "Sara", "Tom", "Yuki", "Ravi")
#: one-letter variables (l, o, i left out: read as 1, 0 and the word i)
SYMBOLIC_VARIABLES = tuple("abcdefghjkmnpqrstuvwxyz")


def symbolic_items(seed: int, size: int) -> list[dict]:
    """``size`` instances of :data:`SYMBOLIC_TEMPLATES` drawn with ``seed``: a template,
    a person and distinct variables, each uniformly (reasoning-gym's item shape)."""
    import random

    rng = random.Random(seed)
    out = []
    for _ in range(size):
        question, reasoning, answer = rng.choice(SYMBOLIC_TEMPLATES)
        a, b, c = rng.sample(SYMBOLIC_VARIABLES, 3)
        fill = {"N": rng.choice(SYMBOLIC_NAMES), "a": a, "b": b, "c": c}
        out.append(
            {
                "question": question.format(**fill),
                "answer": answer.format(**fill),
                "metadata": {"reasoning": reasoning.format(**fill)},
            }
        )
    return out


@dataclass(frozen=True)
class Problem:
    question: str
    #: the value of the answer (NaN for the symbolic family: its answer is ``expression``)
    gold: float
    reasoning: str = ""
    expression: str = ""


def _draw(family: str, seed: int, size: int) -> list[dict]:
    if family == SYMBOLIC:
        return symbolic_items(seed, size)
    try:
        import reasoning_gym
    except ImportError as err:  # pragma: no cover - pinned in requirements.lock
        raise ImportError(
            "crane needs reasoning-gym: pip install reasoning-gym==0.1.25 "
            "(pinned in requirements.lock)"
        ) from err
    return list(
        reasoning_gym.create_dataset(
            SOURCE.get(family, family), size=size, seed=seed, **FAMILY_SETTINGS[family]
        )
    )


def _legs() -> dict[str, int]:
    from reasoning_gym.arithmetic.leg_counting import ANIMALS

    return dict(ANIMALS)


def _number(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else str(float(x))


def to_problem(family: str, item: dict, grammar: Grammar) -> Problem | None:
    """A reasoning-gym item as a problem with derived reasoning and answer expression
    (None when the derivation does not reproduce the gold answer: never an exemplar)."""
    if family == SYMBOLIC:
        p = Problem(item["question"], float("nan"), item["metadata"]["reasoning"], item["answer"])
        return p if grammar.complete(p.expression) else None
    meta, gold = item["metadata"], float(item["answer"])
    if family == "leg_counting":
        legs = _legs()
        q = item["question"].strip().split("\n")[-1].removeprefix("Now, ")
        q = q[0].upper() + q[1:]
        parts = [(n, legs[a], a) for a, n in meta["animals"].items()]
        steps = [
            f"{'An' if a[0] in 'aeiou' else 'A'} {a} has {k} legs, so {n} of them have "
            f"{n}*{k} = {n * k} legs."
            for n, k, a in parts
        ]
        expr = " + ".join(f"{n}*{k}" for n, k, _ in parts)
        return _checked(Problem(q, gold, " ".join(steps), expr), grammar)
    if SOURCE.get(family, family) == "chain_sum":
        expr = meta["expression"]
        terms = re.findall(r"[+-]?\s*\d+", expr.replace(" ", ""))
        total, steps = int(terms[0]), []
        for t in terms[1:]:
            new = total + int(t)
            steps.append(f"{total} {t[0]} {t[1:]} = {new}.")
            total = new
        return _checked(Problem(f"What is {expr}?", gold, " ".join(steps), str(total)), grammar)
    if family == GSM:
        q = item["question"].strip().removesuffix(_GSM_TAIL).strip()
        lines = [ln for ln in meta["answer_cot"].split("\n") if not ln.startswith("####")]
        found = re.findall(r"([0-9][0-9.+\-*/() ]*?)\s*=\s*\$?[0-9.]+", lines[-1] if lines else "")
        expr = found[-1].strip() if found else ""
        return _checked(Problem(q, gold, " ".join(ln.strip() for ln in lines), expr), grammar)
    raise ValueError(f"unknown family {family!r}")


def _checked(p: Problem, grammar: Grammar) -> Problem | None:
    value = grammar.value(p.expression) if p.expression else None
    if value is None or abs(float(value) - p.gold) > 1e-6 * max(1.0, abs(p.gold)):
        return None
    return p


def draw_problems(
    family: str, seed: int, n: int, exclude: set[str], grammar: Grammar
) -> list[Problem]:
    """``n`` problems of ``family`` drawn with reasoning-gym ``seed``, none of whose
    questions is in ``exclude``. Evaluation problems need no derivation (only the
    question and the gold answer)."""
    out: list[Problem] = []
    size = 2 * n + 8
    while True:
        items = _draw(family, seed, size)
        out = []
        for item in items:
            p = to_problem(family, item, grammar) or Problem(
                _question(family, item), _gold(item["answer"])
            )
            if p.question in exclude or any(p.question == o.question for o in out):
                continue
            out.append(p)
            if len(out) == n:
                return out
        if size > 50 * n + 100:
            raise ValueError(f"{family}: fewer than {n} distinct new problems with seed {seed}")
        size *= 2


def _gold(answer) -> float:
    try:
        return float(answer)
    except ValueError:
        return float("nan")


def _question(family: str, item: dict) -> str:
    if family == "leg_counting":
        q = item["question"].strip().split("\n")[-1].removeprefix("Now, ")
        return q[0].upper() + q[1:]
    if SOURCE.get(family, family) == "chain_sum":
        return f"What is {item['metadata']['expression']}?"
    if family == SYMBOLIC:
        return item["question"]
    return item["question"].strip().removesuffix(_GSM_TAIL).strip()


def exemplars(family: str, shots: int, grammar: Grammar) -> list[Problem]:
    """``shots`` problems with a verified derivation from the exemplar split: those with
    at least two reasoning steps first, then the shortest (question + reasoning)."""
    pool = [
        p for item in _draw(family, EXEMPLAR_SEED, 40) if (p := to_problem(family, item, grammar))
    ]
    pool = list({p.question: p for p in pool}.values())
    if len(pool) < shots:
        raise ValueError(f"{family}: only {len(pool)} exemplars with a verified derivation")

    # at least two reasoning steps (a one-step exemplar teaches little; a symbolic
    # exemplar's steps are its sentences), then the shortest; ties keep the draw order
    # (sorted() is stable)
    def key(p: Problem):
        steps = p.reasoning.count(". ") + 1 if family == SYMBOLIC else p.reasoning.count("=")
        return (-min(steps, 2), len(p.question) + len(p.reasoning))

    ranked = sorted(pool, key=key)
    if family == SYMBOLIC:  # one exemplar per template (its answer with the names blanked)
        ranked = list({re.sub(r"\b[a-z]\b", "v", p.expression): p for p in ranked[::-1]}.values())
        ranked = sorted(ranked, key=key)
    return ranked[:shots]


_GRAMMARS: dict[str, Grammar] = {}


def grammar_for(family: str) -> Grammar:
    """The answer grammar of a family: CRANE's symbolic grammar for ``symbolic``, the
    arithmetic one for the numeric families (one instance each: lark builds once)."""
    key = "symbolic" if family == SYMBOLIC else "arithmetic"
    if key not in _GRAMMARS:
        _GRAMMARS[key] = Grammar.symbolic() if family == SYMBOLIC else Grammar()
    return _GRAMMARS[key]


def shot(p: Problem, cot: bool) -> str:
    if cot:
        return f"Question: {p.question}\nAnswer: {p.reasoning} So the answer is <<{p.expression}>>.\n\n"
    return f"Question: {p.question}\nAnswer: <<{p.expression}>>.\n\n"


def prefix(shots: list[Problem], cot: bool) -> str:
    """The few-shot part every query of a family shares (it ends with a blank line)."""
    return HEADER + "".join(shot(p, cot) for p in shots)


def query(p: Problem, cot: bool) -> str:
    return f"Question: {p.question}\nAnswer:" + ("" if cot else " <<")


#: generation stops at the first closed span (the answer) or when a new question starts
STOP = (">>", "\nQuestion:")
