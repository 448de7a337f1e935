"""Presidio tuned keeps vanilla's names in classroom talk and still drops what is not a name."""

from __future__ import annotations

import pytest

from pipeline.filters.name_filters import (
    is_addressed,
    is_present,
    is_vocative,
    is_word_problem_character,
)
from pipeline.registry import build
from pipeline.types import Dialogue, Message


@pytest.fixture(scope="module")
def tuned():
    return build("presidio", {"preset": "tuned"})


def found(detector, text: str) -> list[tuple[str, str]]:
    (det,) = detector.detect(Dialogue("d", (Message(text, index=0),)))
    return [(text[s.start : s.end], s.label) for s in det.spans]


@pytest.mark.parametrize(
    ("text", "name"),
    [
        # a quantity and a maths word in the sentence made these word-problem characters
        ("Me and Millicent said because this is 4 times 6", "Millicent"),
        ("While Mr. Fadipe is working on number seven, where is it?", "Fadipe"),
        ("Diana Green did 40 times –", "Diana Green"),
        # spaCy ran the name across a sentence end, from a placeholder
        ("I'll be with you in a second, Student K.  Bradley.", "Bradley"),
        # spaCy's DATE_TIME and NORP for first names someone is spoken to with
        ("Sit down, April.", "April"),
        ("christian, same thing.", "christian"),
        ("Stand up, Max.", "Max"),
        ("Campbell, pass that to Gerard.", "Gerard"),
        # a question put to the name without a comma (transcripts drop them)
        ("Melissa how should I pass them out.", "Melissa"),
        ("Remember, Christian, we have to change it to tenths.", "Christian"),
    ],
)
def test_tuned_keeps_names_in_classroom_talk(tuned, text, name):
    assert (name, "NAME") in found(tuned, text)


@pytest.mark.parametrize(
    "text",
    [
        "Alex has 5 apples. How many cookies does Mike have?",  # still a word-problem character
        "Good job, honey.",
        "Open your books to page 177.",
        "May I go get a drink?",
        "Tell Ms. H what you got.",
        "The bus takes I-95 for 12 miles.",
        "We're American, we use inches.",  # a NORP nobody is addressed by
        "We'll finish fractions in April.",
    ],
)
def test_tuned_still_drops_what_is_not_a_name(tuned, text):
    assert found(tuned, text) == []


def _at(text: str, name: str) -> tuple[str, int, int]:
    start = text.index(name)
    return text, start, start + len(name)


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Melissa how should I pass them out.", "Melissa"),
        ("Paulina how many did you have?", "Paulina"),
        ("Alright Daniele read the first one, number one.", "Daniele"),
        ("Remember, Kenji, we have to change it to tenths.", "Kenji"),
        ("Student S and abelardo, do either of you have your homework?", "abelardo"),
        ("How many have you written Marina?", "Marina"),
    ],
)
def test_spoken_to_without_commas_is_addressed_not_a_character(text, name):
    assert is_addressed(*_at(text, name))
    assert not is_word_problem_character(*_at(text, name))


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("If you give Mike 3 cookies, how many does he have?", "Mike"),
        ("How many cookies did Sara eat?", "Sara"),
        ("How many cookies do you think Sara has?", "Sara"),
    ],
)
def test_word_problem_characters_are_not_addressed(text, name):
    assert not is_addressed(*_at(text, name))
    assert is_word_problem_character(*_at(text, name))


def found_in(detector, *texts: str) -> list[list[str]]:
    """The spans of each message of one dialogue."""
    d = Dialogue("d", tuple(Message(t, index=i) for i, t in enumerate(texts)))
    return [
        [m.text[s.start : s.end] for s in det.spans]
        for m, det in zip(d.messages, detector.detect(d), strict=True)
    ]


def test_a_student_put_into_a_story_stays_a_name(tuned):
    # addressed elsewhere in the dialogue, so a participant, not an invented character
    texts = ("Roger, can you come up here?", "So Roger has 40 dollars. How many does he have left?")
    assert found_in(tuned, *texts) == [["Roger"], ["Roger"]]


def test_a_speaker_put_into_a_story_stays_a_name(tuned):
    d = Dialogue(
        "d",
        (
            Message("Luis has 5 apples and eats 2. How many does Luis have?", speaker="Tutor"),
            Message("3", speaker="Luis", index=1),
        ),
    )
    (first, _) = tuned.detect(d)
    assert [d.messages[0].text[s.start : s.end] for s in first.spans] == ["Luis", "Luis"]


@pytest.mark.parametrize(
    ("text", "name"),
    [("Great, Jagvi can fill 7 bags.", "Jagvi"), ("Right, Qadim turns 32 on May 2.", "Qadim")],
)
def test_praise_before_a_story_is_not_speaking_to_a_participant(text, name):
    assert is_addressed(*_at(text, name))  # a vocative for the word-problem check …
    assert not is_vocative(*_at(text, name))  # … but no sign the name is in the room
    assert not is_present(*_at(text, name))


def test_a_story_character_praised_and_never_spoken_to_is_still_dropped(tuned):
    texts = ("Jagvi has 7 bags. How many bags in all?", "Great, Jagvi can fill 7 bags.")
    assert found_in(tuned, *texts) == [[], []]


def test_a_story_character_nobody_addresses_is_still_dropped(tuned):
    texts = (
        "Hi Maria!",
        "Kenji has 40 dollars. How many does Kenji have left?",
        "Good job, Maria.",
    )
    assert found_in(tuned, *texts) == [["Maria"], [], ["Maria"]]


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Wait, is Anh in our group?", "Anh"),  # spaCy's NORP, the subject of a question
        ("Brianna, please put that away.", "Brianna"),  # spaCy's ORG, spoken to
        ("What's the next one, Nilima?", "Nilima"),
    ],
)
def test_names_spacy_files_under_other_entities(tuned, text, name):
    assert (name, "NAME") in found(tuned, text)


@pytest.mark.parametrize(
    "text",
    [
        "He is Muslim.",
        "Is Greek yogurt good?",
        "Is Korean hard to learn?",
        "The Romans used letters.",
        "FYI",
        "Keep Going!",
        "Orange, green, blue, pink, yellow.",
    ],
)
def test_nationalities_and_words_are_not_names(tuned, text):
    assert found(tuned, text) == []
