"""CPU threads of torch in a stage process, set deliberately (without importing Lightning)."""

from __future__ import annotations

import contextlib
import os


def available_cores() -> int:
    """The cores this process may run on: its CPU affinity (``taskset``, a container's
    cpuset), not the machine's count, so that a run pinned to one core does not start
    two threads that take turns on it."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # no affinity call on this platform
        return os.cpu_count() or 1


def set_threads() -> int:
    """Use ``REPROLAB_THREADS`` intra-op threads (default: the cores this process may
    run on). On a busy machine or for tiny models, ``REPROLAB_THREADS=1`` is often
    faster."""
    import torch

    n = int(os.environ.get("REPROLAB_THREADS", available_cores()))
    torch.set_num_threads(n)
    return n


@contextlib.contextmanager
def torch_threads(n: int):
    """``n`` torch intra-op threads for the duration of the block (0: leave the stage's
    setting), restored afterwards: a method whose work is many tiny products runs them
    on fewer threads than the stage was given."""
    import torch

    before = torch.get_num_threads()
    if n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
