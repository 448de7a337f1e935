"""Presidio tuned keeps vanilla's names in classroom talk and still drops what is not a name."""

from __future__ import annotations

import pytest

from pipeline.detectors.name_filters import is_addressed, is_word_problem_character
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
        "Mike has 4 cookies. How many cookies does Mike have?",  # still a word-problem character
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
