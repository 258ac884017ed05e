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


def test_grouped_bars_draws_the_group_means_one_bar_per_series_and_tick():
    import matplotlib.pyplot as plt
    import pandas as pd

    from reprolab.core.plots import grouped_bars

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        [
            {"variant": v, "precision": p, "value": float(x)}
            for v in "abc"
            for p in ("fp32", "int8")
            for x in rng.normal(size=3)
            if (v, p) != ("c", "int8")  # one pair without rows: no bar
        ]
    )
    fig, ax = plt.subplots()
    grouped_bars(ax, frame, "variant", ["a", "b", "c"], "precision", ["fp32", "int8"], "ABC")
    means = frame.groupby(["precision", "variant"]).value.mean()
    expected = [means.get((p, v), np.nan) for p in ("fp32", "int8") for v in "abc"]
    heights = [p.get_height() for p in ax.patches]
    np.testing.assert_allclose(heights, expected)  # NaN where the pair has no rows
    assert [t.get_text() for t in ax.get_xticklabels()] == ["A", "B", "C"]
    assert ax.get_legend_handles_labels()[1] == ["fp32", "int8"]
    plt.close(fig)


def test_prepare_image_tasks_is_image_tasks_on_the_run_config(tmp_path):
    from types import SimpleNamespace

    y = np.repeat(np.arange(2), 10)
    x = np.arange(20, dtype=np.uint8)[:, None].repeat(3, axis=1)
    save_arrays(tmp_path, "toy", {"x": x, "y": y})
    cfg = SimpleNamespace(datasets=["toy"], max_rows=12, split=[0.5, 0.25, 0.25], data_seed=3)
    run = SimpleNamespace(cfg=cfg, asset={"images": tmp_path}.__getitem__)
    for parts in (("train", "val", "test"), ("train", "cal", "test")):
        got, info = datasets.prepare_image_tasks(run, parts=parts)
        want, want_info = datasets.image_tasks(tmp_path, ["toy"], 12, [0.5, 0.25, 0.25], 3, parts)
        assert info == want_info and list(got["toy"]) == list(want["toy"])
        assert all(np.array_equal(got["toy"][k], want["toy"][k]) for k in want["toy"])
    assert "x_cal" in got["toy"]


def _toy_task(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for part, n in (("train", 40), ("val", 12), ("cal", 10)):
        out[f"x_{part}"] = rng.integers(0, 256, (n, 6), dtype=np.uint8)
        out[f"y_{part}"] = rng.integers(0, 3, n)
    return out


def _tensors(data: dict, part: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The reference's own reading of a part: uint8 / 255 as float32, labels as int64."""
    x = torch.tensor(data[f"x_{part}"].astype(np.float32) / np.float32(255.0))
    return x, torch.tensor(data[f"y_{part}"].astype(np.int64))


def _classifier() -> training.ClassifierModule:
    net = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3))
    return training.ClassifierModule(net, lr=0.05, epochs=2)


@pytest.mark.parametrize("val_part", ["val", "cal"])
def test_train_classifier_is_the_seeded_supervised_recipe(tmp_path, val_part):
    from types import SimpleNamespace

    data, unit = _toy_task(), Unit("t", "v", 5)
    run = SimpleNamespace(trainer=TrainerConfig(accelerator="cpu"))
    # the reference, written out: the seed, then the module, then the fit
    torch.manual_seed(123)
    torch.rand(7)  # whatever torch's RNG holds before the recipe seeds it is irrelevant
    torch.manual_seed(5)
    ref = _classifier()
    training.fit_supervised(
        ref,
        _tensors(data, "train"),
        _tensors(data, val_part),
        8,
        2,
        5,
        tmp_path / "ref",
        trainer=run.trainer,
    )
    torch.manual_seed(321)
    torch.rand(3)
    got = training.train_classifier(
        run, unit, data, tmp_path / "got", _classifier, batch_size=8, epochs=2, val_part=val_part
    )
    want = ref.net.state_dict()
    assert list(got.state) == list(want)
    assert all(torch.equal(got.state[k], want[k]) for k in want)
    assert got.history == ref.history and len(got.history) == 2
    assert (tmp_path / "got" / training.LAST).is_file()  # resumable like every fit


def test_train_classifier_saves_what_export_gives(tmp_path):
    from types import SimpleNamespace

    run = SimpleNamespace(trainer=TrainerConfig(accelerator="cpu"))
    got = training.train_classifier(
        run,
        Unit("t", "v", 1),
        _toy_task(1),
        tmp_path,
        _classifier,
        batch_size=16,
        epochs=1,
        export=lambda module: module.net[2],
    )
    assert set(got.state) == {"weight", "bias"} and got.state["weight"].shape == (3, 5)


def test_restore_module_loads_the_state_in_eval_mode():
    def build() -> torch.nn.Module:
        return torch.nn.Sequential(
            torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Dropout(0.5)
        )

    torch.manual_seed(0)
    trained = build()
    trained.train()(torch.randn(16, 4))  # moves the batch-norm running statistics
    state = trained.state_dict()
    torch.manual_seed(1)
    fresh = build()
    restored = training.restore_module(fresh, state)
    assert restored is fresh and not any(m.training for m in restored.modules())
    assert all(torch.equal(restored.state_dict()[k], v) for k, v in state.items())
    x = torch.randn(5, 4)
    assert torch.equal(restored(x), trained.eval()(x))
    # one network of several saved in one state dict
    both = {f"a.{k}": v for k, v in state.items()} | {
        f"b.{k}": torch.zeros_like(v) for k, v in state.items()
    }
    restored_a = training.restore_module(build(), both, prefix="a.")
    assert all(torch.equal(restored_a.state_dict()[k], v) for k, v in state.items())
    with pytest.raises(RuntimeError, match="Missing key"):
        training.restore_module(build(), {"0.weight": state["0.weight"]})
    with pytest.raises(RuntimeError, match="Unexpected key"):
        training.restore_module(build(), both)


def test_facets_one_panel_per_group_row_by_row():
    import pandas as pd

    table = pd.DataFrame(
        {
            "task": ["b", "a", "b", "a", "b"],
            "precision": ["fp32", "fp32", "int8", "int8", "fp32"],
            "value": [1.0, 2.0, 3.0, 4.0, 5.0],
        }
    )
    fig, panels = plots.facets(
        table,
        "task",
        "precision",
        size=(2, 1.5),
        title="{col} [{row}]",
        title_size=7,
        sharey=True,
    )
    # columns and rows in order of first appearance, panels row by row
    assert [(p.row, p.col) for p in panels] == [
        ("fp32", "b"),
        ("fp32", "a"),
        ("int8", "b"),
        ("int8", "a"),
    ]
    assert tuple(fig.get_size_inches()) == (4.0, 3.0)
    for p in panels:
        want = [v for t, r, v in table.itertuples(index=False) if (t, r) == (p.col, p.row)]
        assert p.data.value.tolist() == want
        assert p.ax.get_title() == f"{p.col} [{p.row}]" and p.ax.title.get_fontsize() == 7
    grid = fig.axes
    assert [p.ax for p in panels] == grid
    assert grid[0].get_subplotspec().get_geometry()[:2] == (2, 2)
    assert grid[0].get_shared_y_axes().joined(grid[0], grid[3])
    assert not grid[0].get_shared_x_axes().joined(grid[0], grid[1])
    plots.plt.close(fig)
    # one row; given order; a title function; a value with no rows gets an empty panel
    fig, panels = plots.facets(table, "task", cols=["a", "z"], title=lambda r, c: c.upper())
    assert [(p.row, p.col, len(p.data)) for p in panels] == [(None, "a", 2), (None, "z", 0)]
    assert [p.ax.get_title() for p in panels] == ["A", "Z"]
    assert tuple(fig.get_size_inches()) == (9.0, 3.5)
    plots.plt.close(fig)


def test_core_plots_sets_the_headless_backend_before_pyplot():
    import os
    import subprocess
    import sys

    code = (
        "import sys; import reprolab.core.plots as p, matplotlib; "
        "print(matplotlib.get_backend().lower(), p.plt is sys.modules['matplotlib.pyplot'])"
    )
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.split() == ["agg", "True"]


def test_methods_take_pyplot_from_core_plots():
    """A method's plots.py neither sets the backend nor imports pyplot itself: it uses
    the ``plt`` of reprolab.core.plots, imported after the backend is set."""
    from tests.conftest import ROOT

    for path in sorted((ROOT / "src/reprolab/methods").glob("*/plots.py")):
        text = path.read_text()
        assert "matplotlib.use" not in text, path
        assert "import matplotlib.pyplot" not in text, path
        assert "E402" not in text, path


def test_net_py_holds_networks_and_module_py_lightning_modules():
    """The naming rule of a method folder: the classes of net.py are nn.Modules, never a
    Lightning module; module.py holds the Lightning module(s); no file is called
    model.py, models.py or lightning_module.py."""
    import importlib
    import inspect

    import lightning.pytorch as pl

    from tests.conftest import ROOT

    def classes(module):
        return [
            c
            for _, c in inspect.getmembers(module, inspect.isclass)
            if c.__module__ == module.__name__
        ]

    folders = sorted(p for p in (ROOT / "src/reprolab/methods").iterdir() if p.is_dir())
    for folder in folders:
        names = {p.name for p in folder.glob("*.py")}
        assert not names & {"model.py", "models.py", "lightning_module.py"}, folder.name
        package = f"reprolab.methods.{folder.name}"
        if "net.py" in names:
            found = classes(importlib.import_module(f"{package}.net"))
            assert all(issubclass(c, torch.nn.Module) for c in found), folder.name
            assert not [c for c in found if issubclass(c, pl.LightningModule)], folder.name
        if "module.py" in names:
            found = classes(importlib.import_module(f"{package}.module"))
            assert [c for c in found if issubclass(c, pl.LightningModule)], folder.name


def test_error_bars_are_the_scipy_t_interval_half_width():
    import numpy as np
    import pandas as pd
    from scipy import stats

    from reprolab.core.plots import mean_ci

    values = np.array([0.61, 0.58, 0.66, 0.59, 0.70])
    low, high = stats.t.interval(0.95, df=4, loc=values.mean(), scale=stats.sem(values))
    mean, half = mean_ci(pd.Series(values))
    assert mean == pytest.approx(values.mean())
    assert half == pytest.approx((high - low) / 2)
    assert mean_ci([0.4]) == (0.4, 0.0)  # one value: no bar
    assert mean_ci([0.3, 0.3, 0.3]) == (pytest.approx(0.3), 0.0)


def test_mean_cis_is_mean_ci_per_group_and_skips_empty_groups():
    import numpy as np
    import pandas as pd
    from scipy import stats

    from reprolab.core.plots import mean_cis

    groups = [pd.Series([1.0, 2.0, 4.0]), pd.Series([], dtype=float), np.array([5.0])]
    means, errs = mean_cis(groups)
    low, high = stats.t.interval(0.95, df=2, loc=7 / 3, scale=stats.sem([1.0, 2.0, 4.0]))
    assert means[0] == pytest.approx(7 / 3) and errs[0] == pytest.approx((high - low) / 2)
    assert np.isnan(means[1]) and errs[1] == 0.0  # empty: no point, no bar
    assert (means[2], errs[2]) == (5.0, 0.0)
    assert mean_cis(g for g in groups[:1])[0].shape == (1,)  # any iterable of groups
