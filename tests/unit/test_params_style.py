"""params.yaml is written in the style `dvc exp run -S` writes back, so a one-key change
is a one-line diff (DVC's own override code, on a copy of the committed file)."""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

from dvc.utils.hydra import apply_overrides

ROOT = Path(__file__).resolve().parents[2]


def _changed_lines(tmp_path: Path, override: str) -> list[str]:
    copy = tmp_path / "params.yaml"
    shutil.copy(ROOT / "params.yaml", copy)
    apply_overrides(copy, [override])
    before = (ROOT / "params.yaml").read_text().splitlines()
    after = copy.read_text().splitlines()
    return [
        line
        for line in difflib.unified_diff(before, after, lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def test_a_one_key_change_is_a_one_line_diff(tmp_path):
    changed = _changed_lines(tmp_path, "evidence.paper.budget_minutes=7")
    assert len(changed) == 2, changed  # the old line and the new one
    assert "budget_minutes: 7" in changed[1] and "budget_minutes: 120" in changed[0]


def test_setting_a_list_to_its_own_value_changes_nothing(tmp_path):
    # DVC writes lists back as block lists: the file must already hold them so
    assert _changed_lines(tmp_path, "seeds.paper=[0,1,2,3,4]") == []


def test_no_comment_sits_right_below_a_list():
    """DVC attaches such a comment to the list's last item and drops it with the list."""
    last = ""
    for number, line in enumerate((ROOT / "params.yaml").read_text().splitlines(), 1):
        if line.lstrip().startswith("#"):
            assert not last.lstrip().startswith("- "), f"params.yaml:{number}: {line}"
        if line.strip():
            last = line
