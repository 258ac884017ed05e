"""claims.json read through one typed model (judging.entries): every committed file
parses and round-trips; a malformed one is refused naming the file and the key."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from reprolab.evidence.judging import claims, entries
from reprolab.evidence.running import compare

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = sorted((ROOT / "docs" / "results").rglob("claims.json"))


def _entry(**overrides) -> dict:
    base = {
        "id": "c",
        "statement": "a beats b",
        "metric": "acc",
        "precision": "fp32",
        "profile": "paper",
        "verdict": "reproduced",
        "central": True,
        "headline": True,
        "effect": 0.05,
        "effect_basis": "paper",
        "paper_value": "+0.1",
        "paper_source": "abstract",
        "paper_setting": "",
        "level": "paper profile",
        "measured": {
            "value": 0.1,
            "ci_low": 0.05,
            "ci_high": 0.15,
            "summary": "a - b",
            "unit": "seed",
            "analysis": "t",
            "seeds": [0, 1, 2],
            "n": 3,
            "per_task": [{"task": "x"}],
        },
        "evidence": {"seeds": [0, 1, 2], "rounds": 1, "decided_round": 1, "rule": "gs"},
    }
    base.update(overrides)
    return base


def test_committed_files_parse_and_round_trip():
    assert len(COMMITTED) >= 19
    n = 0
    for path in COMMITTED:
        raw = json.loads(path.read_text())
        parsed = entries.load(path)
        assert [e.as_dict() for e in parsed] == raw, path
        for e, r in zip(parsed, raw, strict=True):
            assert e.verdict == r["verdict"]
            assert e.headline == claims.is_headline(r)
            assert list(e.measured.seeds) == r["measured"]["seeds"]
            assert e.measured.unit == r["measured"]["unit"]
            value = r["measured"]["value"]
            assert (math.isnan(e.measured.value) and value != value) or e.measured.value == value
            n += 1
    assert n > 500


def test_typed_fields_and_extras():
    (e,) = entries.parse([_entry()], "x")
    assert e.measured.extra == {"per_task": [{"task": "x"}]}
    assert e.measured.n == 3 and e.measured.seeds == (0, 1, 2)
    assert e.decided_round == 1 and e.evidence.rounds == 1
    assert entries.central([e]) is e
    # a file written before the headline field: the fp32 entry is the headline
    old = _entry(precision="int8")
    del old["headline"]
    assert not entries.Entry.from_dict(old).headline


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda d: d.pop("verdict"), "'verdict' is missing"),
        (lambda d: d.update(verdict="sort of"), "verdict 'sort of' is none of"),
        (lambda d: d["measured"].pop("ci_low"), "measured: the key 'ci_low' is missing"),
        (lambda d: d["measured"].update(seeds="0,1"), "'seeds' is str"),
        (lambda d: d.update(central="yes") or d.update(id=3), "'id' is int"),
        (lambda d: d["measured"].update(value="high"), "measured: 'value' is str"),
        (lambda d: d.update(evidence=[1]), "evidence is list, expected an object"),
    ],
)
def test_malformed_entry_named(tmp_path, change, said):
    bad = _entry()
    change(bad)
    path = tmp_path / "claims.json"
    path.write_text(json.dumps([_entry(id="ok"), bad]))
    with pytest.raises(entries.EntryError) as err:
        entries.load(path)
    assert str(path) in str(err.value) and "[1]" in str(err.value)
    assert said in str(err.value)


def test_not_a_claims_file(tmp_path):
    path = tmp_path / "claims.json"
    path.write_text('{"id": "c"}')
    with pytest.raises(entries.EntryError, match="expected a list"):
        entries.load(path)
    path.write_text("[{")
    with pytest.raises(entries.EntryError, match="not JSON"):
        entries.load(path)
    with pytest.raises(entries.EntryError, match="no such claims file"):
        entries.load(tmp_path / "absent.json")


def test_compare_refuses_a_malformed_file(tmp_path):
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "metrics.csv").write_text("task,variant,seed,precision,metric,value\n")
    (tmp_path / "a" / "claims.json").write_text(json.dumps([_entry()]))
    bad = _entry()
    del bad["measured"]["value"]
    (tmp_path / "b" / "claims.json").write_text(json.dumps([bad]))
    with pytest.raises(compare.CompareError, match="'value' is missing"):
        compare.compare(tmp_path / "a", tmp_path / "b")


def test_vocabulary_defined_once():
    assert claims.VERDICTS is entries.VERDICTS
    assert claims.DECISIVE is entries.DECISIVE
    assert set(claims.VERDICT_TEXT) == set(entries.VERDICTS)
