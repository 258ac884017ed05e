"""Compare two results folders of one method: a committed ``docs/results/<slug>/`` and a
rerun elsewhere, or two seed sets.

    python -m reprolab compare docs/results/dp_noise my-rerun/dp_noise [--tolerance 1e-6]

Each folder holds the method's ``claims.json`` and ``metrics.csv`` (or ``metrics.csv.gz``; what ``make paper``
writes, or ``data/eval/<slug>/`` of a run). The comparison reports:

- **verdicts**, claim by claim and precision by precision: the same, different, or on
  one side only;
- **metric drift**, per metric and precision over the units both folders measured
  (joined on task, variant, seed and the unit parameters): the largest absolute and
  relative difference, how many units differ by more than ``--tolerance``, and the
  units that differ most;
- units measured on one side only (another seed set shares none).

The exit status is 1 when any verdict differs (a claim on one side only counts), 0 when
every verdict agrees, 2 when a folder is not a results folder.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reprolab.evidence.judging import entries
from reprolab.evidence.judging.entries import Entry

#: a results folder keeps metrics.csv gzipped above this size (git holds results, not data)
METRICS_GZIP_BYTES = 1 << 20


def metrics_file(folder: Path) -> Path:
    """A results folder's metrics table: ``metrics.csv``, or ``metrics.csv.gz`` where
    ``make paper`` compressed a large one (pandas reads both)."""
    plain = Path(folder) / "metrics.csv"
    packed = plain.with_name("metrics.csv.gz")
    return packed if packed.is_file() and not plain.is_file() else plain


def store_metrics(source: Path, folder: Path) -> Path:
    """Copy a run's metrics.csv into a results folder: as it is, or gzipped (no name or
    time in the header, so the same table gives the same bytes) above
    :data:`METRICS_GZIP_BYTES`."""
    import gzip
    import shutil

    if source.stat().st_size <= METRICS_GZIP_BYTES:
        return Path(shutil.copy2(source, folder / "metrics.csv"))
    target = folder / "metrics.csv.gz"
    with (
        open(source, "rb") as src,
        open(target, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as out,
    ):
        shutil.copyfileobj(src, out)
    return target


#: metrics.csv columns that are not part of a unit's key
VALUE_COLUMNS = ("value",)
KEY_BASE = ("task", "variant", "seed", "precision", "metric")


class CompareError(ValueError):
    """A folder that cannot be compared (the message names the file)."""


@dataclass
class Comparison:
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    drift: list[dict[str, Any]] = field(default_factory=list)
    only_a: int = 0
    only_b: int = 0
    shared_units: int = 0

    @property
    def verdicts_differ(self) -> int:
        return sum(not v["same"] for v in self.verdicts)

    def as_json(self) -> dict[str, Any]:
        return {
            "verdicts_differ": self.verdicts_differ,
            "verdicts": self.verdicts,
            "drift": self.drift,
            "rows_only_in_a": self.only_a,
            "rows_only_in_b": self.only_b,
            "shared_rows": self.shared_units,
        }


def _read(folder: Path) -> tuple[list[Entry], Any]:
    import pandas as pd

    claims_path, metrics_path = folder / "claims.json", metrics_file(folder)
    for path in (claims_path, metrics_path):
        if not path.is_file():
            raise CompareError(f"{path} is missing: {folder} is not a results folder")
    try:
        claims = entries.load(claims_path)
    except entries.EntryError as exc:
        raise CompareError(str(exc)) from exc
    table = pd.read_csv(metrics_path)
    missing = [c for c in (*KEY_BASE, "value") if c not in table.columns]
    if missing:
        raise CompareError(f"{metrics_path} lacks the column(s) {', '.join(missing)}")
    return claims, table


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and math.isfinite(x)


def compare(a: Path, b: Path, tolerance: float = 0.0, worst: int = 3) -> Comparison:
    """Compare the results folders ``a`` and ``b`` (see the module doc)."""
    claims_a, table_a = _read(Path(a))
    claims_b, table_b = _read(Path(b))
    out = Comparison()
    by_a = {(c.id, c.precision): c for c in claims_a}
    by_b = {(c.id, c.precision): c for c in claims_b}
    for key in sorted(set(by_a) | set(by_b)):
        ca, cb = by_a.get(key), by_b.get(key)
        va = ca.verdict if ca else "absent"
        vb = cb.verdict if cb else "absent"
        xa = ca.measured.value if ca else None
        xb = cb.measured.value if cb else None
        out.verdicts.append(
            {
                "claim": key[0],
                "precision": key[1],
                "a": va,
                "b": vb,
                "same": va == vb,
                "value_a": xa if _finite(xa) else None,
                "value_b": xb if _finite(xb) else None,
            }
        )
    keys = [c for c in table_a.columns if c not in VALUE_COLUMNS]
    if set(keys) != {c for c in table_b.columns if c not in VALUE_COLUMNS}:
        raise CompareError(
            f"metrics.csv columns differ: {sorted(table_a.columns)} vs {sorted(table_b.columns)}"
        )
    ta, tb = table_a.copy(), table_b.copy()
    for t in (ta, tb):  # NaN keys (a seed-free unit's seed) must join
        t[keys] = t[keys].astype(str)
    joined = ta.merge(tb, on=keys, how="outer", suffixes=("_a", "_b"), indicator=True)
    out.only_a = int((joined["_merge"] == "left_only").sum())
    out.only_b = int((joined["_merge"] == "right_only").sum())
    both = joined[joined["_merge"] == "both"].copy()
    out.shared_units = len(both)
    both["abs"] = (both["value_a"] - both["value_b"]).abs()
    scale = both[["value_a", "value_b"]].abs().max(axis=1)
    both["rel"] = (both["abs"] / scale).where(scale > 0, 0.0)
    unit_cols = [c for c in keys if c not in ("precision", "metric")]
    for (metric, precision), group in both.groupby(["metric", "precision"], sort=True):
        finite = group[group["abs"].notna()]
        differ = finite[finite["abs"] > tolerance]
        top = differ.sort_values("abs", ascending=False).head(worst)
        out.drift.append(
            {
                "metric": metric,
                "precision": precision,
                "units": len(group),
                "units_differ": len(differ),
                "max_abs": float(finite["abs"].max()) if len(finite) else 0.0,
                "max_rel": float(finite["rel"].max()) if len(finite) else 0.0,
                "worst_units": [
                    {
                        "unit": " ".join(f"{c}={row[c]}" for c in unit_cols),
                        "a": row["value_a"],
                        "b": row["value_b"],
                    }
                    for _, row in top.iterrows()
                ],
                "nan_mismatch": int(group["abs"].isna().sum()),
            }
        )
    return out


def to_text(cmp: Comparison, a: Path, b: Path) -> str:
    lines = [f"A: {a}", f"B: {b}", ""]
    differ = [v for v in cmp.verdicts if not v["same"]]
    lines.append(
        f"verdicts: {len(cmp.verdicts) - len(differ)} of {len(cmp.verdicts)} (claim, precision) "
        f"agree, {len(differ)} differ"
    )
    for v in differ:
        lines.append(f"  DIFFERS {v['claim']} [{v['precision']}]: A {v['a']}, B {v['b']}")
    lines += [
        "",
        f"metrics: {cmp.shared_units} rows in both, {cmp.only_a} only in A, {cmp.only_b} only in B",
    ]
    moved = [d for d in cmp.drift if d["units_differ"] or d["nan_mismatch"]]
    if not cmp.shared_units:
        lines.append("drift: no unit measured in both (other seeds?): nothing to compare")
    else:
        lines.append(
            f"drift: {len(moved)} of {len(cmp.drift)} (metric, precision) pairs differ"
            + ("" if moved else " (identical values)")
        )
    for d in moved:
        lines.append(
            f"  {d['metric']} [{d['precision']}]: {d['units_differ']} of {d['units']} units, "
            f"max |diff| {d['max_abs']:.3g}, max relative {d['max_rel']:.3g}"
        )
        for w in d["worst_units"]:
            lines.append(f"      {w['unit']}: {w['a']:.6g} vs {w['b']:.6g}")
    return "\n".join(lines) + "\n"
