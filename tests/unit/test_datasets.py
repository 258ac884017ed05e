"""Stratified subsampling: size, class balance, order and determinism."""

from __future__ import annotations

import numpy as np

from reprolab.core.datasets import stratified_subsample


def test_stratified_subsample_keeps_balance_order_and_is_seeded():
    y = np.repeat(np.arange(4), [400, 300, 200, 100])
    x = np.arange(len(y))
    xs, ys = stratified_subsample(x, y, 100, seed=3)
    assert abs(len(ys) - 100) <= 4
    assert np.array_equal(np.bincount(ys) // 10, [4, 3, 2, 1])  # 40/30/20/10, +-1 per class
    assert np.all(np.diff(xs) > 0) and np.array_equal(y[xs], ys)
    again, _ = stratified_subsample(x, y, 100, seed=3)
    assert np.array_equal(xs, again)
    assert not np.array_equal(xs, stratified_subsample(x, y, 100, seed=4)[0])
    for limit in (0, len(y), len(y) + 5):
        assert stratified_subsample(x, y, limit, seed=3)[0] is x
