"""The graph data: QM9 heavy-atom molecules (rdkit) and seeded two-community graphs.

A set of graphs is stored dense and padded to ``n_max`` nodes: node types ``x`` (N, n_max)
int8, edge types ``e`` (N, n_max, n_max) int8 (symmetric, 0 = no edge, diagonal 0) and
node counts ``n`` (N,). Padding entries are 0 and are masked by ``n`` everywhere.

QM9 (qm9pack 1.0.3, 130,831 SMILES): heavy atoms only, node types C, N, O, F; bonds
kekulized, so the edge types are none / single / double / triple (no aromatic type).
Molecules with a charged atom or a radical are dropped (formal charges have no place in
the four node types, and dropping them makes the conversion exact: every kept graph
rebuilds to its canonical SMILES, checked in :func:`qm9_graphs`).
"""

from __future__ import annotations

import glob
import importlib.util
from pathlib import Path

import networkx as nx
import numpy as np

from reprolab.core.datasets import MissingSourceError

ATOMS = ("C", "N", "O", "F")
#: edge type index -> bond order (0: no bond)
BOND_ORDERS = (0, 1, 2, 3)
QM9_MAX_NODES = 9


def qm9_smiles() -> list[str]:
    """Every SMILES of qm9pack's CSVs, in the package's order (by QM9 index)."""
    import pandas as pd

    spec = importlib.util.find_spec("qm9pack")
    if spec is None or not spec.submodule_search_locations:
        raise MissingSourceError(
            "QM9 needs the qm9pack package: `.venv/bin/pip install qm9pack==1.0.3` "
            "(the package is not imported: its __init__ needs pkg_resources; only its "
            "data/qm9_part*.csv files are read)"
        )
    folder = Path(spec.submodule_search_locations[0]) / "data"
    files = sorted(glob.glob(str(folder / "qm9_part*.csv")))
    if not files:
        raise MissingSourceError(f"no qm9_part*.csv in {folder}: reinstall qm9pack==1.0.3")
    frames = [pd.read_csv(f, usecols=["Index", "SMILES"]) for f in files]
    table = pd.concat(frames).sort_values("Index")
    return table.SMILES.astype(str).tolist()


def _chem():
    try:
        from rdkit import Chem, RDLogger
    except ImportError as exc:
        raise MissingSourceError(
            "bit_dgdm's QM9 task needs rdkit: `.venv/bin/pip install rdkit==2026.9.1`"
        ) from exc
    RDLogger.DisableLog("rdApp.*")
    return Chem


def smiles_to_graph(smiles: str) -> tuple[np.ndarray, np.ndarray] | None:
    """(node types, edge types) of the kekulized heavy-atom graph, or None when the
    molecule has an atom outside C/N/O/F, a formal charge, a radical, or > 9 atoms."""
    Chem = _chem()
    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        return None
    mol = Chem.RemoveHs(mol)
    Chem.Kekulize(mol, clearAromaticFlags=True)
    n = mol.GetNumAtoms()
    if n == 0 or n > QM9_MAX_NODES:
        return None
    x = np.zeros(n, np.int8)
    for atom in mol.GetAtoms():
        if (
            atom.GetSymbol() not in ATOMS
            or atom.GetFormalCharge() != 0
            or atom.GetNumRadicalElectrons()
        ):
            return None
        x[atom.GetIdx()] = ATOMS.index(atom.GetSymbol())
    e = np.zeros((n, n), np.int8)
    for bond in mol.GetBonds():
        order = bond.GetBondTypeAsDouble()
        if order not in (1.0, 2.0, 3.0):
            return None
        i, j = bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()
        e[i, j] = e[j, i] = BOND_ORDERS.index(int(order))
    return x, e


def build_molecule(x: np.ndarray, e: np.ndarray):
    """An rdkit RWMol with the given heavy atoms and kekulé bonds (not sanitized)."""
    Chem = _chem()
    bond_types = {1: Chem.BondType.SINGLE, 2: Chem.BondType.DOUBLE, 3: Chem.BondType.TRIPLE}
    mol = Chem.RWMol()
    for t in x:
        mol.AddAtom(Chem.Atom(ATOMS[int(t)]))
    n = len(x)
    for i in range(n):
        for j in range(i + 1, n):
            if e[i, j]:
                mol.AddBond(i, j, bond_types[BOND_ORDERS[int(e[i, j])]])
    return mol


def molecule_smiles(x: np.ndarray, e: np.ndarray) -> tuple[str | None, int]:
    """Validity policy (as DiGress's ``compute_validity``): the whole, possibly
    disconnected molecule must pass ``SanitizeMol`` (implicit hydrogens fill free
    valences; a valence above C4 / N3 / O2 / F1 fails). Returns (canonical SMILES of the
    largest fragment, number of fragments), or (None, 0) for an invalid molecule."""
    Chem = _chem()
    mol = build_molecule(x, e)
    try:
        Chem.SanitizeMol(mol)
        frags = Chem.GetMolFrags(mol, asMols=True, sanitizeFrags=True)
    except Exception:  # rdkit raises several sanitization error types
        return None, 0
    largest = max(frags, key=lambda m: m.GetNumAtoms())
    return Chem.MolToSmiles(largest), len(frags)


def canonical(smiles: str) -> str:
    Chem = _chem()
    return Chem.MolToSmiles(Chem.MolFromSmiles(smiles))


def pad(graphs: list[tuple[np.ndarray, np.ndarray]], n_max: int) -> dict[str, np.ndarray]:
    x = np.zeros((len(graphs), n_max), np.int8)
    e = np.zeros((len(graphs), n_max, n_max), np.int8)
    n = np.zeros(len(graphs), np.int64)
    for k, (xi, ei) in enumerate(graphs):
        m = len(xi)
        x[k, :m], e[k, :m, :m], n[k] = xi, ei, m
    return {"x": x, "e": e, "n": n}


def unpad(x: np.ndarray, e: np.ndarray, n: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(x[k, : n[k]], e[k, : n[k], : n[k]]) for k in range(len(n))]


def qm9_graphs(
    n_train: int, n_val: int, n_test: int, seed: int
) -> tuple[dict[str, np.ndarray], dict]:
    """Train / val / test QM9 graphs: a seeded permutation of all molecules, converted in
    that order until each split is full (unconvertible molecules are skipped)."""
    smiles = qm9_smiles()
    order = np.random.default_rng(seed).permutation(len(smiles))
    need = n_train + n_val + n_test
    graphs, kept, skipped = [], [], 0
    for idx in order:
        g = smiles_to_graph(smiles[idx])
        if g is None:
            skipped += 1
            continue
        rebuilt, frags = molecule_smiles(*g)
        if rebuilt is None or frags != 1 or rebuilt != canonical(smiles[idx]):
            raise ValueError(f"QM9 molecule {smiles[idx]!r} does not round-trip ({rebuilt!r})")
        graphs.append(g)
        kept.append(rebuilt)
        if len(graphs) == need:
            break
    out: dict[str, np.ndarray] = {}
    bounds = {
        "train": (0, n_train),
        "val": (n_train, n_train + n_val),
        "test": (n_train + n_val, need),
    }
    for part, (lo, hi) in bounds.items():
        for key, arr in pad(graphs[lo:hi], QM9_MAX_NODES).items():
            out[f"{key}_{part}"] = arr
    out["smiles_train"] = np.array(kept[:n_train], dtype=str)
    return out, {"qm9_pool": len(smiles), "qm9_skipped": skipped}


def community_graph(rng: np.random.Generator, n_range: tuple[int, int], p_in: float, p_out: float):
    """Two communities of sizes floor(n/2), ceil(n/2), n uniform in ``n_range``
    (GraphRNN's community-small layout): a stochastic block model."""
    n = int(rng.integers(n_range[0], n_range[1] + 1))
    sizes = [n // 2, n - n // 2]
    g = nx.stochastic_block_model(
        sizes, [[p_in, p_out], [p_out, p_in]], seed=int(rng.integers(2**31))
    )
    a = nx.to_numpy_array(g, nodelist=range(n), dtype=np.int8)
    return np.zeros(n, np.int8), a


def community_graphs(
    n_train: int,
    n_val: int,
    n_test: int,
    n_range: tuple[int, int],
    p_in: float,
    p_out: float,
    seed: int,
) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for part, count in (("train", n_train), ("val", n_val), ("test", n_test)):
        graphs = [community_graph(rng, n_range, p_in, p_out) for _ in range(count)]
        for key, arr in pad(graphs, n_range[1]).items():
            out[f"{key}_{part}"] = arr
    return out
