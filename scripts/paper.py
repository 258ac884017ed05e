"""Run the paper profile of some methods and commit-ready results into docs/results/.

    make paper METHODS="ensloss cplearn"            # seeds from params.yaml (seeds.paper)
    make paper METHODS=ensloss SEEDS=5,6,7,8,9       # another seed set (stability check)

What it does, in a fresh copy of the project (tracked and new files, no data/):

1. params.yaml cut down to METHODS (their own sections kept), ``profile: paper``, the
   shared assets those methods read, and the seed set if SEEDS is given;
2. ``python -m reprolab check`` there, so bad params fail before any compute;
3. ``dvc repro`` there (the same stages as ``make run``; Fashion-MNIST is linked in from
   this checkout's data/raw when the images asset needs it, see ``make data``);
4. per method, into ``docs/results/<slug>/`` (``<slug>/seeds-<..>/`` with SEEDS): the
   claims report in the project's format (``claims.md``, ``claims.html`` with its
   figures), ``claims.json``, ``metrics.json``, the figures, and ``run.json`` with the
   date, commit, machine, seeds and wall time. Nothing is written there unless the run
   succeeded; a method's previous results are replaced as a whole.

The copy is kept under ``--work`` (default: a temporary folder) for inspection.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] paper: {msg}", flush=True)


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.strip()


def paper_params(
    params: dict, methods: list[str], seeds: list[int] | None, profile: str = "paper"
) -> dict:
    """params.yaml cut to ``methods`` at ``profile`` (and ``seeds``, if given)."""
    from reprolab.scratch import cut_params

    try:
        return cut_params(params, methods, seeds, profile)
    except SystemExit as exc:
        raise SystemExit(f"paper: {exc}") from None


def copy_project(dest: Path, params: dict) -> None:
    from reprolab.scratch import copy_project as copy

    copy(ROOT, dest, params)


def machine() -> dict:
    import torch

    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
    }


def collect(work: Path, slug: str, dest: Path, info: dict) -> None:
    """The method's results and its own report (same format as data/reports) -> dest."""
    from reprolab.stages import report

    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "plots").mkdir(parents=True)
    ev = work / "data" / "eval" / slug
    for name in ("claims.json", "metrics.json", "metrics.csv"):
        shutil.copy2(ev / name, tmp / name)
    for png in sorted((ev / "plots").glob("*.png")):
        shutil.copy2(png, tmp / "plots" / png.name)
    report.write_views(work, [slug], tmp)
    (tmp / "run.json").write_text(json.dumps(info, indent=2) + "\n")
    if dest.exists():
        shutil.rmtree(dest)
    tmp.rename(dest)


def compare_verdicts(base: Path, other: Path) -> tuple[str, int]:
    """Markdown table of the verdicts of two runs (claims.json of each) and the number of
    verdicts that differ between them."""
    a = {(c["id"], c["precision"]): c for c in json.loads((base / "claims.json").read_text())}
    b = {(c["id"], c["precision"]): c for c in json.loads((other / "claims.json").read_text())}
    seeds_a = json.loads((base / "run.json").read_text())["seeds"]
    seeds_b = json.loads((other / "run.json").read_text())["seeds"]
    lines = [
        f"# Verdict stability: seeds {seeds_a} vs {seeds_b}",
        "",
        "| claim | precision | verdict, seeds A | verdict, seeds B | value A | value B | same |",
        "|---|---|---|---|---|---|---|",
    ]
    differ = opposite = 0
    for key in sorted(set(a) | set(b)):
        va = a.get(key, {}).get("verdict", "absent")
        vb = b.get(key, {}).get("verdict", "absent")
        differ += va != vb
        opposite += {va, vb} == {"reproduced", "not_reproduced"}
        ma = a.get(key, {}).get("measured", {}).get("value", float("nan"))
        mb = b.get(key, {}).get("measured", {}).get("value", float("nan"))
        lines.append(
            f"| {key[0]} | {key[1]} | {va} | {vb} | {ma:.4g} | {mb:.4g} | "
            f"{'yes' if va == vb else '**no**'} |"
        )
    lines += [
        "",
        f"Verdicts that differ between the seed sets: {differ}; of them, reproduced in one "
        f"and not reproduced in the other: {opposite}.",
    ]
    flips = differ
    return "\n".join(lines) + "\n", flips


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("methods", nargs="+", help="method slugs (see `python -m reprolab list`)")
    parser.add_argument("--seeds", help="comma-separated seed set replacing seeds.paper")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results")
    parser.add_argument("--work", type=Path, help="where the copy is run (default: temp)")
    parser.add_argument(
        "--profile",
        choices=("paper", "smoke"),
        default="paper",
        help="smoke: an end-to-end check of METHODS alone; results stay in the copy",
    )
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    try:
        seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else None
    except ValueError:
        parser.error(f"--seeds: expected integers separated by commas, got {args.seeds!r}")
    params = paper_params(
        yaml.safe_load((ROOT / "params.yaml").read_text()), args.methods, seeds, args.profile
    )
    work = args.work or Path(tempfile.mkdtemp(prefix="reprolab-paper-"))
    if work.exists() and any(work.iterdir()):
        parser.error(f"--work {work} is not empty")
    work.mkdir(parents=True, exist_ok=True)
    # the sources the copy runs: the commit and whether anything besides earlier results
    # (docs/results, this script's own output) differed from it when the copy was made
    commit = git("rev-parse", "HEAD")
    dirty = bool(git("status", "--porcelain", "--", ".", ":!docs/results"))
    copy_project(work, params)
    # the copy runs its own sources, whatever the venv's editable install points at
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(work / "src"),
    }
    log(f"{', '.join(args.methods)} at the {args.profile} profile in {work}")
    subprocess.run([sys.executable, "-m", "reprolab", "check"], cwd=work, env=env, check=True)
    t0 = time.perf_counter()
    proc = subprocess.run(["dvc", "repro"], cwd=work, env=env)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        log(f"dvc repro failed after {wall:.0f} s; nothing written to {args.out} (copy: {work})")
        return proc.returncode
    if args.profile != "paper":
        log(f"{args.profile} profile passed in {wall:.0f} s; results in {work}/data")
        return 0
    used = params["seeds"][args.profile]
    for slug in args.methods:
        dest = args.out / slug / (f"seeds-{'-'.join(map(str, used))}" if seeds else "")
        info = {
            "method": slug,
            "profile": "paper",
            "seeds": used,
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "commit": commit,
            "dirty": dirty,
            "machine": machine(),
            "dvc_repro_seconds_all_methods": round(wall, 1),
            "methods_in_run": args.methods,
        }
        collect(work, slug, dest, info)
        log(f"{slug}: results in {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}")
        base = args.out / slug
        if seeds and (base / "claims.json").is_file() and (base / "run.json").is_file():
            text, flips = compare_verdicts(base, dest)
            (dest / "stability.md").write_text(text)
            log(f"{slug}: {flips} verdict(s) differ from seeds.paper's run (stability.md)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
