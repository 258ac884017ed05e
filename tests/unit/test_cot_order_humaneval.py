"""HumanEval through the sandbox: canonical solutions pass, wrong ones fail."""

from __future__ import annotations

from reprolab.methods.cot_order import humaneval


def test_all_problems_load():
    problems = humaneval.load()
    assert len(problems) == 164 and problems[0].task_id == "HumanEval/0"
    assert all(p.entry_point in p.prompt for p in problems)


def test_canonical_solutions_pass_and_wrong_ones_fail():
    problems = humaneval.load(12)
    assert humaneval.score(problems, [p.canonical_solution for p in problems]) == ["passed"] * 12
    wrong = humaneval.score(problems, ["    return None\n"] * 12)
    assert "passed" not in wrong
    broken = humaneval.score(problems[:1], ["    return (\n"])
    assert broken == ["syntax_error"]
