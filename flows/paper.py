"""The paper-profile run as a Prefect flow: the same sequential rounds as ``make paper``
(``reprolab.evidence.running.paper.PaperRun``), with each round's decisions in the flow's log and as a
markdown artifact (``paper-round-<n>``), and the scoreboard (``scoreboard``) published
at the end.

    python -c "from flows.paper import paper; paper(['hyper_attention'])"
    prefect deployment run paper/on-demand -p methods='["hyper_attention"]'   # when served

A claim changed after its results stops the flow before any compute unless ``amend``
gives the reason (recorded in docs/results/ledger/).
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.runtime import flow_run

from reprolab.evidence.judging.claims import DECISIVE
from reprolab.evidence.running.paper import MethodRounds, PaperRun
from reprolab.paths import project_root


def _round_markdown(number: int, state: dict[str, MethodRounds]) -> str:
    lines = [f"# Paper run: round {number}", ""]
    for slug, st in state.items():
        if not st.rounds or st.rounds[-1]["round"] != number:
            continue
        entry = st.rounds[-1]
        verdicts = entry["verdicts"]
        decided = sum(v in DECISIVE for v in verdicts.values())
        lines += [
            f"## {slug}: {decided} of {len(verdicts)} claims decided",
            "",
            f"seeds {entry['seeds']}, {entry['compute_minutes']} min of compute "
            f"({st.minutes:.1f} in all); {'stops: ' + st.stop if st.done else 'next round adds seeds'}",
            "",
            "| verdict | claim |",
            "|---|---|",
            *(f"| {v} | {c} |" for c, v in sorted(verdicts.items(), key=lambda kv: kv[1])),
            "",
        ]
    return "\n".join(lines)


def _run_name() -> str:
    params = flow_run.parameters
    kind = "block" if params.get("seeds") else "replay" if params.get("replay") else "rounds"
    return f"paper-{'-'.join(params.get('methods') or [])}-{kind}"


@flow(name="paper", flow_run_name=_run_name)
def paper(
    methods: list[str],
    seeds: list[int] | None = None,
    amend: str = "",
    replay: bool = False,
    root: str | None = None,
) -> dict:
    """Sequential paper-profile rounds of ``methods`` in a scratch copy of the project at
    ``root``; results into its docs/results/."""
    logger = get_run_logger()
    project = Path(root).resolve() if root else project_root()

    def on_round(number: int, state: dict[str, MethodRounds]) -> None:
        create_markdown_artifact(
            key=f"paper-round-{number}",
            markdown=_round_markdown(number, state),
            description=f"paper run, round {number}",
        )

    run = PaperRun(
        project,
        methods,
        seeds=seeds,
        amend=amend,
        replay=replay,
        log=logger.info,
        on_round=on_round,
    )
    state = run.run()
    results = project / "docs" / "results"
    if (results / "README.md").is_file() and seeds is None and not replay:
        for key, name, what in (("scoreboard", "README.md", "central claims"),):
            if (results / name).is_file():
                create_markdown_artifact(
                    key=key, markdown=(results / name).read_text(), description=what
                )
    return {
        slug: {"rounds": len(st.rounds), "stop": st.stop, "minutes": st.minutes}
        for slug, st in state.items()
    }
