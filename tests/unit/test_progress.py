"""core.progress: a line every N seconds while a loop works, with counts, elapsed time
and an estimate (a real background timer, a fake slow loop)."""

from __future__ import annotations

import re
import time

import pytest

from reprolab.core.progress import Progress, duration, estimate

LINE = re.compile(r"^stage@m: (\d+)/4 units, (\S+) elapsed, (.+?)(; on (\S+))?$")


def test_lines_appear_with_counts_while_a_slow_loop_works():
    lines: list[str] = []
    with Progress("stage@m", total=4, every=0.05, say=lines.append) as progress:
        for i in range(4):
            progress.working_on(f"unit{i}")
            time.sleep(0.2)
            progress.advance()
        during = len(lines)
    time.sleep(0.2)
    assert len(lines) == during  # the timer stopped with the loop
    assert during >= 8, lines  # ~16 ticks in 0.8 s; a busy machine skips some
    parsed = [LINE.match(line) for line in lines]
    assert all(parsed), lines
    counts = [int(m.group(1)) for m in parsed]
    assert counts == sorted(counts) and counts[0] == 0 and counts[-1] >= 3
    assert set(counts) >= {0, 1, 2, 3}  # a line during every unit
    assert "no estimate" in parsed[0].group(3) and parsed[0].group(5) == "unit0"
    later = [m for m in parsed if int(m.group(1)) >= 1]
    assert all(m.group(3).startswith("about ") and m.group(3).endswith(" left") for m in later)
    assert parsed[-1].group(5) == "unit3"


def test_no_line_for_a_loop_shorter_than_the_period_and_none_with_zero():
    lines: list[str] = []
    with Progress("stage@m", total=4, every=5, say=lines.append) as progress:
        progress.advance(4)
    with Progress("stage@m", total=4, every=0, say=lines.append) as progress:
        time.sleep(0.1)
    assert lines == []


def test_the_timer_stops_when_the_loop_fails():
    lines: list[str] = []
    with (
        pytest.raises(RuntimeError),
        Progress("stage@m", total=4, every=0.05, say=lines.append),
    ):
        time.sleep(0.15)
        raise RuntimeError("unit failed")
    n = len(lines)
    time.sleep(0.15)
    assert n >= 1 and len(lines) == n


def test_units_done_before_count_but_not_in_the_pace():
    p = Progress("stage@m", total=10, done=6, every=0)
    assert "6/10 units" in p.line() and "no estimate" in p.line()
    p.advance()
    assert "7/10 units" in p.line() and "about " in p.line()


def test_estimate_and_duration():
    assert estimate(30.0, 0, 10) is None
    assert estimate(30.0, 3, 10) == pytest.approx(70.0)
    assert estimate(30.0, 10, 10) == 0.0
    assert [duration(s) for s in (0, 42, 125, 3725)] == ["0s", "42s", "2m05s", "1h02m"]


def test_the_period_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("REPROLAB_PROGRESS_SECONDS", "7")
    assert Progress("s", total=1).every == 7.0
    monkeypatch.delenv("REPROLAB_PROGRESS_SECONDS")
    assert Progress("s", total=1).every == 25.0
