"""The core helpers several methods share: training curves from unit histories, image
tasks from the images asset, tensors of a prepared part, and supervised fitting."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reprolab.contract import TrainerConfig, Unit
from reprolab.core import datasets, plots, training
from reprolab.core.io import save_arrays

# two tasks x two variants x two seeds; val_acc by hand so the means are easy to check
HISTORIES = {
    Unit("a", "m", 0): [{"epoch": 0, "val_acc": 0.2}, {"epoch": 1, "val_acc": 0.4}],
    Unit("a", "m", 1): [{"epoch": 0, "val_acc": 0.4}, {"epoch": 1, "val_acc": 0.8}],
    Unit("a", "b", 0): [{"epoch": 0, "val_acc": 0.1}, {"epoch": 1}],  # epoch 1 lacks it
    Unit("b", "m", 0): [{"epoch": 0, "val_acc": 1.0}, {"epoch": 1, "val_acc": 0.0}],
}


def _curves(**kw) -> dict[str, tuple[list, list]]:
    return {
        k: (s.index.tolist(), s.round(12).tolist())
        for k, s in plots.mean_curves(HISTORIES, "val_acc", **kw).items()
    }


def test_mean_curves_averages_over_the_units_outside_the_groups():
    # task a: epoch 0 (0.2 + 0.4 + 0.1) / 3, epoch 1 (0.4 + 0.8) / 2 (b logs none)
    assert _curves() == {"a": ([0, 1], [round(0.7 / 3, 12), 0.6]), "b": ([0, 1], [1.0, 0.0])}
    assert _curves(by=("task", "variant")) == {
        "a b": ([0], [0.1]),
        "a m": ([0, 1], [0.3, 0.6]),
        "b m": ([0, 1], [1.0, 0.0]),
    }
    assert _curves(by=("variant",)) == {
        "b": ([0], [0.1]),
        "m": ([0, 1], [round(1.6 / 3, 12), round(1.2 / 3, 12)]),
    }
    assert plots.mean_curves(HISTORIES, "missing") == {}
    steps = {
        Unit("t", "v", 0): [{"step": 5, "kl": 2.0}],
        Unit("t", "v", 1): [{"step": 5, "kl": 4.0}],
    }
    assert plots.mean_curves(steps, "kl", by=("variant",), x="step")["v"].to_dict() == {5: 3.0}


def test_curves_figure_draws_one_labelled_line_per_group(tmp_path, monkeypatch):
    drawn = {}

    def keep(fig, path, dpi=110):
        ax = fig.axes[0]
        drawn["lines"] = {ln.get_label(): list(ln.get_ydata()) for ln in ax.lines}
        drawn["labels"] = (ax.get_xlabel(), ax.get_ylabel(), ax.get_title())
        drawn["marker"] = {ln.get_marker() for ln in ax.lines}
        return path

    monkeypatch.setattr(plots, "save_figure", keep)
    out = plots.curves_figure(
        HISTORIES, "val_acc", tmp_path / "c.png", ylabel="acc", title="t", marker="."
    )
    assert out == tmp_path / "c.png"
    assert drawn["lines"].keys() == {"a", "b"}
    assert drawn["lines"]["b"] == [1.0, 0.0]
    assert drawn["labels"] == ("epoch", "acc", "t") and drawn["marker"] == {"."}


@pytest.mark.filterwarnings("ignore:No artists with labels")
def test_curves_figure_writes_a_png_even_without_curves(tmp_path):
    path = plots.curves_figure({}, "val_acc", tmp_path / "empty.png", ylabel="y", title="t")
    assert path.is_file() and path.stat().st_size > 0


def test_image_tasks_splits_each_dataset_by_class(tmp_path):
    y = np.repeat(np.arange(2), 10)  # 10 rows per class
    x = np.arange(20, dtype=np.uint8)[:, None].repeat(3, axis=1)
    save_arrays(tmp_path, "toy", {"x": x, "y": y})
    tasks, info = datasets.image_tasks(tmp_path, ["toy"], 0, (0.6, 0.2, 0.2), seed=7)
    toy = tasks["toy"]
    assert list(toy) == ["x_train", "y_train", "x_val", "y_val", "x_test", "y_test"]
    # per class: 6 train, 2 val, 2 test
    assert info == {"sizes": {"toy": 12}, "splits": {"toy": {"train": 12, "val": 4, "test": 4}}}
    for part in ("train", "val", "test"):
        assert np.array_equal(toy[f"y_{part}"], y[toy[f"x_{part}"][:, 0]])  # rows stay paired
        assert np.bincount(toy[f"y_{part}"]).tolist() == [len(toy[f"y_{part}"]) // 2] * 2
    rows = np.concatenate([toy[f"x_{p}"][:, 0] for p in ("train", "val", "test")])
    assert sorted(rows.tolist()) == list(range(20))  # a partition of the rows
    # the same split as calling the building blocks by hand (seed + 1 splits)
    tr, va, te = datasets.stratified_split(y, (0.6, 0.2, 0.2), 8)
    assert np.array_equal(toy["x_val"], x[va]) and np.array_equal(toy["y_test"], y[te])
    # a part named None is dropped; max_rows subsamples first
    tasks, info = datasets.image_tasks(
        tmp_path, ["toy"], 10, (0.8, 0.0, 0.2), seed=7, parts=("train", None, "test")
    )
    assert list(tasks["toy"]) == ["x_train", "y_train", "x_test", "y_test"]
    assert info["splits"] == {"toy": {"train": 8, "test": 2}}
    with pytest.raises(datasets.MissingSourceError, match="no 'mnist'"):
        datasets.image_tasks(tmp_path, ["mnist"], 0, (0.6, 0.2, 0.2), seed=7)


def test_image_task_keys_name_the_split_key():
    assert datasets.image_task_keys() == ("datasets", "max_rows", "split", "data_seed")
    assert datasets.image_task_keys("test_frac")[2] == "test_frac"


def test_part_tensors_scales_uint8_images_only():
    data = {
        "x_img": np.array([[0, 51, 255]], dtype=np.uint8),
        "y_img": np.array([3], dtype=np.int32),
        "x_tab": np.array([[-1.5, 2.0]], dtype=np.float64),
        "y_tab": np.array([1]),
    }
    x, y = datasets.part_tensors(data, "img")
    assert x.dtype == torch.float32 and torch.allclose(x, torch.tensor([[0.0, 0.2, 1.0]]))
    assert y.dtype == torch.int64 and y.tolist() == [3]
    x, _ = datasets.part_tensors(data, "tab")
    assert x.dtype == torch.float32 and x.tolist() == [[-1.5, 2.0]]


def test_fit_supervised_batches_train_shuffled_and_val_in_order(monkeypatch, tmp_path):
    seen = {}

    def fake_fit(module, train, val, max_epochs, resume_dir, *, trainer):
        seen.update(module=module, epochs=max_epochs, resume=resume_dir, trainer=trainer)
        train.sampler.set_epoch(0)
        seen["train"] = [len(b[0]) for b in train]
        seen["val"] = [b[1].tolist() for b in val]

    monkeypatch.setattr(training, "fit_resumable", fake_fit)
    x, y = torch.zeros(10, 2), torch.arange(10)
    cpu = TrainerConfig(accelerator="cpu")
    training.fit_supervised("m", (x, y), (x, y), 4, 3, 0, tmp_path, trainer=cpu)
    assert seen["module"] == "m" and seen["epochs"] == 3 and seen["resume"] == tmp_path
    assert seen["trainer"] is cpu  # the settings go through explicitly
    assert seen["train"] == [4, 4, 2]
    assert seen["val"] == [list(range(10))]  # one batch of up to 4096, in order


def test_torch_threads_sets_and_restores():
    import torch

    from reprolab.core.threads import torch_threads

    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with torch_threads(0):  # 0: leave the stage's setting
        assert torch.get_num_threads() == before


def test_grouped_bars_draws_one_bar_per_series_and_tick():
    import matplotlib.pyplot as plt

    from reprolab.core.plots import grouped_bars

    fig, ax = plt.subplots()
    series = {
        "fp32": [(1.0, 0.1), (2.0, 0.2), (3.0, 0.0)],
        "int8": [(0.5, 0.1), (1.5, 0.0), (2.5, 0.3)],
    }
    grouped_bars(ax, ["a", "b", "c"], series)
    heights = [p.get_height() for p in ax.patches]
    assert heights == [1.0, 2.0, 3.0, 0.5, 1.5, 2.5]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    plt.close(fig)
