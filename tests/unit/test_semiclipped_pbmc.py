"""Semi-Clipped's pbmc68k setting: the loader against the file's known contents, the
split into batches / controls / pseudo-perturbations, and PEA on the real cells."""

import importlib.util

import numpy as np
import pytest

from reprolab.contract import Run
from reprolab.methods.semiclipped import SPEC, method, pairs, pbmc, sim
from reprolab.methods.semiclipped.config import SemiClippedConfig

# pbmc68k_reduced as published with scanpy: cells per bulk label and per phase
LABEL_COUNTS = {
    "CD4+/CD25 T Reg": 68,
    "CD4+/CD45RA+/CD25- Naive T": 8,
    "CD4+/CD45RO+ Memory": 19,
    "CD8+ Cytotoxic T": 54,
    "CD8+/CD45RA+ Naive Cytotoxic": 43,
    "CD14+ Monocyte": 129,
    "CD19+ B": 95,
    "CD34+": 13,
    "CD56+ NK": 31,
    "Dendritic": 240,
}
PHASE_COUNTS = {"G1": 501, "G2M": 17, "S": 182}


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    return pbmc.load(tmp_path_factory.mktemp("raw"))


@pytest.fixture(scope="module")
def task(src):
    return method._frozen_sides(pbmc.make_task(src, 7, 3, 4, 0.5, 0.3, 16, 16))


def test_loader_shape_and_labels(src):
    assert src["x"].shape == (pbmc.N_CELLS, pbmc.N_GENES) == (700, 765)
    assert len(src["genes"]) == 765 and len(set(src["genes"])) == 765
    assert len(src["cell_type_names"]) == pbmc.N_LABELS == 10
    names = src["cell_type_names"][src["cell_type"]]
    assert dict(zip(*np.unique(names, return_counts=True), strict=True)) == LABEL_COUNTS
    phases = src["phase_names"][src["phase"]]
    assert dict(zip(*np.unique(phases, return_counts=True), strict=True)) == PHASE_COUNTS
    # raw.X is log1p of counts normalised per cell: non-negative, sparse, finite
    x = src["x"]
    assert np.isfinite(x).all() and x.min() == 0 and 0.2 < (x > 0).mean() < 0.5


def test_cache_is_reused_and_rebuilt_when_stale(tmp_path, src):
    first = pbmc.load(tmp_path)
    cache = tmp_path / pbmc.CACHE
    assert cache.is_file()
    np.testing.assert_array_equal(first["x"], src["x"])
    # a cache of another file version is not trusted
    with np.load(cache) as z:
        arrays = {k: z[k] for k in z.files if k != "sha256"}
    arrays["x"] = arrays["x"] + 1.0
    np.savez(cache, sha256=np.array("0" * 64), **arrays)
    np.testing.assert_array_equal(pbmc.load(tmp_path)["x"], src["x"])


def test_missing_scanpy_names_the_install_command(monkeypatch, tmp_path):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "scanpy" else real(name, *a)
    )
    with pytest.raises(RuntimeError, match=r"pip install --no-deps scanpy==\d"):
        pbmc.source_path()
    cfg = SemiClippedConfig(n_sims=1, pbmc_splits=1, n_pathways=2, perts_per_pathway=2)
    with pytest.raises(RuntimeError, match="pbmc_splits: 0"):
        method.prepare(Run(spec=SPEC, cfg=cfg, seeds=(0,), root=tmp_path), tmp_path)
    # the simulator alone does not need it
    sim_only = cfg.model_copy(update={"pbmc_splits": 0})
    tasks, _ = method.prepare(Run(spec=SPEC, cfg=sim_only, seeds=(0,), root=tmp_path), tmp_path)
    assert list(tasks) == ["sim0"]


def test_split_batches_controls_and_pseudo_perturbations(src, task):
    cycling = np.isin(src["phase_names"][src["phase"]], pbmc.CYCLING)
    np.testing.assert_array_equal(task["test_batch"], cycling)  # held-out batch: S and G2M
    assert set(np.unique(task["batch"][~cycling])) == {0, 1, 2}
    ctrl = task["pert"] < 0
    dendritic = int(np.flatnonzero(src["cell_type_names"] == "Dendritic")[0])
    assert int(task["control_type"]) == dendritic
    np.testing.assert_array_equal(ctrl, src["cell_type"] == dendritic)
    ids = np.unique(task["pert"][~ctrl])
    np.testing.assert_array_equal(ids, np.arange(len(ids)))
    for p in ids:
        rows = task["pert"] == p
        assert len(np.unique(task["batch"][rows])) == 1
        assert len(np.unique(src["cell_type"][rows])) == 1
        assert np.all(task["pathway"][rows] == src["cell_type"][rows])
        assert 1 <= rows.sum() <= 7  # groups of 4, a short (batch, type) in one group
    # every pseudo-perturbation of the held-out batch is held out; 30% of the others
    assert task["test_pert"][~ctrl & cycling].all()
    train_ids = np.unique(task["pert"][~ctrl & ~cycling])
    held = np.unique(task["pert"][~ctrl & ~cycling & task["test_pert"]])
    assert len(held) == round(0.3 * len(train_ids))
    # the views read disjoint halves of the genes
    assert not set(task["tx_genes"]) & set(task["img_genes"])
    assert len(task["tx_genes"]) + len(task["img_genes"]) == 765
    # the frozen encoders are fitted on the training batches only (centred there)
    np.testing.assert_allclose(task["tx"][~cycling].mean(0), 0, atol=1e-4)
    assert np.abs(task["tx"][cycling].mean(0)).max() > 1e-2


def test_frozen_tvn_whitens_each_batch_controls(task):
    ctrl = task["pert"] < 0
    for b in np.unique(task["batch"]):
        c = task["tx_tvn"][(task["batch"] == b) & ctrl].astype(np.float64)
        np.testing.assert_allclose(c.mean(0), 0, atol=1e-4)
        np.testing.assert_allclose(np.cov(c, rowvar=False, bias=True), np.eye(16), atol=1e-3)


def test_pea_on_real_cells_keeps_control_statistics(task):
    """Each PEA correction fitted on a batch's full control set (min_frac = 1, no
    shrinkage) leaves those controls with zero mean and, by kind, the same covariance
    (centering), unit standard deviations (scaling) or the identity covariance (TVN)."""
    ctrl = (task["pert"] < 0) & ~task["test_batch"]
    x = task["tx"].astype(np.float64)
    rng = np.random.default_rng(0)
    means, maps = sim.pea_bank(x, task["batch"], ctrl, 12, 1.0, 0.0, rng)
    kinds = set()
    for b in range(3):
        c = x[(task["batch"] == b) & ctrl]
        cov = np.cov(c, rowvar=False, bias=True)
        for k in range(12):
            out = (c - means[b, k]) @ maps[b, k]
            np.testing.assert_allclose(out.mean(0), 0, atol=1e-3)
            got = np.cov(out, rowvar=False, bias=True)
            if np.allclose(maps[b, k], np.eye(16)):
                kinds.add("center")
                np.testing.assert_allclose(got, cov, rtol=1e-4, atol=1e-4)
            elif np.count_nonzero(maps[b, k] - np.diag(np.diag(maps[b, k]))) == 0:
                kinds.add("scale")
                np.testing.assert_allclose(np.diag(got), 1, atol=1e-3)
            else:
                kinds.add("tvn")
                np.testing.assert_allclose(got, np.eye(16), atol=1e-3)
    assert kinds == {"center", "scale", "tvn"}
    # the held-out batch gets no correction from the bank (it is never trained on)
    assert not maps[3].any()


def test_pea_subsets_differ_from_the_full_control_fit(task):
    ctrl = (task["pert"] < 0) & ~task["test_batch"]
    x = task["tx"].astype(np.float64)
    means, _ = sim.pea_bank(x, task["batch"], ctrl, 8, 0.3, 0.1, np.random.default_rng(1))
    full = x[(task["batch"] == 0) & ctrl].mean(0)
    assert all(not np.allclose(means[0, k], full) for k in range(8))


def test_weak_pairs_are_two_different_cells_of_one_pseudo_perturbation(task):
    data = {k: np.asarray(v) for k, v in task.items()}
    data["pair_other_cell"] = np.array(True)
    cfg = SemiClippedConfig(batch_size=8)
    key = {row.tobytes(): i for i, row in enumerate(data["tx_tvn"].astype(np.float32))}
    img = data["img_emb"].astype(np.float32)
    n = 0
    for x, y in pairs.batches(data, cfg, np.random.default_rng(0), None):
        for xr, yr in zip(x, y, strict=True):
            i = key[xr.tobytes()]
            j = np.flatnonzero((img == yr).all(1))
            assert len(j) == 1 and j[0] != i
            assert data["pert"][j[0]] == data["pert"][i]
            n += 1
    assert n > 20


def test_premise_probe_on_pbmc_reads_training_cells_only(task):
    """The pbmc premise probe (cell type from each side) scores both halves of the genes
    well above chance, and never reads a held-out cell: scrambling those changes nothing."""
    check = method.premise_probe_pbmc(task, 0)
    chance = 1 / len(np.unique(task["pathway"][pairs.train_rows(task)]))
    assert check["image_accuracy"] > 2 * chance and check["expression_accuracy"] > 2 * chance
    held = ~pairs.train_rows(task)
    scrambled = {k: np.array(v, copy=True) for k, v in task.items()}
    for key in ("img_emb", "tx_tvn"):
        scrambled[key][held] = np.random.default_rng(0).normal(size=scrambled[key][held].shape)
    assert method.premise_probe_pbmc(scrambled, 0) == check
