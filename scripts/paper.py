"""Run the paper profile of some methods in sequential rounds and write commit-ready
results into docs/results/ (see ``reprolab.paper`` for what a run does).

    make paper METHODS="ensloss cplearn"            # rounds until decided or budget spent
    make paper METHODS=ensloss AMEND="why"           # record an amendment in the ledger
    make paper METHODS=ensloss SEEDS=100,101,102     # a held-out block, compared with the pool
    make paper METHODS=ensloss REPLAY=1              # one dvc repro with run.json's seeds
    make paper METHODS=ensloss AMEND="why" LEDGER_ONLY=1   # record an amendment, run nothing
    make paper METHODS=ensloss RESUME=/tmp/reprolab-paper-xxxx   # go on with a killed run
    make paper METHODS=desk_reject CONFIRM=1         # the committed registration, as registered
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("methods", nargs="+", help="method slugs (see `python -m reprolab list`)")
    parser.add_argument("--seeds", help="a held-out block: comma-separated seeds, one look")
    parser.add_argument("--amend", default="", help="why a claim or its setting changed")
    parser.add_argument("--replay", action="store_true", help="one run with run.json's seeds")
    parser.add_argument(
        "--confirm",
        action="store_true",
        help="run the method's committed registration exactly (python -m reprolab confirm)",
    )
    parser.add_argument(
        "--ledger-only",
        action="store_true",
        help="record registrations and amendments (with --amend) in the ledger, run nothing",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results")
    parser.add_argument("--work", type=Path, help="where the copy is run (default: temp)")
    parser.add_argument(
        "--resume", type=Path, help="a killed run's copy: go on from the round it cut short"
    )
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    from reprolab.ops import portable

    try:  # the kernels every stage uses, set here too: run.json records this process's
        portable.apply()
    except portable.PortableError as exc:
        print(f"{Path(__file__).stem}: error: {exc}", file=sys.stderr)
        return 2
    from reprolab import registry
    from reprolab.ops.children import exit_on_signals
    from reprolab.paper import PaperError, PaperRun

    try:
        seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else None
    except ValueError:
        parser.error(f"--seeds: expected integers separated by commas, got {args.seeds!r}")
    run = None
    try:
        run = PaperRun(
            ROOT,
            args.methods,
            seeds=seeds,
            amend=args.amend,
            replay=args.replay,
            confirm=args.confirm,
            out=args.out,
            work=args.work,
            resume=args.resume,
        )
        if args.ledger_only:
            run.record_ledger(run.check_ledger())
        else:
            exit_on_signals()  # SIGTERM / SIGHUP stop the dvc repro it waits on, as Ctrl-C
            run.run()
    except (PaperError, registry.UnknownMethodError) as exc:
        print(f"paper: error: {exc}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, SystemExit) as exc:
        code = exc.code if isinstance(exc, SystemExit) else 130
        if run is not None and run.copy is not None:
            print(
                f"paper: stopped; the units finished so far are kept in {run.copy} (go on "
                f'with: make paper METHODS="{" ".join(args.methods)}" RESUME={run.copy})',
                file=sys.stderr,
            )
        return code if isinstance(code, int) else 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
