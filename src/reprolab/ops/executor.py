"""Where a stage's independent units run: ``REPROLAB_EXECUTOR``.

- ``pool`` (default on a machine with more than one core): a stage with more than one
  unit to train runs them on a pool of single-threaded worker processes forked from the
  stage process, one per core this process may use (``REPROLAB_POOL_WORKERS``
  overrides); forking costs milliseconds (the stage's imports, parsed config and
  verified data are inherited), so there is no start-up to pay back and the pool lives
  exactly as long as the stage's training;
- ``local``: one after another in the stage process, torch on every core;
- ``dask``: a local Dask cluster sized to the machine (one single-threaded worker
  process per core, or ``REPROLAB_DASK_WORKERS``), started for the stage and stopped
  after it;
- ``tcp://host:port`` (or any Dask address): an existing Dask scheduler, e.g. a cluster
  whose workers see the same project folder (a shared filesystem) and environment.

The same setting chooses how Prefect's ``reproduce-all`` runs methods (one after another,
or concurrently through prefect-dask's task runner on a local cluster or the scheduler;
the deployment also takes it as a parameter): :func:`local_cluster_kwargs` is the one
description of a local cluster for both.

It is an environment setting, not a param: where units run does not change what they
compute (tests compare the checkpoints of ``local``, ``pool`` and Dask), so it must not
change DVC's view of a stage.
The stage process still gathers the results and writes every output (checkpoints, MLflow
runs) itself, atomically, so DVC sees one stage and its caching stays exact. A worker
that dies mid-unit loses nothing that was finished: Dask reruns the unit on another
worker (resuming from the unit's last epoch checkpoint when it has one), and the stage
records each unit once, when its result arrives.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from reprolab.core.threads import available_cores

ENV = "REPROLAB_EXECUTOR"
WORKERS_ENV = "REPROLAB_DASK_WORKERS"
POOL_ENV = "REPROLAB_POOL_WORKERS"
CONNECT_TIMEOUT_S = 5


class ExecutorError(RuntimeError):
    """The executor named by REPROLAB_EXECUTOR cannot be used (named, with the fix)."""


def default() -> str:
    """``pool`` where this process may use more than one core, else ``local``."""
    return "pool" if available_cores() > 1 else "local"


def choice(value: str | None = None) -> str:
    """``value`` (default: ``REPROLAB_EXECUTOR``, else :func:`default`), checked."""
    if value is None:
        value = os.environ.get(ENV, "")
    value = value.strip() or default()
    if value in ("local", "pool", "dask") or "://" in value:
        return value
    raise ExecutorError(
        f"{ENV}={value!r}: expected 'local', 'pool' (single-threaded processes forked "
        "from the stage, one per core), 'dask' (a local Dask cluster) or a Dask "
        "scheduler address such as tcp://127.0.0.1:8786"
    )


def pool_workers() -> int:
    """Worker processes of a ``pool``: ``REPROLAB_POOL_WORKERS``, else one per core this
    process may use."""
    value = os.environ.get(POOL_ENV, "").strip()
    if not value:
        return available_cores()
    if not value.isdigit() or int(value) < 1:
        raise ExecutorError(f"{POOL_ENV}={value!r}: expected a whole number of workers >= 1")
    return int(value)


def _one_thread() -> None:
    """A pool worker's start: it dies with the stage process (a killed stage leaves no
    worker training on into the resume folder the next attempt reads), and torch runs on
    one core (results do not depend on it)."""
    _die_with_parent()
    os.environ["OMP_NUM_THREADS"] = "1"
    import torch

    torch.set_num_threads(1)


def _die_with_parent() -> None:
    """Linux's parent-death signal: SIGKILL this process when the one that forked it
    dies, however it dies (elsewhere nothing is set)."""
    import ctypes
    import signal
    import sys

    if not sys.platform.startswith("linux"):
        return
    pr_set_pdeathsig = 1
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() == 1:  # the parent died before the signal was set
        os._exit(1)


@contextmanager
def process_pool(workers: int) -> Iterator[Any]:
    """A ``concurrent.futures`` pool of ``workers`` single-threaded processes forked from
    this one. On an error or an interrupt the units not started are cancelled and the
    workers stopped; a worker that dies (killed, out of memory) is named."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("fork"),
        initializer=_one_thread,
    )
    try:
        yield pool
    except BrokenProcessPool as exc:
        pool.shutdown(wait=False, cancel_futures=True)
        raise ExecutorError(
            f"a unit's worker process died ({exc}): rerun the stage (finished units are "
            f"kept), or set {ENV}=local to train the units one after another in the stage "
            "process"
        ) from None
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def local_workers() -> int:
    """Worker processes of a local cluster: ``REPROLAB_DASK_WORKERS``, else one per core."""
    return int(os.environ.get(WORKERS_ENV) or os.cpu_count() or 1)


def local_cluster_kwargs(workers: int) -> dict[str, Any]:
    """``distributed.LocalCluster`` arguments: ``workers`` single-threaded processes, in
    which torch uses one core (results do not depend on the thread count)."""
    return {
        "n_workers": workers,
        "threads_per_worker": 1,
        "processes": True,
        "dashboard_address": None,
        "env": {"REPROLAB_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
    }


@contextmanager
def dask_client() -> Iterator[Any]:
    """A ``distributed.Client`` for the configured executor (a local cluster is started
    here and stopped on exit; an unreachable scheduler fails within seconds)."""
    value = choice()
    if value in ("local", "pool"):
        raise ExecutorError(f"{ENV} is {value!r}: no Dask client")
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - it is in requirements.lock
        raise ExecutorError(f"{ENV}={value}: dask.distributed is not installed ({exc})") from exc
    if value == "dask":
        # one thread per worker process: torch inside each unit then uses one core
        cluster = LocalCluster(**local_cluster_kwargs(local_workers()))
        client = Client(cluster)
        try:
            yield client
        finally:
            client.close()
            cluster.close()
        return
    try:
        client = Client(value, timeout=CONNECT_TIMEOUT_S)
    except OSError as exc:
        raise ExecutorError(
            f"{ENV}={value}: no Dask scheduler answers there within {CONNECT_TIMEOUT_S} s "
            f"({exc}); start one (`dask scheduler` and `dask worker {value}` on the machines "
            f"that see this project) or set {ENV}=dask for a local cluster"
        ) from None
    try:
        yield client
    finally:
        client.close()
