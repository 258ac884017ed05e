"""The pbmc68k setting of Semi-Clipped: scanpy's bundled ``pbmc68k_reduced`` (700
peripheral blood cells x 765 genes, 10x Genomics, Zheng et al. 2017) as a real
transcriptomics side.

What is real and what is constructed (the method's README says the same):

- real: every expression value (``raw.X``, log-normalised counts), the cell-type labels
  (``obs['bulk_labels']``, 10 types: the known grouping) and the cell-cycle phase
  (``obs['phase']``: G1 / S / G2M), which decides the held-out batch.
- constructed: the two views are disjoint random halves of the 765 genes, each read by a
  frozen encoder (PCA fitted on the training batches): the transcriptomics side and the
  image-like side (a stand-in for the paper's morphology embedding; no imaging exists for
  these cells). Controls are the cells of the most frequent label (Dendritic, 240
  cells), so that a batch's control covariance is within-type variation, as
  non-targeting controls of a perturbation screen are. The other cells of one
  (batch, type) are grouped at random into pseudo-perturbations of ``group_size``
  cells; two pseudo-perturbations are related when their cells share a type. Batches:
  the cycling cells (S and G2M) form the held-out batch, the G1 cells are split at
  random (stratified by type) into ``train_batches`` batches, and every batch gets a
  technical effect, a per-gene capture efficiency ``exp(N(0, batch_effect^2))`` that
  multiplies the normalised counts (zeros stay zero).

The file is found with ``importlib.util.find_spec("scanpy")`` (scanpy is not imported:
it is installed with ``--no-deps``, only for this file) and read with h5py; the arrays
are cached in ``<raw_dir>/pbmc68k_reduced.npz``, keyed by the file's SHA-256.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import numpy as np

FILE = "10x_pbmc68k_reduced.h5ad"
CACHE = "pbmc68k_reduced.npz"
INSTALL = "pip install --no-deps scanpy==1.11.5 && pip install h5py==3.16.0"
N_CELLS, N_GENES, N_LABELS = 700, 765, 10
CYCLING = ("S", "G2M")


def source_path() -> Path:
    """Where scanpy's bundled file is, without importing scanpy (whose dependencies are
    not installed)."""
    spec = importlib.util.find_spec("scanpy")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "semiclipped's pbmc68k setting reads the pbmc68k_reduced file bundled with "
            f"scanpy, which is not installed; run: {INSTALL} (or set pbmc_splits: 0)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "datasets" / FILE
    if not path.is_file():
        raise RuntimeError(f"scanpy is installed but {path} is missing; reinstall: {INSTALL}")
    return path


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _categories(f, name: str) -> np.ndarray:
    return np.array([c.decode() for c in f[f"uns/{name}_categories"][:]])


def read_h5ad(path: Path) -> dict[str, np.ndarray]:
    """The arrays of the (legacy-layout) .h5ad this setting reads: ``x`` the log-normalised
    expression of ``raw.X`` (cells x genes, dense), ``genes``, ``cell_type`` codes and
    ``cell_type_names`` (bulk_labels), ``phase`` codes and ``phase_names``."""
    try:
        import h5py
    except ImportError as exc:
        raise RuntimeError(f"reading {FILE} needs h5py; run: {INSTALL}") from exc
    import scipy.sparse as sp

    with h5py.File(path, "r") as f:
        g = f["raw.X"]
        shape = tuple(int(v) for v in g.attrs["h5sparse_shape"])
        x = sp.csr_matrix((g["data"][:], g["indices"][:], g["indptr"][:]), shape=shape)
        obs = f["obs"][:]
        out = {
            "x": np.asarray(x.toarray(), np.float32),
            "genes": np.array([r[0].decode() for r in f["raw.var"][:]]),
            "cell_type": obs["bulk_labels"].astype(np.int64),
            "cell_type_names": _categories(f, "bulk_labels"),
            "phase": obs["phase"].astype(np.int64),
            "phase_names": _categories(f, "phase"),
        }
    return out


def load(raw_dir: Path) -> dict[str, np.ndarray]:
    """The source arrays, from the cache under ``raw_dir`` when it matches the installed
    file, else read from the .h5ad and cached."""
    path = source_path()
    digest = _sha256(path)
    cache = Path(raw_dir) / CACHE
    if cache.is_file():
        with np.load(cache) as z:
            if str(z["sha256"]) == digest:
                return {k: z[k] for k in z.files if k != "sha256"}
    arrays = read_h5ad(path)
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_name(f".{CACHE}.{digest[:8]}.tmp.npz")
    np.savez_compressed(tmp, sha256=np.array(digest), **arrays)
    tmp.replace(cache)
    return arrays


def gene_views(n_genes: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint random halves of the genes: (transcriptomics genes, image-side genes)."""
    perm = rng.permutation(n_genes)
    return np.sort(perm[n_genes // 2 :]), np.sort(perm[: n_genes // 2])


def _pca(x: np.ndarray, fit_rows: np.ndarray, dim: int) -> np.ndarray:
    """A frozen linear encoder: the top ``dim`` principal directions of ``x[fit_rows]``."""
    mean = x[fit_rows].mean(0)
    _, _, vt = np.linalg.svd(x[fit_rows] - mean, full_matrices=False)
    return ((x - mean) @ vt[:dim].T).astype(np.float32)


def make_task(
    src: dict[str, np.ndarray],
    seed: int,
    train_batches: int,
    group_size: int,
    batch_effect: float,
    test_perts: float,
    tx_dim: int,
    img_dim: int,
) -> dict[str, np.ndarray]:
    """One random split of the real cells into batches, controls and pseudo-perturbations,
    with the same arrays as :func:`sim.simulate` (``pert`` -1 marks a control;
    ``pathway`` is the cell type of a pseudo-perturbation's cells) plus ``test_pert``,
    ``test_batch``, ``cell_type`` and ``control_type``. Every pseudo-perturbation of the
    held-out batch is held out (none of its cells is seen in training); of the others a
    fraction ``test_perts`` is."""
    rng = np.random.default_rng(seed)
    x, ct = src["x"].astype(np.float64), src["cell_type"]
    n = len(x)
    control_type = int(np.bincount(ct).argmax())
    cycling = np.isin(src["phase_names"][src["phase"]], CYCLING)
    test_b = train_batches
    batch = np.full(n, test_b)
    for t in np.unique(ct):  # G1 cells: round-robin over the training batches, per type
        rows = np.flatnonzero(~cycling & (ct == t))
        rows = rows[rng.permutation(len(rows))]
        batch[rows] = (np.arange(len(rows)) + rng.integers(train_batches)) % train_batches
    # technical batch effect: per-gene capture efficiency on the normalised counts
    counts = np.expm1(x)
    for b in range(train_batches + 1):
        rows = batch == b
        counts[rows] *= np.exp(batch_effect * rng.normal(size=x.shape[1]))
    x = np.log1p(counts)
    # pseudo-perturbations: random groups of one (batch, type)'s non-control cells
    pert = np.full(n, -1)
    next_id = 0
    for b in range(train_batches + 1):
        for t in np.unique(ct):
            if t == control_type:
                continue
            rows = np.flatnonzero((batch == b) & (ct == t))
            if len(rows) == 0:
                continue
            rows = rows[rng.permutation(len(rows))]
            for g in np.array_split(rows, max(1, len(rows) // group_size)):
                pert[g] = next_id
                next_id += 1
    pert_batch = np.array([batch[pert == p][0] for p in range(next_id)])
    train_perts = np.flatnonzero(pert_batch != test_b)
    held = rng.permutation(train_perts)[: int(round(test_perts * len(train_perts)))]
    held = np.concatenate([held, np.flatnonzero(pert_batch == test_b)])
    test_batch = batch == test_b
    tx_genes, img_genes = gene_views(x.shape[1], rng)
    return {
        "pert": pert,
        "batch": batch,
        "tx": _pca(x[:, tx_genes], ~test_batch, tx_dim),
        "img": _pca(x[:, img_genes], ~test_batch, img_dim),
        "pathway": np.where(pert >= 0, ct, -1),
        "cell_type": ct,
        "control_type": np.array(control_type),
        "test_pert": np.isin(pert, held),
        "test_batch": test_batch,
        "tx_genes": tx_genes,
        "img_genes": img_genes,
    }
