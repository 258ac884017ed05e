"""`make paper`'s sequential rounds for real (the Prefect flow `paper` in ephemeral mode,
DVC, the stages, MLflow's SQLite store) on a tiny copy of one method: rounds add seeds to
undecided claims only, a decided claim keeps its seeds, the results say why a claim
stayed undecided, each round is a Prefect artifact, a replay of run.json's params gives
the same verdicts, and the ledger stops a changed definition."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import copy_project, run

METHOD = "w2s_bregman"

pytestmark = pytest.mark.pipeline

# the paper flow in ephemeral Prefect (no server), then what Prefect recorded
FLOW = """
import json, sys
from prefect import get_client
from flows.paper import paper

state = paper(methods=[sys.argv[2]], root=sys.argv[1], return_state=True)
result = state.result() if state.is_completed() else None
with get_client(sync_client=True) as client:
    keys = sorted({a.key for a in client.read_artifacts() if a.key})
print("RESULT " + json.dumps({"state": state.type.value, "result": result, "artifacts": keys}))
"""


@pytest.fixture(scope="module")
def paper_project(tmp_path_factory) -> Path:
    root = copy_project(tmp_path_factory.mktemp("paper") / "project", methods=(METHOD,))
    params = yaml.safe_load((root / "params.yaml").read_text())
    section = params["methods"][METHOD]
    section["paper"] = dict(section["smoke"])  # the tiny config, at the paper profile
    params["seeds"]["paper"] = [0, 1, 2]
    params["evidence"] = {"smoke": {}, "paper": {"step": 1, "max_seeds": 5, "budget_minutes": 20}}
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    (root / "docs" / "results" / "ledger" / f"{METHOD}.jsonl").unlink(missing_ok=True)
    shutil.rmtree(root / "docs" / "results" / METHOD, ignore_errors=True)
    subprocess.run(["git", "commit", "-qam", "paper-profile test params"], cwd=root, check=True)
    return root


def _run(root: Path, **kw):
    from reprolab.evidence.running.paper import PaperRun

    lines: list[str] = []
    state = PaperRun(root, [METHOD], out=root / "docs" / "results", log=lines.append, **kw).run()
    return state[METHOD], lines


@pytest.fixture(scope="module")
def flow_run(paper_project) -> dict:
    """One whole paper run through the Prefect flow (what Prefect recorded); the killed
    run below is compared with its results."""
    root = paper_project
    proc = run(["python", "-c", FLOW, str(root), METHOD], root, timeout=1200)
    return json.loads(proc.stdout.split("RESULT ", 1)[1].splitlines()[0])


def test_rounds_add_seeds_until_decided_and_replay_reproduces(paper_project, flow_run):
    from reprolab.evidence import ledger

    root, flow = paper_project, flow_run
    assert flow["state"] == "COMPLETED"
    rounds = flow["result"][METHOD]["rounds"]
    assert set(flow["artifacts"]) >= {*(f"paper-round-{i}" for i in range(1, rounds + 1))}
    assert {"scoreboard"} <= set(flow["artifacts"])
    out = root / "docs" / "results" / METHOD
    info = json.loads((out / "run.json").read_text())
    claims = json.loads((out / "claims.json").read_text())
    # no claim of w2s_bregman is on wall time: no timed_claims.json beside claims.json
    assert not (out / "timed_claims.json").exists()
    heads = {c["id"]: c for c in claims if c["headline"]}
    # the ledger registered every claim before the first round
    events = [e["event"] for e in ledger.read(root, METHOD)]
    assert events[0] == "config" and events.count("registered") == len(heads)
    # rounds went on while some claim was undecided, each adding one seed (step 1)
    assert len(info["rounds"]) == rounds >= 2
    seen = [len(r["seeds"]) for r in info["rounds"]]
    assert seen == sorted(seen) and seen[0] == 3 and seen[-1] <= 5
    added = info["params"]["paper"]["evidence"]["added"]
    assert added and all(len(rule["seeds"]) == 1 for rule in added)
    for cid, c in heads.items():
        ev, seeds = c["evidence"], c["measured"]["seeds"]
        if ev["decided_round"]:  # decided: it kept the seeds of the round it was decided in
            assert c["verdict"] in ("reproduced", "not_reproduced")
            assert len(seeds) == 3 + ev["decided_round"] - 1
        elif c["verdict"] == "inconclusive":  # undecided: says why
            assert ev["why"], cid
        # a claim reads its own seeds: the first look's and those added for it
        mine = {s for rule in added if cid in rule["claims"] for s in rule["seeds"]}
        assert set(seeds) <= {0, 1, 2} | mine
    # the scoreboard row of the method is its central claim's verdict on file
    board = (root / "docs" / "results" / "README.md").read_text()
    central = next(c for c in heads.values() if c["central"])
    assert f"| {METHOD} | `{central['id']}` | **{central['verdict'].replace('_', ' ')}** |" in board
    # one dvc repro with run.json's params gives the same verdicts and values
    _run(root, replay=True)
    replay = json.loads((out / "replay" / "replay.json").read_text())
    assert replay == {"verdicts_differ": 0, "differences": [], "max_value_difference": 0.0}


def test_a_changed_definition_stops_the_run_before_any_compute(tmp_path):
    from reprolab.evidence.running.paper import PaperError, PaperRun

    root = copy_project(tmp_path / "project", methods=(METHOD,))
    (root / "docs" / "results" / "ledger" / f"{METHOD}.jsonl").unlink(missing_ok=True)
    first = PaperRun(root, [METHOD], out=tmp_path / "out", log=lambda m: None)
    first.record_ledger(first.check_ledger())  # what a first paper run registers
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["methods"][METHOD]["paper"] = {"steps": 6}  # a paper-profile setting changes
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    work = tmp_path / "work"
    with pytest.raises(PaperError, match=rf"{METHOD}\.\w+: changed after results"):
        PaperRun(root, [METHOD], out=tmp_path / "out", work=work, log=lambda m: None).run()
    assert not work.exists()  # stopped before the copy, let alone any compute


class Killed(Exception):
    """Stands for the process being killed between rounds."""


def test_a_killed_run_goes_on_from_its_copy_with_the_same_results(
    paper_project, flow_run, tmp_path
):
    from reprolab.evidence.running.paper import STATE, PaperError, PaperRun
    from reprolab.ops import worker

    root = paper_project
    whole = root / "docs" / "results"  # the uninterrupted run (the flow's, same params)
    assert flow_run["state"] == "COMPLETED"
    assert len(json.loads((whole / METHOD / "run.json").read_text())["rounds"]) >= 2, (
        "the tiny setting must need more than one round"
    )

    def kill(number, _state):
        if number == 1:
            raise Killed

    work, cut = tmp_path / "work", tmp_path / "cut"
    with pytest.raises(Killed):
        PaperRun(root, [METHOD], out=cut, work=work, on_round=kill, log=lambda m: None).run()
    assert not cut.exists()  # nothing written before the run finished
    # the round's stages forked from the copy's own stage worker, stopped with the run
    log = (work / ".reprolab" / "worker.log").read_text()
    served = re.search(r"exiting \(asked to stop\) after (\d+) requests", log)
    assert served and int(served.group(1)) >= 5, log[-2000:]
    assert worker.status(str(work)) is None
    saved = json.loads((work / STATE).read_text())
    assert saved["round"] == 1 and saved["commit"]
    with pytest.raises(PaperError, match="ran w2s_bregman, not"):
        PaperRun(root, ["dp_noise"], out=cut, resume=work, log=lambda m: None).run()
    # a probe record that chose the setting (make probe) stays beside the new results
    probe = cut / METHOD / "probes" / "regime.md"
    probe.parent.mkdir(parents=True)
    probe.write_text("# Probe `regime`\n")
    with pytest.raises(PaperError, match="raises none"):  # nothing to amend yet
        PaperRun(root, [METHOD], out=cut, resume=work, amend="more", log=lambda m: None).run()
    # the budget raised meanwhile (an amendment) is taken over; the resumed round's
    # stages then rerun on reused units, and its compute is still what it measured
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["methods"][METHOD]["paper"]["evidence"] = {"budget_minutes": 21}
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    lines: list[str] = []
    PaperRun(root, [METHOD], out=cut, resume=work, amend="budget", log=lines.append).run()
    assert any("resuming round 1" in line for line in lines)
    assert any("evidence budget 20 -> 21 min" in line for line in lines), lines
    assert probe.read_text() == "# Probe `regime`\n" and (cut / METHOD / "run.json").is_file()
    a = json.loads((whole / METHOD / "run.json").read_text())
    b = json.loads((cut / METHOD / "run.json").read_text())
    assert [r["seeds"] for r in b["rounds"]] == [r["seeds"] for r in a["rounds"]]
    assert [r["verdicts"] for r in b["rounds"]] == [r["verdicts"] for r in a["rounds"]]
    assert b["params"]["paper"]["evidence"].pop("budget_minutes") == 21
    assert b["params"] == a["params"] and b["commit"] == a["commit"]
    measured = saved["measured"]
    assert measured["round"] == 1 and measured["minutes"][METHOD] > 0
    assert b["rounds"][0]["compute_minutes"] == round(measured["minutes"][METHOD], 2)
    assert [r["round"] for r in b["resumed"]] == [1] and "resumed" not in a
    # the killed attempt's dvc repro time is kept (the resumed round found it all done)
    assert b["dvc_repro_seconds_all_methods"] >= saved["wall"] > 0
    va = {(c["id"], c["precision"]): c["measured"].get("value") for c in _claims(whole)}
    vb = {(c["id"], c["precision"]): c["measured"].get("value") for c in _claims(cut)}
    assert va == vb


def _claims(out: Path) -> list[dict]:
    return json.loads((out / METHOD / "claims.json").read_text())
