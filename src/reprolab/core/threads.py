"""CPU threads of torch in a stage process, set deliberately (without importing Lightning)."""

from __future__ import annotations

import os


def set_threads() -> int:
    """Use ``REPROLAB_THREADS`` intra-op threads (default: all cores). On a busy machine
    or for tiny models, ``REPROLAB_THREADS=1`` is often faster."""
    import torch

    n = int(os.environ.get("REPROLAB_THREADS", os.cpu_count() or 1))
    torch.set_num_threads(n)
    return n
