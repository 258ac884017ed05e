"""Backfill the preregistration ledger (docs/results/ledger/<slug>.jsonl) from git history.

    python scripts/backfill_ledger.py                 # every registered method
    python scripts/backfill_ledger.py bdia grokformer # some of them
    python scripts/backfill_ledger.py --until 2d17e1e # the history before the ledger

The committed ledger was backfilled ``--until 2d17e1e``, the last commit before the
ledger and the sequential engine existed; every change since is recorded by
``make paper`` with ``AMEND="why"`` (a reason per change, not a commit subject).

Per method, in the history reachable from HEAD:

1. the *first results commit* ``F``: the first commit that added a file of the method
   under ``docs/results/`` (``docs/results/<slug>/...`` or the older flat
   ``docs/results/<slug>_*``);
2. the method's state at ``F`` and at every later commit that can change it (one that
   touches the method's ``__init__.py`` / ``claims.py`` / ``config.py``, ``params.yaml``,
   or a reprolab module that importing the method's spec and computing its config loads):
   its claim definitions (the keys of ``Claim.definition()``; what older code lacked is
   null, its ``paper_effect`` is the ``effect``) and its paper-profile config
   (``ledger.paper_config`` where the commit has it; else the same from the commit's
   ``config.validate``: ``{"seeds": paper seeds, "method":
   config_model(**{**profile_defaults["paper"], **params.yaml's methods.<slug>.paper})
   .model_dump(mode="json")}``, with the project's trainer / evidence sections where the
   code has them), read by importing the package of that commit, checked out in a temporary
   ``git worktree`` (one for all commits, under /tmp), in a subprocess;
3. the ledger: at ``F`` a ``config`` entry and a ``registered`` entry per claim; after it,
   an ``amended`` entry per claim whose definition, config or decision rules changed,
   with ``changed`` (old / new values; the config as flattened keys, as ``ledger._diff``
   gives them; ``rules`` as the old and new commit) and ``reason`` (the commit's subject,
   and a sentence of the method's README that explains the change where one does);
   ``registered`` for a claim that first appears later, ``removed`` for one that goes.

"Later" means the commits that descend from ``F`` (``git rev-list --ancestry-path``):
those are the states the project had after the results. A non-merge commit's change is
the difference between its parent's state and its own. Merge commits are skipped, except
where one parent does not descend from ``F``: then the merge brings in changes made on
that side before the method's line of history had them (e.g. core rules changed on
``main`` while the method's first results were made on a branch); those are recorded at
the merge, with the commits that made them under ``via``. A change that two branches
made to one field is applied to the ledger's value (a check that the other branch wrapped
keeps its wrapper); a merge of two recorded branches is compared with the ledger's state
and recorded only where it differs.

Decision rules are the code that turns a claim's check into a verdict: the check's
class (and nested checks), and the module-level functions and classes of
``core/claims.py`` / ``core/stats.py`` (or the method's ``claims.py``) that they and
``Claim.evaluate`` call (the evidence rules), compared as ASTs without docstrings and
f-string texts, specialised to the claim's check: its own field values fill
``self.<field>`` (a branch for ``deterministic=True`` is not code a check with
``deterministic=False`` runs) and the evidence rules' tests of ``measured["test"]`` are
decided by the values the check reports. A change there leaves the check's repr as it
is; it is recorded per claim whose check runs the changed code as ``changed: {"rules":
{"old": sha, "new": sha}}`` (old: the commit whose rules the claim was last recorded
under). A refactoring that keeps the behaviour still counts (the comparison is of code).

Every entry carries ``"backfilled": true``, the commit and its author date. The ledger
files of the given methods are rewritten from scratch (idempotent).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import hashlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
METHODS_DIR = "src/reprolab/methods"
RESULTS_DIR = "docs/results"
#: files every method's state may depend on (the loaded reprolab modules are added)
SHARED_FILES = (
    "params.yaml",
    "src/reprolab/contract.py",
    "src/reprolab/registry.py",
    "src/reprolab/core/claims.py",
    "src/reprolab/core/stats.py",
)
#: the keys of Claim.definition() (src/reprolab/core/claims.py): older code's claims get
#: the same keys, null where the code had no such field
DEFINITION_KEYS = (
    "statement",
    "metric",
    "check",
    "paper_value",
    "source",
    "effect",
    "effect_basis",
    "central",
    "precision",
    "out_of_reach",
)
CLAIM_EVALUATE = "Claim.evaluate"  # a root whose callees (not its own body) count
VIA = "__via__"  # how the extraction computed a paper config


# --------------------------------------------------------------------------------------
# extraction: runs in a subprocess with PYTHONPATH=<worktree>/src, cwd=<worktree>
# --------------------------------------------------------------------------------------


def _jsonable(obj: Any) -> Any:
    return json.loads(json.dumps(obj, default=str))


def _repr(obj: Any) -> str:
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(obj))


def _definition(claim: Any) -> dict[str, Any]:
    """The claim's definition with the keys the current code uses (null where the
    commit's code has no such field; its ``paper_effect`` is the effect)."""
    if callable(getattr(claim, "definition", None)):
        return _jsonable(claim.definition())
    effect = getattr(claim, "effect", None)
    if effect is None:
        effect = getattr(claim, "paper_effect", None)
    oor = getattr(claim, "out_of_reach", None)
    if oor is not None:
        oor = {
            "reason": getattr(oor, "reason", None),
            "would_test": getattr(oor, "would_test", None),
        }
    out = {key: getattr(claim, key, None) for key in DEFINITION_KEYS}
    out.update(check=_repr(getattr(claim, "check", None)), effect=effect, out_of_reach=oor)
    return _jsonable(out)


def _check_classes(obj: Any, root: Path, out: list[list], depth: int = 0) -> None:
    """[file, class name, scalar field values] of a check and of the checks in it."""
    if depth > 6 or obj is None or isinstance(obj, type):
        return
    if isinstance(obj, list | tuple):
        for item in obj:
            _check_classes(item, root, out, depth + 1)
        return
    if not callable(getattr(obj, "evaluate", None)):
        return
    cls = type(obj)
    try:
        path = Path(inspect.getsourcefile(cls) or "").resolve().relative_to(root)
    except (TypeError, ValueError):
        return
    if dataclasses.is_dataclass(obj):
        attrs = {f.name: getattr(obj, f.name, None) for f in dataclasses.fields(obj)}
    else:
        attrs = dict(getattr(obj, "__dict__", {}))
    scalars = {
        k: v for k, v in attrs.items() if v is None or isinstance(v, bool | int | float | str)
    }
    item = [path.as_posix(), cls.__qualname__, scalars]
    if item not in out:
        out.append(item)
    values = list(attrs.values())
    for v in values:
        _check_classes(v, root, out, depth + 1)


def _as_recorded(cfg: Any, seeds: list[int]) -> dict[str, Any]:
    """``{"seeds", "method"}`` as ``ledger.paper_config`` records it: with an evidence
    plan, the seeds of its first look and the plan without the seeds rounds added."""
    dump = cfg.model_dump(mode="json") if hasattr(cfg, "model_dump") else cfg.dict()
    evidence = getattr(cfg, "evidence", None)
    if evidence is not None and isinstance(dump.get("evidence"), dict):
        dump["evidence"] = {k: v for k, v in dump["evidence"].items() if k != "added"}
        if hasattr(evidence, "base_seeds"):
            seeds = evidence.base_seeds(seeds)
    return _jsonable({"seeds": list(seeds), "method": dump})


def _paper_config(raw: dict, slug: str, spec: Any) -> dict[str, Any]:
    """The method's paper-profile config at this commit: ``ledger.paper_config`` where
    the commit has it; else the same from its ``config.validate`` (code defaults, the
    profile defaults, params.yaml's paper section, the project's trainer / evidence
    sections); else, where the project's params do not validate, by hand:
    ``config_model(**{**profile_defaults["paper"], **methods.<slug>.paper})``."""
    if Path("src/reprolab/ledger.py").is_file():
        from reprolab import ledger  # noqa: PLC0415

        if hasattr(ledger, "paper_config"):
            try:
                return {**_jsonable(ledger.paper_config(raw, slug)), VIA: "ledger"}
            except Exception:  # an intermediate commit: computed as for older code
                pass
    try:
        from reprolab import config  # noqa: PLC0415

        project = config.validate({**raw, "profile": "paper"})
        return {**_as_recorded(project.method(slug), list(project.seeds)), VIA: "validate"}
    except Exception:
        pass
    section = ((raw.get("methods") or {}).get(slug) or {}).get("paper") or {}
    overrides = dict(section)
    trainer = ((raw.get("trainer") or {}).get("paper")) or {}
    fields = getattr(spec.config_model, "model_fields", {}) or {}
    if trainer and "trainer" in fields:
        overrides["trainer"] = {**trainer, **(overrides.get("trainer") or {})}
    defaults = (getattr(spec, "profile_defaults", None) or {}).get("paper", {}) or {}
    cfg = spec.config_model(**{**defaults, **overrides})
    return {**_as_recorded(cfg, (raw.get("seeds") or {}).get("paper") or []), VIA: "by hand"}


def extract(slugs: list[str]) -> dict[str, Any]:
    """Every method's claims and paper config at the checked-out commit (cwd)."""
    import yaml  # noqa: PLC0415

    root = Path.cwd().resolve()
    # an editable install of the project would serve modules the commit lacks from the
    # main checkout: only the worktree's sources count
    sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in repr(f)]
    sys.path_hooks[:] = [h for h in sys.path_hooks if "__editable__" not in repr(h)]
    sys.path_importer_cache.clear()
    import reprolab  # noqa: PLC0415

    where = Path(reprolab.__file__).resolve()
    if root not in where.parents:
        raise SystemExit(f"reprolab imported from {where}, not from the worktree {root}")
    from reprolab import registry  # noqa: PLC0415

    raw = yaml.safe_load((root / "params.yaml").read_text()) or {}
    available = sorted(
        p.name
        for p in (root / METHODS_DIR).iterdir()
        if p.is_dir() and (p / "__init__.py").is_file() and not p.name.startswith("_")
    )
    out: dict[str, Any] = {}
    for slug in slugs:
        if slug not in available:
            out[slug] = {"ok": False, "error": "absent"}
            continue
        try:
            spec = registry.get(slug)
            claims = []
            for claim in getattr(spec, "claims", ()):
                roots: list[list] = []
                _check_classes(getattr(claim, "check", None), root, roots)
                try:
                    path = Path(inspect.getsourcefile(type(claim)) or "").resolve()
                    roots.append([path.relative_to(root).as_posix(), CLAIM_EVALUATE, {}])
                except (TypeError, ValueError):
                    pass
                claims.append({"id": claim.id, "definition": _definition(claim), "roots": roots})
            ids = [c["id"] for c in claims]
            if len(ids) != len(set(ids)):
                raise ValueError(f"claim ids repeat: {ids}")
            config = _paper_config(raw, slug, spec)
            via = config.pop(VIA)
            out[slug] = {"ok": True, "claims": claims, "config": config, "config_via": via}
        except Exception as exc:  # an old commit may not import: recorded, not fatal
            out[slug] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    modules = {}
    for name, mod in list(sys.modules.items()):
        if name == "reprolab" or name.startswith("reprolab."):
            file = getattr(mod, "__file__", None)
            if file:
                try:
                    modules[name] = Path(file).resolve().relative_to(root).as_posix()
                except ValueError:
                    raise SystemExit(f"{name} imported from {file}, outside the worktree") from None
    return {"methods": out, "modules": modules}


# --------------------------------------------------------------------------------------
# git helpers
# --------------------------------------------------------------------------------------


def git(*args: str, cwd: Path = ROOT, check: bool = True) -> str:
    res = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=False, encoding="utf-8"
    )
    if check and res.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {res.stderr.strip()}")
    return res.stdout


@dataclasses.dataclass
class Commit:
    sha: str
    parents: list[str]
    date: str  # author date, ISO 8601
    subject: str

    @property
    def short(self) -> str:
        return self.sha[:7]

    @property
    def merge(self) -> bool:
        return len(self.parents) > 1


class History:
    """The commits reachable from HEAD, parents before children (date order)."""

    def __init__(self, head: str) -> None:
        self.head = head
        out = git("log", "--reverse", "--date-order", "--format=%H%x1f%P%x1f%aI%x1f%s", head)
        self.commits: dict[str, Commit] = {}
        self.order: dict[str, int] = {}
        for i, line in enumerate(out.splitlines()):
            sha, parents, date, subject = line.split("\x1f", 3)
            self.commits[sha] = Commit(sha, parents.split(), date, subject)
            self.order[sha] = i
        self._files: dict[tuple[str, str], str | None] = {}
        self._trees: dict[str, set[str]] = {}
        self._touch: dict[str, set[str]] = {}
        self._ancestors: dict[str, set[str]] = {}

    def descendants(self, sha: str) -> set[str]:
        """Commits reachable from HEAD that descend from ``sha`` (``sha`` included)."""
        out = git("rev-list", "--ancestry-path", f"{sha}..{self.head}")
        return {sha, *out.split()}

    def ancestors(self, sha: str) -> set[str]:
        if sha not in self._ancestors:
            self._ancestors[sha] = set(git("rev-list", sha).split())
        return self._ancestors[sha]

    def touched(self, sha: str) -> set[str]:
        """Files a non-merge commit changed against its parent."""
        if sha not in self._touch:
            c = self.commits[sha]
            if c.parents:
                out = git("diff", "--name-only", c.parents[0], sha)
            else:
                out = git("ls-tree", "-r", "--name-only", sha)
            self._touch[sha] = set(out.split("\n")) - {""}
        return self._touch[sha]

    def changed_between(self, a: str, b: str) -> set[str]:
        return set(git("diff", "--name-only", a, b).split("\n")) - {""}

    def show(self, sha: str, path: str) -> str | None:
        key = (sha, path)
        if key not in self._files:
            if path not in self.tree(sha):
                self._files[key] = None
            else:
                self._files[key] = git("show", f"{sha}:{path}")
        return self._files[key]

    def tree(self, sha: str) -> set[str]:
        if sha not in self._trees:
            out = git("ls-tree", "-r", "--name-only", sha, "--", "src", "params.yaml")
            self._trees[sha] = set(out.split("\n")) - {""}
        return self._trees[sha]


# --------------------------------------------------------------------------------------
# decision-rule fingerprints (from the sources of a commit, no checkout needed)
# --------------------------------------------------------------------------------------


_NO_TAG = object()  # a check whose measured values carry no "test" key


def _const(node: ast.AST) -> tuple[bool, Any]:
    if isinstance(node, ast.Constant):
        return True, node.value
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        items = [_const(e) for e in node.elts]
        if all(ok for ok, _ in items):
            return True, tuple(v for _, v in items)
    return False, None


def _is_test_lookup(node: ast.AST) -> bool:
    """``<measured>.get("test")`` or ``<measured>["test"]``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return (
            node.func.attr == "get"
            and len(node.args) == 1
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == "test"
        )
    return (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and node.slice.value == "test"
    )


class _Normalise(ast.NodeTransformer):
    """The decision code as it runs for one check: docstrings out, f-strings (messages
    and summaries) as one placeholder, dataclass field declarations out (their values
    are in the check's repr), ``self.<field>`` replaced by the check's own value, the
    ``measured.get("test")`` comparisons of the evidence rules decided by the values the
    check reports (``tags``), and branches on a constant dropped."""

    def __init__(self, fields: dict[str, Any] | None = None, tags: set | None = None) -> None:
        self.fields = fields or {}
        self.tags = tags

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        return ast.copy_location(ast.Constant("<f-string>"), node)

    def _strip(self, node: Any) -> Any:
        body = getattr(node, "body", None)
        if (
            body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        self._strip(node)
        return self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        self._strip(node)
        node.body = [s for s in node.body if not (isinstance(s, ast.AnnAssign) and s.simple)]
        node.body = node.body or [ast.Pass()]
        return self.generic_visit(node)

    @staticmethod
    def _block(body: list, required: bool) -> list:
        """A block with its ``if``s on a constant replaced by the branch taken."""
        out: list = []
        for stmt in body:
            if isinstance(stmt, ast.If):
                ok, value = _const(stmt.test)
                if ok:
                    out.extend(stmt.body if value else stmt.orelse)
                    continue
            out.append(stmt)
        return out or ([ast.Pass()] if required else [])

    def generic_visit(self, node: ast.AST) -> ast.AST:
        super().generic_visit(node)
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                setattr(node, name, self._block(block, required=name == "body"))
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if (
            isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and isinstance(node.ctx, ast.Load)
            and node.attr in self.fields
        ):
            return ast.copy_location(ast.Constant(self.fields[node.attr]), node)
        return self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        if self.tags is None or len(node.ops) != 1 or not _is_test_lookup(node.left):
            return node
        ok, right = _const(node.comparators[0])
        if not ok:
            return node
        results = set()
        for tag in self.tags:
            value = None if tag is _NO_TAG else tag
            op = node.ops[0]
            if isinstance(op, ast.Eq):
                results.add(value == right)
            elif isinstance(op, ast.NotEq):
                results.add(value != right)
            elif isinstance(op, ast.In):
                results.add(value in right)
            elif isinstance(op, ast.NotIn):
                results.add(value not in right)
            else:
                return node
        if len(results) == 1:
            return ast.copy_location(ast.Constant(results.pop()), node)
        return node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        is_or = isinstance(node.op, ast.Or)
        values = []
        for v in node.values:
            ok, c = _const(v)
            if ok and bool(c) == is_or:  # a True in an `or`, a False in an `and`
                return ast.copy_location(ast.Constant(bool(c)), node)
            if not ok:
                values.append(v)
        if not values:
            return ast.copy_location(ast.Constant(not is_or), node)
        if len(values) == 1:
            return values[0]
        node.values = values
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        ok, c = _const(node.operand)
        if ok and isinstance(node.op, ast.Not):
            return ast.copy_location(ast.Constant(not c), node)
        return node

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        self.generic_visit(node)
        ok, c = _const(node.test)
        if ok:
            return node.body if c else node.orelse
        return node


def _tags(nodes: Iterable[ast.AST]) -> set:
    """The values a check reports under "test" (``_NO_TAG`` when it sets none); None
    when one of them is not a constant (then the comparisons stay as they are)."""
    tags: set = set()
    for node in nodes:
        for sub in ast.walk(node):
            value = None
            if isinstance(sub, ast.Dict):
                for k, v in zip(sub.keys, sub.values, strict=True):
                    if isinstance(k, ast.Constant) and k.value == "test":
                        value = v
            elif isinstance(sub, ast.Assign):
                for t in sub.targets:
                    if _is_test_lookup(t):
                        value = sub.value
            elif isinstance(sub, ast.keyword) and sub.arg == "test":
                value = sub.value
            if value is not None:
                ok, c = _const(value)
                if not ok or not isinstance(c, str):
                    return None
                tags.add(c)
    return tags or {_NO_TAG}


@dataclasses.dataclass
class ModuleIndex:
    defs: dict[str, ast.AST]
    imports: dict[str, tuple[str, str | None]]  # local name -> (module, attribute)


class Rules:
    """Fingerprints of the code that decides a claim's verdict, per commit.

    A claim's roots are its check classes (with the check's field values) and
    ``Claim.evaluate``; the code is each root's definition and every module-level
    function, class or constant it reaches (in its own module, or imported from
    another reprolab module), specialised to the check (:class:`_Normalise`).
    ``Claim.evaluate`` counts by what it calls (the evidence rules), not its body."""

    def __init__(self, history: History) -> None:
        self.h = history
        self._index: dict[tuple[str, str], ModuleIndex | None] = {}
        self._fp: dict[tuple[str, str], tuple[str, bool]] = {}

    def _module_file(self, sha: str, module: str) -> str | None:
        base = "src/" + module.replace(".", "/")
        for cand in (base + ".py", base + "/__init__.py"):
            if cand in self.h.tree(sha):
                return cand
        return None

    def index(self, sha: str, path: str) -> ModuleIndex | None:
        key = (sha, path)
        if key not in self._index:
            text = self.h.show(sha, path)
            tree = None
            if text is not None:
                try:
                    tree = ast.parse(text)
                except SyntaxError:
                    tree = None
            if tree is None:
                self._index[key] = None
                return None
            defs: dict[str, ast.AST] = {}
            imports: dict[str, tuple[str, str | None]] = {}
            for stmt in tree.body:
                if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    defs[stmt.name] = stmt
                elif isinstance(stmt, ast.Assign):
                    for t in stmt.targets:
                        if isinstance(t, ast.Name):
                            defs[t.id] = stmt
                elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    defs[stmt.target.id] = stmt
                elif isinstance(stmt, ast.ImportFrom) and (stmt.module or "").startswith(
                    "reprolab"
                ):
                    for a in stmt.names:
                        imports[a.asname or a.name] = (stmt.module or "", a.name)
                elif isinstance(stmt, ast.Import):
                    for a in stmt.names:
                        if a.name.startswith("reprolab") and a.asname:
                            imports[a.asname] = (a.name, None)
            self._index[key] = ModuleIndex(defs, imports)
        return self._index[key]

    def _alias_module(self, sha: str, idx: ModuleIndex, name: str) -> str | None:
        if name not in idx.imports:
            return None
        module, attr = idx.imports[name]
        return self._module_file(sha, module if attr is None else f"{module}.{attr}")

    def _target(self, sha: str, path: str, idx: ModuleIndex, name: str) -> tuple | None:
        """(file, name) a module-level name of ``path`` stands for, if reprolab code."""
        if name in idx.defs:
            return (path, name)
        if name in idx.imports:
            module, attr = idx.imports[name]
            if attr is None or self._module_file(sha, f"{module}.{attr}"):
                return None  # a module alias
            file = self._module_file(sha, module)
            if file:
                return (file, attr)
        return None

    def _refs(
        self, sha: str, path: str, idx: ModuleIndex, node: ast.AST, owner: str | None
    ) -> Iterable:
        """What ``node`` uses: module-level names (a class by its methods where it
        names one: ``Verdict.interval``), ``self.<method>`` / ``cls.<method>`` of its
        class ``owner``, and attributes of imported reprolab modules."""
        as_value: set[int] = set()
        for sub in ast.walk(node):
            if not (isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name)):
                continue
            base = sub.value.id
            module_file = self._alias_module(sha, idx, base)
            if module_file:
                as_value.add(id(sub.value))
                yield (module_file, sub.attr)
            elif owner and base in ("self", "cls"):
                yield (path, f"{owner}.{sub.attr}")
            else:
                target = self._target(sha, path, idx, base)
                target_idx = self.index(sha, target[0]) if target else None
                if target_idx and isinstance(target_idx.defs.get(target[1]), ast.ClassDef):
                    as_value.add(id(sub.value))
                    yield (target[0], f"{target[1]}.{sub.attr}")
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and id(sub) not in as_value:
                target = self._target(sha, path, idx, sub.id)
                if target:
                    yield target

    @staticmethod
    def _member(cls: ast.AST, name: str | None) -> ast.AST | None:
        """A method of a class; without one (or a class attribute), the class without
        its ordinary methods (its bases, decorators, fields, dunder methods)."""
        if not isinstance(cls, ast.ClassDef):
            return cls if name is None else None
        body = cls.body
        if name is not None:
            for stmt in body:
                if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name == name:
                    return stmt
        skeleton = ast.parse(ast.unparse(cls)).body[0]
        skeleton.body = [
            stmt
            for stmt in skeleton.body
            if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef)
            or (stmt.name.startswith("__") and stmt.name.endswith("__"))
        ] or [ast.Pass()]
        return skeleton

    def _closure(
        self,
        sha: str,
        roots: list[tuple[str, str, dict]],
        tags: set | None,
        parts: dict[tuple, str],
        nodes: list[ast.AST],
    ) -> bool:
        """Add the normalised code reachable from ``roots`` to ``parts``; whether every
        root exists at ``sha``. A root check class counts whole; a class reached from
        it counts by the methods used (``Verdict.interval``) and its skeleton."""
        complete = True
        stack = [(path, name, fields, True, True) for path, name, fields in roots]
        while stack:
            path, name, fields, is_root, whole = stack.pop()
            key = (path, name, canonical_fields(fields), tags is not None, whole)
            if key in parts:
                continue
            idx = self.index(sha, path)
            callees_only = name == CLAIM_EVALUATE
            head, _, member = name.partition(".")
            node = None
            owner = None
            if idx is not None and head in idx.defs:
                if whole and not callees_only:
                    node = idx.defs[head]  # the check class (or a base of it), whole
                else:
                    node = self._member(idx.defs[head], member or None)
                    if not callees_only and isinstance(
                        node, ast.FunctionDef | ast.AsyncFunctionDef
                    ):
                        owner = head  # (Claim.evaluate counts by its module-level callees)
            if node is None:
                parts[key] = "MISSING"
                if is_root and not callees_only:
                    complete = False
                continue
            norm = _Normalise(fields, tags).visit(ast.parse(ast.unparse(node)).body[0])
            parts[key] = "" if callees_only else ast.dump(norm)
            nodes.append(norm)
            for ref in self._refs(sha, path, idx, norm, owner):
                stack.append((*ref, {}, False, False))
            if whole and isinstance(node, ast.ClassDef):  # what the check inherits
                for base in node.bases:
                    if isinstance(base, ast.Name):
                        target = self._target(sha, path, idx, base.id)
                        if target:
                            stack.append((*target, fields, False, True))
        return complete

    def fingerprint(self, sha: str, roots: list) -> tuple[str, bool]:
        """(hash of the decision code of a claim at ``sha``, whether every check class
        of the claim exists there). ``roots``: [file, qualname, fields] per check
        class, and [file, "Claim.evaluate", {}]."""
        roots_t = [(r[0], r[1], r[2] if len(r) > 2 else {}) for r in roots]
        key = (sha, json.dumps(sorted(map(list, roots_t)), sort_keys=True, default=str))
        if key in self._fp:
            return self._fp[key]
        parts: dict[tuple, str] = {}
        nodes: list[ast.AST] = []
        checks = [r for r in roots_t if r[1] != CLAIM_EVALUATE]
        complete = self._closure(sha, checks, None, parts, nodes)
        tags = _tags(nodes)
        self._closure(sha, [r for r in roots_t if r[1] == CLAIM_EVALUATE], tags, parts, [])
        text = json.dumps(sorted([list(k), v] for k, v in parts.items()), default=str)
        self._fp[key] = (hashlib.sha256(text.encode()).hexdigest(), complete)
        return self._fp[key]


def canonical_fields(fields: dict) -> str:
    return json.dumps(fields, sort_keys=True, default=str)


# --------------------------------------------------------------------------------------
# extraction driver: one worktree, one checkout per commit, one subprocess per commit
# --------------------------------------------------------------------------------------


class Extractor:
    def __init__(self, slugs: list[str], verbose: bool = False) -> None:
        self.slugs = slugs
        self.states: dict[str, dict[str, Any]] = {}
        self.verbose = verbose
        self.tmp = Path(tempfile.mkdtemp(prefix="reprolab-backfill-"))
        self.wt = self.tmp / "wt"
        self._added = False

    def __enter__(self) -> Extractor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        if self._added:
            git("worktree", "remove", "--force", str(self.wt), check=False)
            git("worktree", "prune", check=False)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def get(self, shas: Iterable[str], order: dict[str, int]) -> None:
        todo = sorted(set(shas) - set(self.states), key=order.__getitem__)
        for i, sha in enumerate(todo, 1):
            start = time.perf_counter()
            if not self._added:
                git("worktree", "add", "--detach", "--quiet", str(self.wt), sha)
                self._added = True
            else:
                git("checkout", "--detach", "--force", "--quiet", sha, cwd=self.wt)
            env = {
                **os.environ,
                "PYTHONPATH": str(self.wt / "src"),
                "PYTHONDONTWRITEBYTECODE": "1",
                "REPROLAB_THREADS": "1",
            }
            res = subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), "--extract", *self.slugs],
                cwd=self.wt,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            if res.returncode != 0:
                raise RuntimeError(f"extraction at {sha[:7]} failed:\n{res.stderr[-3000:]}")
            self.states[sha] = json.loads(res.stdout)
            if self.verbose:
                took = time.perf_counter() - start
                print(f"  [{i}/{len(todo)}] {sha[:7]} {took:.1f}s", file=sys.stderr)


# --------------------------------------------------------------------------------------
# the ledger of one method
# --------------------------------------------------------------------------------------


def first_results(history: History, slugs: list[str]) -> dict[str, tuple[str, list[str]]]:
    """Per slug, the first commit (reachable from HEAD) that added a results file of the
    method under docs/results/, and the files it added."""
    out = git(
        "log",
        "--reverse",
        "--date-order",
        "--diff-filter=A",
        "--full-history",
        "--name-only",
        "--format=%x1e%H",
        history.head,
        "--",
        RESULTS_DIR,
    )
    by_length = sorted(slugs, key=len, reverse=True)
    found: dict[str, tuple[str, list[str]]] = {}
    for block in out.split("\x1e")[1:]:
        lines = [x for x in block.strip().splitlines() if x.strip()]
        sha, files = lines[0], lines[1:]
        for f in files:
            rel = f[len(RESULTS_DIR) + 1 :] if f.startswith(RESULTS_DIR + "/") else f
            head = rel.split("/", 1)[0]
            slug = None
            if "/" in rel and head in slugs:
                slug = head
            elif "/" not in rel:
                slug = next((s for s in by_length if rel.startswith(s + "_")), None)
            if slug and slug not in found:
                found[slug] = (sha, [])
            if slug and found[slug][0] == sha:
                found[slug][1].append(f)
    return found


def _flatten(obj: Any, prefix: tuple = ()) -> dict[tuple, Any]:
    if isinstance(obj, dict) and obj:
        out: dict[tuple, Any] = {}
        for k, v in obj.items():
            out.update(_flatten(v, (*prefix, k)))
        return out
    return {prefix: obj}


_ABSENT = object()


def _config_delta(old: dict, new: dict) -> dict[tuple, Any]:
    """Leaf paths whose value differs (value _ABSENT: the path is gone)."""
    a, b = _flatten(old), _flatten(new)
    return {k: b.get(k, _ABSENT) for k in set(a) | set(b) if a.get(k, _ABSENT) != b.get(k, _ABSENT)}


def _apply_delta(cfg: dict, delta: dict[tuple, Any]) -> dict:
    flat = _flatten(json.loads(json.dumps(cfg)))
    for path in list(flat):  # a leaf that becomes a mapping (or the reverse) goes first
        for d in delta:
            if path != d and (path[: len(d)] == d or d[: len(path)] == path):
                flat.pop(path, None)
    for path, value in delta.items():
        if value is _ABSENT:
            flat.pop(path, None)
        else:
            flat[path] = value
    out: dict = {}
    for path, value in sorted(flat.items(), key=lambda kv: len(kv[0])):
        if not path:
            return value if isinstance(value, dict) else {}
        node = out
        for k in path[:-1]:
            node = node.setdefault(k, {})
        node[path[-1]] = value
    return out


def _config_changes(old: dict | None, new: dict) -> tuple[dict, dict]:
    """The flattened keys that differ, as ``ledger._diff`` gives them, and the keys that
    appear or go with a null value (which ``ledger._diff`` cannot tell from absent; they
    change the config's hash all the same): null on both sides."""
    from reprolab import ledger  # noqa: PLC0415

    a, b = ledger._diff(old, new)
    for path in set(_flatten(old or {})) ^ set(_flatten(new or {})):
        name = ".".join(map(str, path))
        if name not in a and not any(name.startswith(k + ".") for k in a):
            a[name] = _flatten(old or {}).get(path)
            b[name] = _flatten(new or {}).get(path)
    return dict(sorted(a.items())), dict(sorted(b.items()))


_CHANGE_WORDS = re.compile(
    r"\b(instead|not the [\d,.]+|earlier|first (?:run|setting|paper run|sizing run)|reduced|"
    r"changed|now decided|before the|after the|was then|from the time)\b",
    re.IGNORECASE,
)


#: words too common to tie a README sentence to a commit's subject
_COMMON = frozenset(
    re.findall(
        r"\w+",
        "every with that from this only more than when each their also into over under after "
        "before which where same does have they them then were been",
    )
)


def _sentences(text: str) -> list[str]:
    """The README's sentences: paragraphs, list items, table rows and headings apart,
    then split after a full stop."""
    blocks = re.split(r"\n\s*\n|\n(?=\s*(?:[-*#|>]|\d+\.)\s)", text)
    out = []
    for block in blocks:
        block = re.sub(r"\s*\n\s*", " ", block).strip()
        for part in re.split(r"(?<=[.;!?])\s+(?=[A-Z`*(])|\s\|\s", block):
            part = part.strip(" |-*#>")
            if 20 <= len(part) <= 700:
                out.append(part)
    return out


def _value_tokens(v: Any) -> set[str]:
    if isinstance(v, bool) or v is None:
        return set()
    if isinstance(v, int):
        toks = {str(v)}
        if abs(v) >= 1000:
            toks.add(f"{v:,}")
        return toks
    if isinstance(v, float):
        return {f"{v:g}", str(v)}
    if isinstance(v, str) and 2 <= len(v) <= 40:
        return {v}
    return set()


def _readme_sentence(
    readme: str, claim: str | None, changed: dict[str, dict[str, Any]], subject: str
) -> str:
    """The sentence of the README that explains a change, if one does: it names an old
    and a new value of a changed key, or (for a decision-rule change) the claim, with
    words that say something changed."""
    if not readme:
        return ""
    pairs = []
    for field, ch in changed.items():
        if field == "config":
            for k, old in ch["old"].items():
                pairs.append((k, old, ch["new"].get(k)))
        elif field == "check" and isinstance(ch["new"], str):
            # the arguments the new check has that the old one had not (deterministic=True)
            kv = re.compile(r"(\w+)=('[^']*'|[\w.+-]+)")
            gained = set(kv.findall(ch["new"])) - set(kv.findall(ch["old"] or ""))
            pairs += [(k, None, f"{k}={v}") for k, v in gained]
        elif field != "rules":
            pairs.append((field, ch["old"], ch["new"]))
    best, best_score = "", 0
    words = re.findall(r"[a-z][a-z-]+", subject.lower())
    subject_bigrams = {
        f"{a} {b}"
        for a, b in zip(words, words[1:], strict=False)
        if min(len(a), len(b)) >= 4 and not {a, b} & _COMMON
    }
    for s in _sentences(readme):
        score = 0
        low = s.lower()
        for key, old, new in pairs:
            olds, news = _value_tokens(old), _value_tokens(new)
            has_old = any(re.search(rf"(?<![\w.,]){re.escape(t)}(?![\w]|,\d)", s) for t in olds)
            has_new = any(re.search(rf"(?<![\w.,]){re.escape(t)}(?![\w]|,\d)", s) for t in news)
            name = key.rsplit(".", 1)[-1].replace("_", " ")
            if has_old and has_new or (old is None and "=" in str(new) and has_new):
                score += 3
            elif has_new and name in low:
                score += 1
        if "rules" in changed and claim and re.search(rf"(?<![\w-]){re.escape(claim)}(?![\w-])", s):
            # the README names the claim and a phrase of the commit's subject
            phrases = sum(b in low for b in subject_bigrams)
            score += 1 + 2 * phrases if phrases else 0
        if score and _CHANGE_WORDS.search(s):
            score += 2
        else:
            score = 0
        if score > best_score:
            best, best_score = s, score
    return best if best_score >= 3 else ""


@dataclasses.dataclass
class Event:
    commit: Commit
    kind: str  # "commit"; "merge": brings in changes; "join": both sides recorded
    base: str  # the sha whose state this one is compared with
    via: list[Commit] = dataclasses.field(default_factory=list)


class MethodLedger:
    def __init__(self, slug: str, history: History, rules: Rules, readme: str) -> None:
        self.slug = slug
        self.h = history
        self.rules = rules
        self.readme = readme
        self.entries: list[dict[str, Any]] = []
        self.config: dict | None = None
        self.claims: dict[str, dict[str, Any]] = {}  # id -> definition
        self.roots: dict[str, list] = {}
        self.rules_at: dict[str, str] = {}
        self.amendments: list[dict[str, Any]] = []  # summary rows
        self.notes: list[str] = []
        self.recorded: list[str] = []  # the commits whose states the ledger has taken

    def _stamp(self, c: Commit) -> dict[str, Any]:
        return {"commit": c.sha, "date": c.date, "backfilled": True}

    def _claim_entry(self, event: str, cid: str, c: Commit, cfg_hash: str) -> dict[str, Any]:
        from reprolab import ledger  # noqa: PLC0415

        definition = self.claims[cid]
        return {
            "event": event,
            "method": self.slug,
            "claim": cid,
            "hash": ledger.claim_hash(definition, cfg_hash),
            "definition": definition,
            "config_hash": cfg_hash,
            **self._stamp(c),
        }

    def register(self, c: Commit, state: dict[str, Any]) -> None:
        from reprolab import ledger  # noqa: PLC0415

        self.config = state["config"]
        cfg_hash = ledger.digest(self.config)
        self.entries.append(
            {
                "event": "config",
                "method": self.slug,
                "config_hash": cfg_hash,
                "config": self.config,
                **self._stamp(c),
            }
        )
        for claim in state["claims"]:
            self.claims[claim["id"]] = claim["definition"]
            self.roots[claim["id"]] = claim["roots"]
            self.rules_at[claim["id"]] = c.sha
            self.entries.append(self._claim_entry("registered", claim["id"], c, cfg_hash))

    def state(self) -> dict[str, Any]:
        """The ledger's latest state, in the form of an extracted one."""
        claims = [
            {"id": cid, "definition": d, "roots": self.roots.get(cid, [])}
            for cid, d in self.claims.items()
        ]
        return {"ok": True, "claims": claims, "config": self.config}

    def _reason(
        self, ev: Event, cid: str | None, changed: dict, via: list[Commit] | None = None
    ) -> str:
        c = ev.commit
        via = ev.via if via is None else via
        if ev.kind == "join":
            return (
                f"{c.subject} (the merge's definition is not what the two branches' recorded "
                "changes add up to)"
            )
        if ev.kind == "merge":
            subjects = "; ".join(f"{v.short} {v.subject}" for v in via) or "the other branch"
            reason = f"{c.subject} (brings in: {subjects})"
        else:
            reason = c.subject
        sentence = _readme_sentence(self.readme, cid, changed, reason)
        return f"{reason}. README: {sentence}" if sentence else reason

    def step(self, ev: Event, old: dict[str, Any], new: dict[str, Any]) -> None:
        """Record the changes between the states ``old`` (of ``ev.base``) and ``new``."""
        from reprolab import ledger  # noqa: PLC0415

        c = ev.commit
        extra = {"via": [v.sha for v in ev.via]} if ev.kind == "merge" else {}
        old_claims = {x["id"]: x for x in old["claims"]}
        new_claims = {x["id"]: x for x in new["claims"]}
        # the config: this commit's changes, applied to the ledger's config
        delta = _config_delta(old["config"], new["config"])
        if delta and ev.kind != "join" and old.get("config_via") != new.get("config_via"):
            self.notes.append(
                f"{c.short}: the config was computed {old.get('config_via')} before and "
                f"{new.get('config_via')} after; check that its change is not an artefact"
            )
        prev_config = self.config
        if delta:
            self.config = _apply_delta(self.config or {}, delta)
        cfg_hash = ledger.digest(self.config)
        config_changed = ledger.digest(prev_config) != cfg_hash
        cfg_old, cfg_new = _config_changes(prev_config, self.config) if config_changed else ({}, {})
        if config_changed:
            changed = {"config": {"old": cfg_old, "new": cfg_new}}
            self.entries.append(
                {
                    "event": "config",
                    "method": self.slug,
                    "config_hash": cfg_hash,
                    "config": self.config,
                    "reason": self._reason(ev, None, changed),
                    **self._stamp(c),
                    **extra,
                }
            )
        for cid in sorted(set(old_claims) - set(new_claims)):
            if cid in self.claims:
                reason = self._reason(ev, cid, {})
                self.entries.append(
                    {
                        "event": "removed",
                        "method": self.slug,
                        "claim": cid,
                        "hash": ledger.claim_hash(self.claims[cid], ledger.digest(prev_config)),
                        "definition": self.claims.pop(cid),
                        "reason": reason,
                        **self._stamp(c),
                        **extra,
                    }
                )
                self.amendments.append({"commit": c, "claim": cid, "fields": ["removed"]})
        for cid, claim in new_claims.items():
            if cid not in self.claims:
                self.claims[cid] = claim["definition"]
                self.roots[cid] = claim["roots"]
                self.rules_at[cid] = c.sha
                entry = self._claim_entry("registered", cid, c, cfg_hash)
                self.entries.append({**entry, **extra})
                self.amendments.append({"commit": c, "claim": cid, "fields": ["registered"]})
                continue
            changed: dict[str, dict[str, Any]] = {}
            before = old_claims.get(cid, {}).get("definition")
            definition = dict(self.claims[cid])
            for key, value in claim["definition"].items():
                base_value = None if before is None else before.get(key)
                if before is not None and base_value == value:
                    continue  # not this commit's change
                current = definition.get(key)
                if current == value:
                    continue
                if before is not None and current != base_value:
                    # another branch changed the field too: apply this commit's change
                    # to the ledger's value where it contains the old one (a check that
                    # the other branch wrapped), else the later change wins
                    strings = isinstance(current, str) and isinstance(base_value, str)
                    if strings and base_value and base_value in current:
                        value = current.replace(base_value, value, 1)
                    else:
                        self.notes.append(
                            f"{c.short}: {cid}.{key} changed on two branches; the later "
                            "change is recorded as it is (a merge reconciles them)"
                        )
                changed[key] = {"old": current, "new": value}
                definition[key] = value
            for key in set(definition) - set(claim["definition"]):
                changed[key] = {"old": definition.pop(key), "new": None}
            if config_changed:
                changed["config"] = {"old": cfg_old, "new": cfg_new}
            base_roots = old_claims.get(cid, {}).get("roots")
            if ev.kind != "join" and (base_roots is not None or ev.kind == "merge"):
                fp_old, complete = self.rules.fingerprint(ev.base, claim["roots"])
                fp_new, _ = self.rules.fingerprint(c.sha, claim["roots"])
                if complete and fp_old != fp_new:
                    changed["rules"] = {"old": self.rules_at[cid], "new": c.sha}
                    self.rules_at[cid] = c.sha
            self.roots[cid] = claim["roots"]
            self.claims[cid] = definition
            if changed:
                via = ev.via
                if ev.kind == "merge" and set(changed) == {"rules"}:
                    # the commits on the other side that changed this claim's rules
                    via = [
                        v
                        for v in ev.via
                        if v.parents
                        and self.rules.fingerprint(v.parents[0], claim["roots"])[0]
                        != self.rules.fingerprint(v.sha, claim["roots"])[0]
                    ] or ev.via
                entry = self._claim_entry("amended", cid, c, cfg_hash)
                entry["reason"] = self._reason(ev, cid, changed, via)
                entry["changed"] = changed
                if ev.kind == "merge":
                    entry["via"] = [v.sha for v in via]
                self.entries.append({**extra, **entry})
                self.amendments.append({"commit": c, "claim": cid, "fields": sorted(changed)})


def method_paths(slug: str, modules: dict[str, str]) -> set[str]:
    """The files a method's state depends on: its spec, claims and config, the shared
    files, and every module its import loaded (the method's own and the core's)."""
    paths = {f"{METHODS_DIR}/{slug}/{n}" for n in ("__init__.py", "claims.py", "config.py")}
    paths |= set(SHARED_FILES)
    prefix = f"reprolab.methods.{slug}"
    for name, file in modules.items():
        if name.startswith("reprolab.methods."):
            if name == prefix or name.startswith(prefix + "."):
                paths.add(file)
        else:
            paths.add(file)
    return paths


def plan_events(
    slug: str, history: History, first: str, paths: set[str]
) -> tuple[list[Event], set[str]]:
    """The commits after ``first`` that can change the method's state, and the commits
    whose states they are compared with."""
    inside = history.descendants(first)
    events: list[Event] = []
    for sha in sorted(inside - {first}, key=history.order.__getitem__):
        c = history.commits[sha]
        if not c.merge:
            if history.touched(sha) & paths:
                events.append(Event(c, "commit", c.parents[0]))
            continue
        base = [p for p in c.parents if p in inside]
        outside = [p for p in c.parents if p not in inside]
        if not outside:
            # both sides descend from the results and their commits are recorded; the
            # merge is looked at only to see that it is what the two sides add up to
            if any(history.changed_between(p, sha) & paths for p in c.parents):
                events.append(Event(c, "join", c.parents[0]))
            continue
        if not base:
            continue
        if not (history.changed_between(base[0], sha) & paths):
            continue
        via_shas = git("rev-list", "--no-merges", sha, f"^{base[0]}").split()
        via = [
            history.commits[v]
            for v in sorted(via_shas, key=history.order.__getitem__)
            if history.touched(v) & paths
        ]
        events.append(Event(c, "merge", base[0], via))
    needed = {first} | {e.commit.sha for e in events} | {e.base for e in events}
    return events, needed


def readme_text(slug: str, head: str) -> str:
    """The method's README as committed at ``head``."""
    return git("show", f"{head}:{METHODS_DIR}/{slug}/README.md", check=False)


def registered_slugs() -> list[str]:
    base = ROOT / METHODS_DIR
    return sorted(
        p.name
        for p in base.iterdir()
        if p.is_dir() and (p / "__init__.py").is_file() and not p.name.startswith("_")
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("methods", nargs="*", help="slugs (default: every registered method)")
    parser.add_argument("--extract", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("-v", "--verbose", action="store_true", help="progress on stderr")
    parser.add_argument(
        "--until",
        default="HEAD",
        help="the last commit of the backfilled history (default HEAD); later changes are "
        "recorded by `make paper ... AMEND=...` (or its LEDGER_ONLY=1 form) with their reasons",
    )
    args = parser.parse_args(argv)
    if args.extract:
        json.dump(extract(args.methods), sys.stdout)
        return 0

    sys.path.insert(0, str(ROOT / "src"))
    from reprolab import ledger  # noqa: PLC0415

    known = registered_slugs()
    slugs = args.methods or known
    unknown = sorted(set(slugs) - set(known))
    if unknown:
        parser.error(f"unknown method(s) {', '.join(unknown)}; registered: {', '.join(known)}")
    started = time.perf_counter()
    # the history is read as of HEAD now (others may commit while this runs)
    history = History(git("rev-parse", args.until).strip())
    rules = Rules(history)
    firsts = first_results(history, slugs)
    missing = [s for s in slugs if s not in firsts]
    for s in missing:
        print(f"{s}: no results under {RESULTS_DIR}/ in the history; no ledger written")

    with Extractor(slugs, verbose=args.verbose) as ex:
        # the files each method depends on grow with the modules its import loads:
        # extract, widen the paths, plan again until no new commit is needed
        modules: dict[str, str] = {}
        while True:
            plans = {}
            needed: set[str] = {history.head}
            for slug, (first, _) in firsts.items():
                paths = method_paths(slug, modules)
                plans[slug] = plan_events(slug, history, first, paths)
                needed |= plans[slug][1]
            ex.get(needed, history.order)
            grown = dict(modules)
            for sha in needed:
                grown.update(ex.states[sha]["modules"])
            if grown == modules:
                break
            modules = grown

        head_sha = history.head
        out_dir = ROOT / ledger.LEDGER_DIR
        out_dir.mkdir(parents=True, exist_ok=True)
        for slug in slugs:
            if slug not in firsts:
                continue
            first, files = firsts[slug]
            events, _ = plans[slug]
            book = MethodLedger(slug, history, rules, readme_text(slug, history.head))
            fc = history.commits[first]
            state = ex.states[first]["methods"][slug]
            if not state["ok"]:
                print(f"{slug}: cannot read the method at {fc.short}: {state['error']}")
                continue
            book.register(fc, state)
            book.recorded.append(fc.sha)
            skipped = []
            for ev in events:
                old = ex.states[ev.base]["methods"][slug]
                new = ex.states[ev.commit.sha]["methods"][slug]
                if not (old["ok"] and new["ok"]):
                    skipped.append((ev.commit.short, old.get("error") or new.get("error")))
                    continue
                if ev.kind == "join":
                    # only a merge that has every commit recorded so far tells what they
                    # add up to; it is compared with the ledger's state
                    ancestors = history.ancestors(ev.commit.sha)
                    if not all(sha in ancestors for sha in book.recorded):
                        continue
                    old = book.state()
                book.step(ev, old, new)
                book.recorded.append(ev.commit.sha)
            path = ledger.path_for(ROOT, slug)
            path.write_text("".join(ledger.canonical(e) + "\n" for e in book.entries))
            # the ledger's latest state against HEAD's code
            head = ex.states[head_sha]["methods"][slug]
            drift = []
            if head["ok"]:
                if ledger.digest(head["config"]) != ledger.digest(book.config):
                    drift.append("config")
                for claim in head["claims"]:
                    if book.claims.get(claim["id"]) != claim["definition"]:
                        drift.append(claim["id"])
                drift += sorted(set(book.claims) - {x["id"] for x in head["claims"]})
            _summary(slug, fc, files, book, skipped, drift)
    took = time.perf_counter() - started
    print(
        f"\n{len(firsts)} ledger(s) in {ledger.LEDGER_DIR}/, history up to "
        f"{history.head[:12]} ({took:.0f} s)"
    )
    return 0


def _summary(slug, first, files, book, skipped, drift) -> None:
    n_amended = sum(e["event"] == "amended" for e in book.entries)
    shown = ", ".join(sorted({f.split("/")[-1] for f in files})[:3])
    print(f"\n== {slug}: first results {first.short} {first.date[:10]} ({shown}): {first.subject}")
    print(
        f"   {len(book.claims)} claims; {n_amended} amended entries, "
        f"{sum(e['event'] == 'config' for e in book.entries) - 1} config changes"
    )
    by_commit: dict[str, list] = {}
    for row in book.amendments:
        by_commit.setdefault(row["commit"].sha, []).append(row)
    for sha, rows in by_commit.items():
        c = rows[0]["commit"]
        fields: dict[str, list[str]] = {}
        for r in rows:
            fields.setdefault(", ".join(r["fields"]), []).append(r["claim"])
        print(f"   {c.short} {c.date[:10]} {c.subject[:110]}")
        for f, claims in fields.items():
            names = ", ".join(claims) if len(claims) <= 4 else f"{len(claims)} claims"
            print(f"      [{f}] {names}")
        cfg = next((e for e in book.entries if e["event"] == "config" and e["commit"] == sha), None)
        if cfg is not None:
            amended = next(
                (e for e in book.entries if e.get("commit") == sha and "changed" in e), None
            )
            if amended and "config" in amended["changed"]:
                keys = ", ".join(amended["changed"]["config"]["new"])
                print(f"      config keys: {keys}")
    for note in book.notes:
        print(f"   NOTE: {note}")
    for sha, err in skipped:
        print(f"   skipped {sha}: method not readable ({err})")
    if drift:
        print(f"   NOTE: ledger state differs from HEAD's code for: {', '.join(drift)}")


if __name__ == "__main__":
    sys.exit(main())
