"""The tracking path under concurrent writers (bench/soak_tracking.py, reduced): four
processes open a fresh SQLite store at once through reprolab's Tracker and log unit runs
for a few seconds; every run and metric point they wrote is read back, and none failed.
(Before the store's first open was serialised, two processes migrating a fresh file at
once died with ``duplicate column name``.) The full soak, 8 writers x 2 minutes on SQLite
and on PostgreSQL: ``python bench/soak_tracking.py``."""

from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.pipeline


def _soak():
    spec = importlib.util.spec_from_file_location("soak", ROOT / "bench" / "soak_tracking.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_concurrent_writers_on_a_fresh_sqlite_store_lose_nothing(tmp_path):
    result = _soak().soak(f"sqlite:///{tmp_path / 'mlflow.db'}", writers=4, seconds=4)
    assert result["crashed_writers"] == [] and result["writer_errors"] == []
    assert result["runs_written"] >= 4  # every writer got runs in
    assert result["runs_stored"] == result["runs_written"]
    assert result["missing_runs"] == 0 and result["incomplete_runs"] == 0
    assert result["lost_nothing"]
