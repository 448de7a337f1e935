"""The ``speakers`` detector: the mentions of a dialogue's named speakers become NAME suggestions."""

from __future__ import annotations

import pytest

from pipeline.detectors.base import ConfigError
from pipeline.registry import available, build
from pipeline.types import Dialogue, Message


def marked(turns: list[tuple[str, str]], config: dict | None = None) -> list[list[str]]:
    """What the detector marks in each turn ``(speaker, text)`` of one dialogue."""
    dialogue = Dialogue("lesson", tuple(Message(text, speaker=speaker, index=k)
                                        for k, (speaker, text) in enumerate(turns)))
    detections = build("speakers", config or {}).detect(dialogue)
    assert [d.index for d in detections] == [m.index for m in dialogue.messages]
    out = []
    for message, detection in zip(dialogue.messages, detections, strict=True):
        assert all(s.label == "NAME" and s.source == "speakers" for s in detection.spans)
        out.append([message.text[s.start : s.end] for s in detection.spans])
    return out


def test_a_speaker_named_in_another_turn_is_marked():
    assert marked([("T", "Caleb, talk to me."), ("Caleb", "ok")]) == [["Caleb"], []]


def test_a_glued_title_finds_the_titled_name_and_the_surname():
    turns = [("Ms.Carroll", "Sit down please."),
             ("Lee", "Ms. Carroll, is it 12? carroll said so. Ms Carroll! ms.carroll")]
    assert marked(turns) == [[], ["Ms. Carroll", "carroll", "Ms Carroll", "ms.carroll"]]


def test_case_accents_and_apostrophes_are_folded_and_possessives_keep_the_name():
    turns = [("José", "hi"), ("S", "yeah jose helped me"), ("T", "JOSÉ’s answer and Jose's too")]
    assert marked(turns) == [[], ["jose"], ["JOSÉ", "Jose"]]


def test_a_full_name_is_found_whole_and_by_its_parts():
    turns = [("Maria Lopez", "hi"), ("T", "Maria Lopez, then maria, then LOPEZ; Marias and Lopezes are not")]
    assert marked(turns) == [[], ["Maria Lopez", "maria", "LOPEZ"]]


@pytest.mark.parametrize("speaker", ["T", "SS", "Student 3", "Teacher", "All students", "Speaker 2"])
def test_a_role_label_names_nobody(speaker):
    assert marked([(speaker, "Student 3 and the teacher, T and SS, all say hi")]) == [[]]


def test_a_common_word_is_marked_only_where_it_is_written_as_a_name():
    turns = [("May", "May I go?"), ("T", "yes you may. Thanks, May"), ("T", "Maybe")]
    assert marked(turns) == [[], ["May"], []]


def test_a_project_list_of_role_words_decides_what_a_name_is():
    turns = [("Kiddo", "hello"), ("T", "thanks Kiddo")]
    assert marked(turns) == [[], ["Kiddo"]]
    assert marked(turns, {"roles": ["kiddo", "t"]}) == [[], []]


def test_a_dialogue_without_named_speakers_marks_nothing():
    assert marked([("", "Caleb was here")]) == [[]]


@pytest.mark.parametrize("config", [{"roles": "T"}, {"roles": [1]}, {"names": []}])
def test_bad_config(config):
    with pytest.raises(ConfigError):
        build("speakers", config)


def test_registered_versioned_and_in_the_default_ensemble():
    assert "speakers" in available()
    assert build("speakers").model_version.startswith("speakers@")
    ensemble = build("ensemble", {"speakers": {"roles": ["t"]}})
    (speakers,) = [m for m in ensemble.members if m.name == "speakers"]
    assert speakers.config == {"roles": ["t"]}
    assert "speakers" in [m.name for m in build("ensemble", {}).members]
