"""CPU threads of torch in a stage process, set deliberately (without importing Lightning)."""

from __future__ import annotations

import contextlib
import os


def set_threads() -> int:
    """Use ``REPROLAB_THREADS`` intra-op threads (default: all cores). On a busy machine
    or for tiny models, ``REPROLAB_THREADS=1`` is often faster."""
    import torch

    n = int(os.environ.get("REPROLAB_THREADS", os.cpu_count() or 1))
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
