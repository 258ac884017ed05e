"""What a training step holds for backward, counted with
``torch.autograd.graph.saved_tensors_hooks``.

Every tensor an autograd node saves passes through the pack hook. A storage is counted
once however many nodes save it (or views of it), and parameter storages are not
counted (they are held anyway, with or without a backward): the total is the
activation memory a training step keeps alive between its forward and its backward.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import contextmanager

import torch


class SavedBytes:
    """Counts the distinct non-parameter storages saved for backward while active."""

    def __init__(self, exclude: Iterable[torch.Tensor] = ()) -> None:
        self.excluded = {p.untyped_storage().data_ptr() for p in exclude}
        self.seen: set[int] = set()
        self.bytes = 0
        self.raw_bytes = 0  # every pack, duplicates and parameters included

    def pack(self, t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        self.raw_bytes += t.numel() * t.element_size()
        ptr = storage.data_ptr()
        if ptr not in self.excluded and ptr not in self.seen:
            self.seen.add(ptr)
            self.bytes += storage.nbytes()
        return t

    @contextmanager
    def counting(self):
        with torch.autograd.graph.saved_tensors_hooks(self.pack, lambda t: t):
            yield self


def saved_bytes(fn: Callable[[], torch.Tensor], params: Iterable[torch.Tensor]) -> int:
    """Activation bytes held for backward by the graph of ``fn()``."""
    counter = SavedBytes(params)
    with counter.counting():
        out = fn()
    del out
    return counter.bytes
