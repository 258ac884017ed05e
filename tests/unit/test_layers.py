"""The package's import graph, read off the sources: every import (at module level and
inside functions) between the project's parts, the parts as docs/evidence.md names them.
The graph of parts has no circle (graphlib's topological sort is the reference), the
evidence engine's judging half imports nothing else of the project, and the halves sit
on either side of the stages."""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "reprolab"


def part(module: str) -> str:
    """The part a module belongs to: a subpackage of ``evidence``, a method, a top folder
    (``core``, ``stages``, ``ops``, ``assets``) or a top module."""
    names = module.split(".")[1:]
    if not names:
        return "reprolab"
    if names[0] == "evidence" and len(names) > 1:
        return f"evidence.{names[1]}"
    if names[0] == "methods" and len(names) > 1:
        return "methods"
    return names[0]


def imports(path: Path, module: str) -> set[str]:
    """The reprolab modules a source file imports, relative imports resolved."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "reprolab"}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")[: -node.level]
                base = ".".join([*anchor, *([base] if base else [])])
            if base.split(".")[0] != "reprolab":
                continue
            out.add(base)
            for alias in node.names:  # `from reprolab.evidence import ledger`: a module
                sub = PACKAGE.parent.joinpath(*base.split("."), alias.name)
                if sub.with_suffix(".py").is_file() or (sub / "__init__.py").is_file():
                    out.add(f"{base}.{alias.name}")
    return out


def graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        module = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        src = part(module)
        targets = {part(m) for m in imports(path, module)} - {src, "reprolab", "evidence"}
        edges.setdefault(src, set()).update(targets)
    return edges


def test_the_part_graph_has_no_circle():
    edges = graph()
    assert {"evidence.judging", "evidence.running", "evidence.ledger", "stages"} <= set(edges)
    order = list(graphlib.TopologicalSorter(edges).static_order())  # raises on a circle
    rank = {p: i for i, p in enumerate(order)}
    for src, targets in edges.items():
        for dst in targets:
            assert rank[dst] < rank[src], f"{src} -> {dst} runs up"


def test_judging_imports_nothing_else_of_the_project():
    assert graph()["evidence.judging"] == set()


def test_the_halves_sit_either_side_of_the_stages():
    edges = graph()
    assert "evidence.judging" in edges["stages"] and "evidence.ledger" in edges["stages"]
    assert "stages" in edges["evidence.running"]
    for lower in ("stages", "core", "methods", "ops", "evidence.ledger", "evidence.judging"):
        assert "evidence.running" not in edges.get(lower, set()), lower


def test_a_circle_is_found():
    """The check above can fail: a made-up edge back from the judging half is a circle."""
    edges = graph()
    edges["evidence.judging"] = {"evidence.running"}
    with pytest.raises(graphlib.CycleError):
        list(graphlib.TopologicalSorter(edges).static_order())
