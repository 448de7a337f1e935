"""Ensemble: union and majority over member spans, overlap resolution, config validation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from pipeline.detectors.base import BaseDetector, ConfigError
from pipeline.detectors.ensemble import combine_spans, with_member_configs
from pipeline.registry import build, register
from pipeline.types import Detection, Dialogue, Message, Span


class _Fixed(BaseDetector):
    """A test member that returns spans given in its config, keyed by message index."""

    name = "fixed_for_ensemble_tests"
    version = "7"
    defaults: Mapping[str, Any] = {"spans": {}, "segment": None}

    def detect(self, dialogue: Dialogue) -> list[Detection]:
        out = []
        for m in dialogue.messages:
            raw = self.config["spans"].get(str(m.index), [])
            spans = tuple(Span(s, e, label, score, "fixed") for s, e, label, score in raw)
            out.append(Detection(dialogue.id, m.index, spans, self.config["segment"]))
        return out


register("fixed_for_ensemble_tests")(lambda config: _Fixed(config))


def member(spans: dict[str, list], segment: str | None = None) -> dict:
    return {"name": "fixed_for_ensemble_tests", "config": {"spans": spans, "segment": segment}}


DIALOGUE = Dialogue("d", (Message("Hi Maria Lopez, call 555-123-4567", index=0),))


def S(start: int, end: int, label: str = "NAME", score: float = 1.0) -> Span:
    return Span(start, end, label, score)


@pytest.mark.parametrize(
    ("members", "mode", "expected"),
    [
        # union keeps everything any member found
        ([[S(3, 8)], [S(21, 33, "PHONE")]], "union", [(3, 8, "NAME"), (21, 33, "PHONE")]),
        # union merges overlapping spans into their hull
        ([[S(3, 8)], [S(3, 14)]], "union", [(3, 14, "NAME")]),
        # majority (2 of 3) keeps only what two members agree on
        ([[S(3, 8)], [S(3, 8)], [S(21, 33, "PHONE")]], "majority", [(3, 8, "NAME")]),
        # majority picks the range most members gave
        ([[S(3, 8)], [S(3, 8)], [S(3, 14)]], "majority", [(3, 8, "NAME")]),
        # nobody agrees: nothing
        ([[S(3, 8)], [], [S(21, 33, "PHONE")]], "majority", []),
        # nobody found anything
        ([[], []], "union", []),
    ],
)
def test_combine_spans(members, mode, expected) -> None:
    got = combine_spans(members, mode=mode)
    assert [(s.start, s.end, s.label) for s in got] == expected


def test_label_is_the_score_weighted_majority() -> None:
    got = combine_spans(
        [[S(0, 5, "NAME", 0.9)], [S(0, 5, "LOCATION", 0.4)], [S(0, 5, "NAME", 0.8)]],
        mode="union",
    )
    assert [(s.label, s.score) for s in got] == [("NAME", 0.9)]


def test_min_votes_overrides_majority() -> None:
    members = [[S(3, 8)], [], [], []]
    assert combine_spans(members, mode="majority", min_votes=1)
    assert not combine_spans(members, mode="majority")


def test_chains_of_overlaps_become_one_group() -> None:
    got = combine_spans([[S(0, 5)], [S(4, 10)], [S(9, 15)]], mode="union")
    assert [(s.start, s.end) for s in got] == [(0, 15)]


def test_result_never_overlaps() -> None:
    got = combine_spans(
        [[S(0, 5), S(10, 20)], [S(3, 12)], [S(30, 31, "AGE")]], mode="union", resolution="best"
    )
    for a, b in zip(got, got[1:], strict=False):
        assert a.end <= b.start


def test_ensemble_detector_union_and_segments() -> None:
    detector = build(
        "ensemble",
        {
            "members": [
                member({"0": [[3, 8, "NAME", 0.9]]}),
                member({"0": [[21, 33, "PHONE", 0.95]]}, segment="NON-MATH"),
            ],
            "mode": "union",
        },
    )
    (det,) = detector.detect(DIALOGUE)
    assert [(s.start, s.end, s.label) for s in det.spans] == [(3, 8, "NAME"), (21, 33, "PHONE")]
    assert det.segment == "NON-MATH"
    assert detector.model_version.startswith("ensemble@1.2.0[union](fixed_for_ensemble_tests@7,")


def test_ensemble_detect_many_keeps_dialogue_order() -> None:
    detector = build(
        "ensemble", {"members": [member({"0": [[3, 8, "NAME", 1.0]]})], "chunk_size": 2}
    )
    dialogues = [Dialogue(str(i), DIALOGUE.messages) for i in range(5)]
    out = list(detector.detect_many(dialogues))
    assert [dets[0].dialogue_id for dets in out] == ["0", "1", "2", "3", "4"]


def test_ensemble_over_real_detectors() -> None:
    detector = build(
        "ensemble",
        {"members": [{"name": "rules"}, {"name": "rules", "config": {"labels": ["PHONE"]}}],
         "mode": "majority"},
    )  # fmt: skip
    (det,) = detector.detect(DIALOGUE)
    assert [(s.start, s.end, s.label) for s in det.spans] == [(21, 33, "PHONE")]


@pytest.mark.parametrize(
    "config",
    [
        {"members": []},
        {"tagger": 5},
        {"presidio": "yes"},
        {"members": [{"name": "rules"}], "tagger": {}},
        {"members": [{"name": "rules"}], "presidio": True},
        {"members": [{"name": "rules"}], "speakers": {}},
        {"speakers": ["T"]},
        {"speakers": {"roles": "T"}},
        {"tagger": {"policy": "loose"}},
        {"members": [{"config": {}}]},
        {"members": [{"name": "rules", "extra": 1}]},
        {"members": [{"name": "rules"}], "mode": "vote"},
        {"members": [{"name": "rules"}], "resolution": "widest"},
        {"members": [{"name": "rules"}], "min_votes": 2},
        {"members": [{"name": "rules", "config": {"colour": 1}}]},
        {"members": [{"name": "ensemble", "config": {}}]},
    ],
)
def test_bad_config(config) -> None:
    with pytest.raises(ConfigError):
        build("ensemble", config)


def test_default_ensemble_is_the_tagger_maths_safe_rules_and_speakers() -> None:
    from pipeline.detectors.ensemble import STRUCTURED_LABELS

    det = build("ensemble", {})
    assert [m.name for m in det.members] == ["tagger", "rules", "speakers"]
    assert det.members[1].config["labels"] == list(STRUCTURED_LABELS)
    text = "Stand up, Max. I'm 12 years old, 9351 / 7 = 1335.857, mail max@school.org"
    (found,) = det.members[1].detect(Dialogue("d", (Message(text, index=0),)))
    assert [(text[s.start : s.end], s.label) for s in found.spans] == [("max@school.org", "EMAIL")]
    with_presidio = build("ensemble", {"presidio": True, "tagger": {"policy": "strict"}})
    assert [m.name for m in with_presidio.members] == ["tagger", "rules", "speakers", "presidio"]
    assert with_presidio.members[0].config["policy"] == "strict"
    assert with_presidio.members[3].config["preset"] == "tuned"


def test_default_tagger_member_resolves_its_model_the_tagger_detector_way(tmp_path) -> None:
    from pipeline.detectors.base import DetectorError

    det = build("ensemble", {"tagger": {"model_dir": str(tmp_path)}})
    with pytest.raises(DetectorError, match="^tagger: "):
        next(det.detect_many([DIALOGUE]))


def test_the_member_configs_are_walked_once_the_same_way_for_every_caller():
    def mark(name: str, config: Mapping[str, Any]) -> dict[str, Any]:
        return {**config, "seen": name}

    default = {"mode": "union", "tagger": {"model_path": "m"}}
    assert with_member_configs(default, mark) == {"mode": "union", "tagger": {"model_path": "m", "seen": "tagger"}}
    assert with_member_configs({"mode": "union"}, mark) == {"mode": "union"}  # no tagger config: nothing to fill
    members = {"members": [{"name": "rules", "config": {"x": 1}}, {"name": "tagger"}, "junk", {"config": {}}]}
    assert with_member_configs(members, mark) == {"members": [
        {"name": "rules", "config": {"x": 1, "seen": "rules"}}, {"name": "tagger", "config": {"seen": "tagger"}},
        "junk", {"config": {}}]}  # malformed members are left for the ensemble to refuse
    assert with_member_configs({"members": "not a list"}, mark) == {"members": "not a list"}
    assert default == {"mode": "union", "tagger": {"model_path": "m"}}  # the input is not changed
