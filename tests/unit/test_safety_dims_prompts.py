"""safety_dims' seeded prompt set: balanced cells, topic-held-out split, trigger spans."""

from __future__ import annotations

from collections import Counter

import pytest

from reprolab.methods.safety_dims import prompts as P


def test_cells_are_balanced_and_seeded():
    train, _, _ = P.split_topics(4, seed=0)
    a = P.generate(train, 10, seed=1)
    assert a == P.generate(train, 10, seed=1) and a != P.generate(train, 10, seed=2)
    cells = Counter((p.harmful, p.wrapper) for p in a)
    assert set(cells.values()) == {10} and len(cells) == 6
    assert {p.topic for p in a} <= set(train)
    harmless = P.generate(train, 20, seed=1, kinds=(False,))  # the control's prompts
    assert len(harmless) == len(a) and not any(p.harmful for p in harmless)
    assert set(Counter(p.wrapper for p in harmless).values()) == {20}


def test_held_out_topics_are_disjoint():
    train, calib, test = P.split_topics(4, seed=0, calib_topics=3)
    assert len(test) == 4 and len(calib) == 3
    assert not set(train) & set(test) and not set(train) & set(calib) and not set(calib) & set(test)
    assert sorted(train + calib + test) == list(range(len(P.TOPICS)))
    # the test topics do not depend on how many calibration topics are held out
    assert P.split_topics(4, seed=0)[2] == test
    with pytest.raises(ValueError, match="test_topics"):
        P.split_topics(0, seed=0)
    with pytest.raises(ValueError, match="calib_topics"):
        P.split_topics(4, seed=0, calib_topics=len(P.TOPICS) - 4)


def test_triggers_cover_exactly_the_wrapper_words():
    for wrapper in P.WRAPPERS:
        p = P.make_prompt(3, True, wrapper, frame=1)
        plain = P.make_prompt(3, True, "plain", frame=1)
        assert p.without_triggers() == plain.text  # removing triggers leaves the request
        assert (p.triggers == ()) == (wrapper == "plain")
        for start, end in p.triggers:
            assert p.text[start:end] in "".join(P.WRAPS[wrapper])


def test_targets_follow_the_label():
    harmful = P.make_prompt(0, True, "roleplay", 0)
    benign = P.make_prompt(0, False, "roleplay", 0)
    assert harmful.target == P.REFUSAL and benign.target != P.REFUSAL
    assert P.TOPICS[0][0] in harmful.text and P.TOPICS[0][1] in benign.text
    with pytest.raises(ValueError, match="unknown wrapper"):
        P.make_prompt(0, True, "poem", 0)
