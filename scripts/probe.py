"""Probe a candidate paper-profile setting: train it on probe seeds and show its training
signals only (see ``reprolab.probe``).

    make probe METHOD=grokformer SET="epochs=2000 patience=200" NAME=reference-regime
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("method", help="a method slug (see `python -m reprolab list`)")
    parser.add_argument("--name", required=True, help="the probe's name (its record's file)")
    parser.add_argument(
        "--set", nargs="*", default=[], metavar="KEY=VALUE", help="paper-profile overrides"
    )
    parser.add_argument("--seeds", default="100,101", help="probe seeds, comma-separated")
    parser.add_argument("--out", type=Path, help="default: docs/results/<slug>/probes")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    from reprolab.ops import portable

    try:  # the kernels every stage uses, set here too: run.json records this process's
        portable.apply()
    except portable.PortableError as exc:
        print(f"{Path(__file__).stem}: error: {exc}", file=sys.stderr)
        return 2
    from reprolab import registry
    from reprolab.probe import ProbeError, parse_overrides, run_probe

    try:
        seeds = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        parser.error(f"--seeds: expected integers separated by commas, got {args.seeds!r}")
    try:
        run_probe(ROOT, args.method, parse_overrides(args.set), args.name, seeds, args.out)
    except (ProbeError, registry.UnknownMethodError) as exc:
        print(f"probe: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
