"""What a paper round counts as compute after a kill: the epochs an interrupted unit
resumed from (its attempts' records in the resume folder) and the units the killed
attempt of the round left in the evaluation memo. Checked against sums written out by
hand from the files' times."""

from __future__ import annotations

import json
import os
import time

import pytest

from reprolab.evidence.running.paper import _round_minutes
from reprolab.stages.train import ATTEMPTS, _begin_attempt, _end_attempt


def _attempts(resume):
    return json.loads((resume / ATTEMPTS).read_text())["attempts"]


def test_a_first_attempt_has_nothing_before_it(tmp_path):
    resume = tmp_path / "unit"
    before = time.time()
    assert _begin_attempt(resume) == 0.0
    (only,) = _attempts(resume)
    assert only["ended"] is None and before <= only["started"] <= time.time()


def test_a_killed_attempt_counts_up_to_its_last_checkpoint(tmp_path):
    resume = tmp_path / "unit"
    resume.mkdir()
    t0 = 1_000_000.0
    (resume / ATTEMPTS).write_text(json.dumps({"attempts": [{"started": t0, "ended": None}]}))
    ckpt = resume / "pretrain" / "last.ckpt"  # nested, as lift_gs writes its phases
    ckpt.parent.mkdir()
    ckpt.write_bytes(b"x")
    os.utime(ckpt, (t0 + 40.0, t0 + 40.0))
    older = resume / "last.ckpt"
    older.write_bytes(b"x")
    os.utime(older, (t0 + 12.0, t0 + 12.0))
    assert _begin_attempt(resume) == pytest.approx(40.0)
    first, second = _attempts(resume)
    assert first["ended"] == pytest.approx(t0 + 40.0) and second["ended"] is None


def test_recorded_ends_and_a_kill_add_up(tmp_path):
    resume = tmp_path / "unit"
    resume.mkdir()
    t0 = 2_000_000.0
    attempts = [{"started": t0, "ended": t0 + 10.0}, {"started": t0 + 100.0, "ended": None}]
    (resume / ATTEMPTS).write_text(json.dumps({"attempts": attempts}))
    ckpt = resume / "last.ckpt"
    ckpt.write_bytes(b"x")
    os.utime(ckpt, (t0 + 105.0, t0 + 105.0))
    assert _begin_attempt(resume) == pytest.approx(10.0 + 5.0)
    # this attempt fails: its end is recorded, and the next one counts it
    _end_attempt(resume)
    ended = _attempts(resume)[-1]
    assert ended["ended"] is not None and ended["ended"] >= ended["started"]
    assert _begin_attempt(resume) == pytest.approx(15.0 + ended["ended"] - ended["started"])


def test_a_kill_before_any_checkpoint_counts_nothing(tmp_path):
    resume = tmp_path / "unit"
    resume.mkdir()
    (resume / ATTEMPTS).write_text(json.dumps({"attempts": [{"started": 5.0, "ended": None}]}))
    os.utime(resume / ATTEMPTS, (500.0, 500.0))  # its own record is not a checkpoint
    assert _begin_attempt(resume) == 0.0


def test_an_unreadable_record_counts_nothing_and_is_replaced(tmp_path):
    resume = tmp_path / "unit"
    resume.mkdir()
    (resume / ATTEMPTS).write_text("{not json")
    assert _begin_attempt(resume) == 0.0
    assert len(_attempts(resume)) == 1


def test_round_minutes_counts_the_killed_attempts_memo_entries(tmp_path):
    runtime = tmp_path
    started = 1_000.0
    (runtime / "train.json").write_text(
        json.dumps(
            {
                "units": {
                    "a": {"train_seconds": 30.0},
                    "b": {"train_seconds": 50.0, "reused": 1.0},  # an earlier round's
                    "c": {"train_seconds": 12.0, "earlier_attempts_seconds": 7.0},
                }
            }
        )
    )
    (runtime / "quantize.json").write_text(json.dumps({"wall_seconds": 6.0}))
    hits = [
        {"unit": "a", "seconds": 3.0, "created": started + 1.0},  # the killed attempt's
        {"unit": "b", "seconds": 4.0, "created": started - 1.0},  # an earlier round's
        {"unit": "d", "seconds": 2.0, "created": started},
    ]
    (runtime / "evaluate.json").write_text(json.dumps({"evaluate_seconds": 9.0, "memo_hits": hits}))
    expected = (30.0 + 12.0) + 6.0 + 9.0 + (3.0 + 2.0)
    assert _round_minutes(runtime, started) == pytest.approx(expected / 60.0)
    # without a round start (an old run's files) no memo entry counts
    assert _round_minutes(runtime) == pytest.approx((30.0 + 12.0 + 6.0 + 9.0) / 60.0)


def test_units_trained_side_by_side_count_their_share_of_the_machine(tmp_path):
    """Four 60 s units on a 2-process pool took 2 minutes of the machine, as two 60 s
    units one after another take 2 minutes: the budget reads machine time on both."""
    pool = {f"u{i}": {"train_seconds": 60.0, "units_side_by_side": 2.0} for i in range(4)}
    (tmp_path / "train.json").write_text(json.dumps({"units": pool}))
    assert _round_minutes(tmp_path) == pytest.approx(2.0)
    serial = {f"u{i}": {"train_seconds": 60.0, "units_side_by_side": 1.0} for i in range(2)}
    (tmp_path / "train.json").write_text(json.dumps({"units": serial}))
    assert _round_minutes(tmp_path) == pytest.approx(2.0)


def test_the_claims_report_reads_the_machine_time_the_run_records(tmp_path):
    """The report's compute figure is the round's machine time, not the sum of the
    units' walls: four 60 s units two at a time, 30 s of quantize, 45 s of evaluate
    are 120 + 30 + 45 = 195 s of the machine (the walls would sum to 315 s)."""
    from reprolab.paths import MethodPaths
    from reprolab.stages.report import compute_seconds

    runtime = MethodPaths(tmp_path, "m").runtime
    runtime.mkdir(parents=True)
    assert compute_seconds(tmp_path, "m") is None  # nothing trained here
    pool = {f"u{i}": {"train_seconds": 60.0, "units_side_by_side": 2.0} for i in range(4)}
    (runtime / "train.json").write_text(json.dumps({"units": pool}))
    (runtime / "quantize.json").write_text(json.dumps({"wall_seconds": 30.0}))
    (runtime / "evaluate.json").write_text(json.dumps({"evaluate_seconds": 45.0}))
    assert compute_seconds(tmp_path, "m") == pytest.approx(195.0)
    assert _round_minutes(runtime) * 60.0 == pytest.approx(195.0)


def test_the_next_rounds_estimate_counts_each_new_unit_once(tmp_path):
    """Two claims whose scopes overlap (a vs b, a vs c) ask for the same seeds: the
    round trains a, b and c once per seed, not a twice. Units trained two at a time
    count half their wall. By hand: a 100 s, b 60 s, c 40 s of wall on a 2-process pool
    -> 50 + 30 + 20 = 100 machine seconds a seed; two new seeds -> 200 s."""
    from reprolab.contract import Unit
    from reprolab.evidence.running import rounds

    units = [Unit("t", v, s) for v in ("a", "b", "c") for s in (0, 1)]
    wall = {"a": 100.0, "b": 60.0, "c": 40.0}
    record = {u.id: {"train_seconds": wall[u.variant], "units_side_by_side": 2.0} for u in units}
    (tmp_path / "train.json").write_text(json.dumps({"units": record}))
    seconds = rounds.unit_seconds(tmp_path)
    assert seconds["t__a__s0"] == pytest.approx(50.0)
    rules = [
        {"claims": ["ab"], "seeds": [2, 3], "variants": ["a", "b"]},
        {"claims": ["ac"], "seeds": [2, 3], "variants": ["a", "c"]},
    ]
    assert len(rounds.new_units(rules, units)) == 6
    assert rounds.round_minutes(rules, units, seconds) * 60.0 == pytest.approx(200.0)
    # one claim alone: its own units only
    assert rounds.round_minutes(rules[:1], units, seconds) * 60.0 == pytest.approx(160.0)
