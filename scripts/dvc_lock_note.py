"""After `make run`: say why dvc.lock differs from the commit, when it does.

A fresh clone's `make run` on another CPU than the one that wrote dvc.lock leaves
dvc.lock modified: floating-point results differ in their last bits across CPU models
(other vector kernels), so the hashes of the stages' outputs do, though the stages ran
on the same inputs and the verdicts are the same (docs/evidence.md, "What holds across
machines"). This compares the committed dvc.lock (HEAD) with the one on disk and prints:

- nothing, when dvc.lock is unchanged (``git diff --quiet dvc.lock``) or not in git;
- when every difference goes back to stages that produced other outputs from the same
  inputs: that this is the CPU's bits, and that committing it is not needed;
- when an input that no stage produces changed (params.yaml, code, a stage added):
  which, and that dvc.lock goes into the commit of that change.

Usage: python scripts/dvc_lock_note.py [ROOT]; always exits 0 (a note, never a failure).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=60)


def _entries(items) -> dict[str, str]:
    """{path: md5} of a stage's deps or outs."""
    return {i["path"]: str(i.get("md5", i.get("hash", ""))) for i in items or []}


def classify(old: dict, new: dict) -> tuple[list[str], list[str]]:
    """The causes of the differences between two dvc.lock documents: (``bits``: stages
    whose outputs differ from the same inputs, ``edits``: inputs no stage produces that
    changed, ``params.yaml`` keys, and stages new or gone)."""
    before = old.get("stages") or {}
    after = new.get("stages") or {}
    produced = {path for s in after.values() for path in _entries(s.get("outs"))}
    bits, edits = [], []
    for name in sorted(set(before) | set(after)):
        if name not in before or name not in after:
            edits.append(f"stage {name} {'added' if name in after else 'removed'}")
            continue
        a, b = before[name], after[name]
        if a.get("cmd") != b.get("cmd"):
            edits.append(f"{name}: its command")
        for key in sorted(set(a.get("params") or {}) | set(b.get("params") or {})):
            if (a.get("params") or {}).get(key) != (b.get("params") or {}).get(key):
                edits.append(f"{name}: {key}")
        deps_a, deps_b = _entries(a.get("deps")), _entries(b.get("deps"))
        changed = {p for p in set(deps_a) | set(deps_b) if deps_a.get(p) != deps_b.get(p)}
        edits += [f"{name}: {p}" for p in sorted(changed - produced)]
        same_inputs = not changed and a.get("params") == b.get("params")
        other_outs = _entries(a.get("outs")) != _entries(b.get("outs"))
        if same_inputs and a.get("cmd") == b.get("cmd") and other_outs:
            bits.append(name)
    return bits, edits


def note(root: Path) -> str:
    """The note to print ('' when there is nothing to say)."""
    if _git(root, "rev-parse", "--verify", "-q", "HEAD:dvc.lock").returncode != 0:
        return ""  # not in git, or dvc.lock not committed
    if _git(root, "diff", "--quiet", "--", "dvc.lock").returncode == 0:
        return ""
    old = yaml.safe_load(_git(root, "show", "HEAD:dvc.lock").stdout) or {}
    new = yaml.safe_load((root / "dvc.lock").read_text()) or {}
    bits, edits = classify(old, new)
    lines = ["", "Note: dvc.lock differs from the committed one (git diff dvc.lock)."]
    if bits:
        shown = ", ".join(bits[:6]) + (f" and {len(bits) - 6} more" if len(bits) > 6 else "")
        lines += [
            f"  {len(bits)} stage(s) wrote other output hashes from the same inputs: {shown}.",
            "  This CPU computes floating-point results to other last bits than the machine",
            "  that wrote the committed dvc.lock (other vector kernels); the stages downstream",
            "  then see other input hashes. The verdicts hold across machines",
            "  (docs/evidence.md, 'What holds across machines'; python -m reprolab machine).",
        ]
    if edits:
        shown = "; ".join(edits[:6]) + (f"; and {len(edits) - 6} more" if len(edits) > 6 else "")
        lines += [
            f"  Inputs changed against the commit: {shown}.",
            "  Commit dvc.lock together with that change.",
        ]
    else:
        lines += [
            "  Committing it is not needed: nothing but this machine's bits changed. Leave it",
            "  as it is (restoring the committed file would make the next run redo the stages).",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path.cwd()
    try:
        text = note(root)
    except (OSError, subprocess.SubprocessError, yaml.YAMLError) as exc:
        text = f"(could not compare dvc.lock with the commit: {exc})\n"
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
