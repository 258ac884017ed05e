"""Re-verification: compare every verdict of a run with the last completed run's.

The ``reverify`` Prefect flow (``flows/reverify.py``) reruns the pipeline in a scratch
copy of the project at a chosen profile, then calls :func:`check` on the report's
``claims.csv``. The baseline is the last completed re-verification at the same profile,
read back from MLflow (experiment ``reverify``, artifact ``claims.csv``): every run,
whatever it found, is recorded there, so a changed verdict is flagged once, by the first
run that sees it, and the next night compares with it.

A claim is keyed by (method, claim, precision). It *changed* when its verdict differs,
when it is new, or when it disappeared (a claim renamed or a method removed is a change a
reader must see too). Measured values that move while the verdict stays are not changes:
they are in the recorded tables for whoever wants to diff them.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from reprolab.evidence.judging.claims import VERDICTS

EXPERIMENT = "reverify"
KEY = ["method", "claim", "precision"]
ABSENT = "absent"
CHANGE_COLUMNS = [*KEY, "before", "after", "measured_before", "measured_after"]


def read_claims(path: Path) -> pd.DataFrame:
    """The report's claims table, with the columns a comparison needs."""
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in [*KEY, "verdict", "measured", "profile"] if c not in table.columns]
    if missing:
        raise ValueError(f"{path}: not a claims table (columns {missing} are missing)")
    dup = table.duplicated(KEY)
    if dup.any():
        first = table[dup].iloc[0]
        raise ValueError(f"{path}: claim {tuple(first[KEY])} appears twice")
    return table


def compare(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """The claims whose verdict changed, appeared or disappeared between two tables."""
    cols = [*KEY, "verdict", "measured"]
    merged = before[cols].merge(
        after[cols], on=KEY, how="outer", suffixes=("_before", "_after"), indicator=True
    )
    merged = merged.fillna(ABSENT)
    changed = merged[merged["verdict_before"] != merged["verdict_after"]]
    out = changed.rename(columns={"verdict_before": "before", "verdict_after": "after"})
    return out[CHANGE_COLUMNS].sort_values(KEY).reset_index(drop=True)


def changes_markdown(changes: pd.DataFrame, baseline: str) -> str:
    if changes.empty:
        return f"No verdict changed since {baseline}.\n"
    lines = [
        f"**{len(changes)} verdict(s) changed** since {baseline}:",
        "",
        "| method | claim | precision | before | after | measured before | measured after |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in changes.itertuples(index=False):
        lines.append(
            f"| {row.method} | {row.claim} | {row.precision} | {row.before} | {row.after} "
            f"| {row.measured_before} | {row.measured_after} |"
        )
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Outcome:
    run_id: str
    baseline_run_id: str | None
    changes: pd.DataFrame
    markdown: str

    @property
    def changed(self) -> int:
        return len(self.changes)


def last_completed(client, profile: str) -> tuple[str, pd.DataFrame] | None:
    """The last completed re-verification at ``profile``: its run id and claims table."""
    exp = client.get_experiment_by_name(EXPERIMENT)
    if exp is None:
        return None
    runs = client.search_runs(
        [exp.experiment_id],
        filter_string=f"attributes.status = 'FINISHED' and tags.`reprolab.profile` = '{profile}'",
        order_by=["attributes.start_time DESC"],
        max_results=1,
    )
    if not runs:
        return None
    run_id = runs[0].info.run_id
    with tempfile.TemporaryDirectory() as tmp:
        path = client.download_artifacts(run_id, "claims.csv", tmp)
        return run_id, read_claims(Path(path))


def check(
    root: Path, claims_csv: Path, profile: str, tags: dict[str, str] | None = None
) -> Outcome:
    """Compare ``claims_csv`` with the last completed re-verification at ``profile`` and
    record this one in the MLflow store of project ``root`` (``mlflow.env``) as the next
    baseline. The first run has no baseline: nothing is flagged, it becomes the baseline."""
    from reprolab.core import tracking

    current = read_claims(claims_csv)
    profiles = set(current["profile"])
    if profiles != {profile}:
        raise ValueError(f"{claims_csv}: claims of profile(s) {sorted(profiles)}, not {profile!r}")
    tracking.load_env(root)
    tracker = tracking.open_tracker(root, EXPERIMENT, "reverify", profile)
    client = tracker.client
    previous = last_completed(client, profile)
    if previous is None:
        baseline_id, changes = None, compare(current.iloc[0:0], current.iloc[0:0])
        markdown = "First re-verification at this profile: it is the baseline from now on.\n"
    else:
        baseline_id, before = previous
        changes = compare(before, current)
        markdown = changes_markdown(changes, f"MLflow run {baseline_id}")
    counts = current["verdict"].value_counts()
    run = client.create_run(
        tracker.experiment_id,
        run_name=f"reverify-{profile}",
        tags={
            **(tags or {}),
            "reprolab.kind": "reverify",
            "reprolab.profile": profile,
            "reprolab.verdicts_changed": str(len(changes)),
            "reprolab.baseline_run_id": baseline_id or "",
        },
    )
    run_id = run.info.run_id
    try:
        for verdict in VERDICTS:
            client.log_metric(run_id, f"claims_{verdict}", float(counts.get(verdict, 0)))
        client.log_metric(run_id, "verdicts_changed", float(len(changes)))
        client.log_artifact(run_id, str(claims_csv))
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "changes.csv"
            changes.to_csv(path, index=False)
            client.log_artifact(run_id, str(path))
            (Path(tmp) / "changes.md").write_text(markdown)
            client.log_artifact(run_id, str(Path(tmp) / "changes.md"))
    except BaseException:
        client.set_terminated(run_id, "FAILED")  # never a baseline
        raise
    client.set_terminated(run_id, "FINISHED")
    return Outcome(run_id, baseline_id, changes, markdown)
