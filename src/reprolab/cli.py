"""Command line: ``python -m reprolab <stage> [slug]`` (what dvc.yaml runs).

The router of the stage commands. ``reprolab.__main__`` routes the operations commands
(``reprolab.ops.COMMANDS``: ``worker``, ``mlflow-server``) before this module is
imported; they are listed here too, as aliases forwarding to the same function, for
entry points that call :func:`main` directly (the ``reprolab`` console script). The
stage worker's stage process calls :func:`main` as ``python -m reprolab`` would."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reprolab import ops
from reprolab.paths import STAGES


def version() -> str:
    """The installed package's version (its metadata), or pyproject.toml's in a source
    tree that is not installed."""
    from importlib import metadata

    try:
        return metadata.version("reprolab")
    except metadata.PackageNotFoundError:
        import tomllib

        pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
        try:
            return str(tomllib.loads(pyproject.read_text())["project"]["version"])
        except (OSError, KeyError, tomllib.TOMLDecodeError):
            return "unknown"


class _Version(argparse.Action):
    """``--version``: like argparse's own, but the version is looked up only when asked."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs) -> None:
        kwargs.setdefault("help", "print the version of reprolab and exit")
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(f"reprolab {version()}")
        parser.exit()


class _Slugs:
    """The registered method slugs as a stage's ``choices``, read (folder names under
    ``reprolab/methods/``, no method imported) only when a stage command is parsed or its
    help printed: the other commands do not import the registry (and pydantic)."""

    def _all(self) -> list[str]:
        from reprolab import registry

        return registry.slugs()

    def __contains__(self, slug: object) -> bool:
        return slug in self._all()

    def __iter__(self):
        return iter(self._all())


class _CommandParser(argparse.ArgumentParser):
    """The commands' parser: a stage's unknown slug is the registry's one-line error
    (exit 2) naming the registered methods, as the stage itself words it, instead of
    argparse's usage block and "invalid choice"."""

    def _check_value(self, action: argparse.Action, value: object) -> None:
        # argparse's one check of `choices` (a private hook, unchanged since Python 3.2)
        if action.dest == "slug":
            from reprolab import registry

            try:
                registry.check_slug(str(value))
            except registry.UnknownMethodError as exc:
                self.exit(2, f"error: {exc}\n")
        super()._check_value(action, value)


def report_defect(command: str, exc: BaseException) -> None:
    """What a command that stopped on an unexpected exception prints: one paragraph
    saying that it is a defect of reprolab (bad input gets its own one-line error), the
    exception, and the last line of reprolab's code it passed through; then the
    traceback, for a bug report."""
    import traceback

    package = Path(__file__).resolve().parent  # src/reprolab
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if Path(f.filename).resolve().is_relative_to(package)]
    at = (ours or frames or [None])[-1]
    where = ""
    if at is not None:
        path = Path(at.filename).resolve()
        if path.is_relative_to(package):
            path = path.relative_to(package.parents[1])
        where = f" at {path}:{at.lineno} in {at.name}()"
    stage = command.split(" ", 1)[0] in STAGES
    print(
        f"error: `python -m reprolab {command}` stopped on a defect of reprolab, not on "
        f"its input: {type(exc).__name__}: {exc}{where}."
        + (
            " The stage writes its outputs atomically: those of its last run stand."
            if stage
            else ""
        )
        + " The traceback follows, for a bug report.",
        file=sys.stderr,
    )
    traceback.print_exception(exc, file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="reprolab", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_CommandParser)
    for stage in STAGES:
        p = sub.add_parser(stage, help=f"run the {stage} stage of one method")
        p.add_argument(
            "slug",
            choices=_Slugs(),
            metavar="slug",
            help="the method, one of the registered slugs (python -m reprolab list): %(choices)s",
        )
    p = sub.add_parser("asset", help="build one shared asset into data/assets/<name>")
    p.add_argument("name")
    sub.add_parser("report", help="write data/reports/claims.md from every method's claims")
    p = sub.add_parser("check", help="validate params.yaml and list the methods")
    p.add_argument(
        "--out",
        type=Path,
        help="on success, write the resolved config of every stage into this folder "
        "(the DVC stage `validate`, which every other stage depends on)",
    )
    p.add_argument(
        "-v", "--verbose", action="store_true", help="print every method's resolved config"
    )
    sub.add_parser("list", help="list registered methods")
    sub.add_parser(
        "machine",
        help="print what results depend on besides code and seeds (CPU, its vector "
        "extensions, the kernels torch dispatches to, threads; REPROLAB_PORTABLE) as JSON",
    )
    p = sub.add_parser(
        "scoreboard",
        help="write docs/results/README.md and the method READMEs' verdicts blocks from "
        "committed results",
    )
    p.add_argument("--check", action="store_true", help="exit 1 when the file is out of date")
    for name, text in (
        (
            "paper",
            "the paper profile of some methods in sequential rounds (make paper): "
            "python -m reprolab paper <slug ...> [--seeds] [--amend] [--replay] [--confirm]",
        ),
        (
            "probe",
            "a candidate paper-profile setting's training signals only (make probe): "
            "python -m reprolab probe <slug> --name NAME [--set KEY=VALUE ...]",
        ),
    ):
        p = sub.add_parser(name, help=text, add_help=False, prefix_chars="\0")
        p.add_argument("args", nargs=argparse.REMAINDER)
    p = sub.add_parser(
        "confirm",
        help="confirmatory runs: register one before its data (confirm register <slug>), "
        "list registrations (confirm status <slug>), check one can run (confirm check <slug>)",
        add_help=False,
        prefix_chars="\0",
    )
    p.add_argument("args", nargs=argparse.REMAINDER)
    p = sub.add_parser(
        "trail",
        help="write docs/results/trail.json: every earlier verdict of each central claim, "
        "from git and the ledger (--check: exit 1 when out of date)",
        add_help=False,
        prefix_chars="\0",
    )
    p.add_argument("args", nargs=argparse.REMAINDER)
    p = sub.add_parser(
        "reread",
        help="evaluate the committed results again under the current analysis, from their "
        "committed metrics (no compute); rewrites docs/results/<slug>/claims.json",
        add_help=False,
        prefix_chars="\0",
    )
    p.add_argument("args", nargs=argparse.REMAINDER)
    p = sub.add_parser(
        "compare",
        help="compare two results folders of a method (verdicts, metric drift); "
        "exit 1 when a verdict differs",
    )
    p.add_argument("a", type=Path, help="a results folder (claims.json, metrics.csv)")
    p.add_argument("b", type=Path, help="the other one")
    p.add_argument(
        "--tolerance", type=float, default=0.0, help="a unit differs above this |difference|"
    )
    p.add_argument("--json", type=Path, help="also write the comparison as JSON here")
    for name, (_, _, text) in ops.COMMANDS.items():
        # an alias of `python -m reprolab <name>` (routed by reprolab.__main__ before this
        # module loads): every argument, --help included, goes to the command itself
        p = sub.add_parser(name, help=text, add_help=False, prefix_chars="\0")
        p.add_argument("args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.command in ops.COMMANDS:
        return ops.run_command([args.command, *args.args])

    import json

    import yaml

    from reprolab import config, registry
    from reprolab.core.io import CorruptDataError
    from reprolab.core.tracking import TrackingUnavailableError
    from reprolab.paths import project_root

    expected = (
        config.ConfigError,
        registry.UnknownMethodError,
        CorruptDataError,
        TrackingUnavailableError,
        FileNotFoundError,
    )
    try:
        if args.command == "compare":
            from reprolab.evidence.running import compare

            try:
                cmp = compare.compare(args.a, args.b, args.tolerance)
            except compare.CompareError as exc:
                print(f"reprolab compare: {exc}", file=sys.stderr)
                return 2
            print(compare.to_text(cmp, args.a, args.b), end="")
            if args.json:
                args.json.write_text(json.dumps(cmp.as_json(), indent=2) + "\n")
            return 1 if cmp.verdicts_differ else 0
        if args.command == "machine":
            from reprolab.core.machine import machine

            print(json.dumps(machine(), indent=2))
            return 0
        if args.command == "list":
            for slug in registry.slugs():
                print(f"{slug}\t{registry.get(slug).title}")
            return 0
        root = project_root(Path.cwd())
        if args.command == "paper":
            from reprolab.evidence.running import paper

            return paper.main(args.args, root)
        if args.command == "probe":
            from reprolab.evidence.running import probe

            return probe.main(args.args, root)
        if args.command == "confirm":
            from reprolab.evidence.running import confirm

            return confirm.main(args.args, root)
        if args.command == "trail":
            from reprolab.evidence.running import trail

            return trail.main(args.args, root)
        if args.command == "reread":
            from reprolab.evidence.running import reread

            try:
                return reread.main(args.args, root)
            except reread.RereadError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 2
        if args.command == "scoreboard":
            from reprolab.evidence.running import scoreboard

            path = root / "docs" / "results" / "README.md"
            try:
                wanted = {**scoreboard.pages(root), **scoreboard.readmes(root)}
            except ValueError as exc:  # a README's verdicts markers, an unreadable metrics table
                print(f"error: {exc}", file=sys.stderr)
                return 2
            if args.check:
                stale = [p for p, t in wanted.items() if not p.is_file() or p.read_text() != t]
                for p in stale:
                    print(f"{p}: OUT OF DATE (python -m reprolab scoreboard)")
                print(f"{len(wanted) - len(stale)} of {len(wanted)} files up to date")
                return 1 if stale else 0
            scoreboard.write(root)
            print(f"wrote {path}")
            for p in scoreboard.write_readmes(root):
                print(f"wrote the verdicts block of {p}")
            return 0
        if args.command == "check":
            project = config.load(root / "params.yaml")
            print(f"params.yaml OK: profile={project.profile} seeds={list(project.seeds)}")
            raw = yaml.safe_load((root / "params.yaml").read_text()) or {}
            for kind, items, section in (
                ("", project.methods, raw.get("methods") or {}),
                ("asset ", project.assets, raw.get("assets") or {}),
            ):
                for name, cfg in items.items():
                    if args.verbose:
                        print(f"  {kind}{name}: {cfg.model_dump(mode='json')}")
                        continue
                    mine = ((section.get(name) or {}).get(project.profile)) or {}
                    shown = json.dumps(mine, separators=(", ", ": "))
                    if len(shown) > 100:
                        shown = shown[:97] + "..."
                    print(f"  {kind}{name}: {project.profile} profile, params.yaml sets {shown}")
            if project.methods and not args.verbose:
                print("  (every resolved setting: python -m reprolab check -v)")
            idle = [s for s in registry.slugs() if s not in project.methods]
            if idle:
                print(f"registered but not in params.yaml (not run): {', '.join(idle)}")
            if args.out:
                from reprolab.stages import validate

                if args.out != validate.CONFIG_DIR:
                    parser.error(f"--out must be {validate.CONFIG_DIR} (dvc.yaml's validate stage)")
                validate.run(root)
            return 0
        from reprolab.stages import run_stage

        if args.command == "asset":
            run_stage("assets", args.name, root)
            return 0
        run_stage(args.command, getattr(args, "slug", None), root)
        return 0
    except expected as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a defect of reprolab, not of the input: say so and where
        report_defect(" ".join(argv if argv is not None else sys.argv[1:]), exc)
        return 1
