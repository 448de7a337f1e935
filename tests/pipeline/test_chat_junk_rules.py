"""What is left of tutoring-chat junk after the lexicon rules, cut with general rules: the verb of
a request in more of its forms, places of a word problem whatever their label, titled characters
of a word problem, months that are no birthdays, and Spanish words; and the names each must keep.
Made-up sentences only."""

from __future__ import annotations

import pytest

from pipeline.filters.junk import junk_kind
from pipeline.filters.name_filters import (
    is_present,
    is_word_problem_character,
    story_characters,
    story_places,
)
from pipeline.tagger.postfilter import filter_dialogue
from pipeline.types import Dialogue, Message, Span


def _kind(text: str, word: str, label: str = "NAME") -> str | None:
    start = text.index(word)
    return junk_kind(text, start, start + len(word), label)


def _dialogue(*texts: str) -> Dialogue:
    return Dialogue("d", tuple(Message(t, "student" if i % 2 else "tutor", index=i) for i, t in enumerate(texts)))


def _span(text: str, word: str, label: str = "NAME") -> Span:
    start = text.index(word)
    return Span(start, start + len(word), label, 0.9)


# ------------------------------------------------------------------ titled word-problem characters


@pytest.mark.parametrize(("text", "name", "expected"), [
    ("How many pens does Mr. Kowal have left?", "Kowal", True),  # the title's period ends no sentence
    ("How many cakes did Mrs. Obi bake?", "Mrs. Obi", True),  # the title inside the span
    ("Ms. Ferro buys 4 bags of 6 pears.", "Ferro", True),
    ("Mr. Kowal, can you see the board?", "Kowal", False),  # spoken to
    ("Thank you, Mr. Kowal.", "Kowal", False),
    ("Mr. Kowal gave us 10 problems for homework.", "Kowal", False),  # the speakers' own teacher
    ("my teacher Mrs. Obi has 2 dogs", "Obi", False),
])
def test_a_titled_character_follows_the_word_problem_rule(text, name, expected):
    start = text.index(name)
    assert is_word_problem_character(text, start, start + len(name)) is expected


@pytest.mark.parametrize(("text", "name"), [("Hi Mr. Kowal", "Kowal"), ("Thanks, Ms. Ferro.", "Ferro"),
                                            ("Good morning Ms Ferro", "Ferro")])
def test_a_titled_name_greeted_is_present(text, name):
    start = text.index(name)
    assert is_present(text, start, start + len(name))


def test_a_titled_character_is_dropped_and_a_titled_teacher_stays():
    problem = "Mr. Kowal bought 3 boxes of 12 pens. How many pens does Mr. Kowal have?"
    dialogue = _dialogue(problem, "36")
    spans = [[_span(problem, "Kowal"), Span(problem.rindex("Kowal"), problem.rindex("Kowal") + 5, "NAME", 0.9)], []]
    assert story_characters(dialogue, spans) == {"kowal"}
    assert filter_dialogue(dialogue, spans) == [[], []]
    teacher = "Mr. Kowal, can you see the board?"
    talk = _dialogue(problem, teacher)
    spans = [[_span(problem, "Kowal")], [_span(teacher, "Kowal")]]
    assert filter_dialogue(talk, spans) == spans  # spoken to anywhere: nobody's story


# ------------------------------------------------------------------ the verb of a request


@pytest.mark.parametrize(("text", "word"), [
    ("Recheck your answer.", "Recheck"),  # capitalised, opening the message
    ("Good try. Rewrite the fraction first.", "Rewrite"),  # capitalised, opening its sentence
    ("recheck your answer", "recheck"),  # lower case, opening the message
    ("I suggest you to recheck your work", "recheck"),
    ("I want you to rewrite it", "rewrite"),
    ("you should double-check the sum", "double-check"),
    ("I suggest you recheck it", "recheck"),
    ("please recheck you answer", "recheck"),  # "you" typed for "your"
    ("Nice. recheck you answer", "recheck"),
])
def test_the_verb_of_a_request_in_more_forms(text, word):
    assert _kind(text, word) == "requested_verb"


@pytest.mark.parametrize(("text", "word"), [
    ("Maya your turn", "Maya"),  # a given name opening the message
    ("maya your turn", "maya"),
    ("Mark your answer.", "Mark"),  # an imperative that is also a name
    ("please maya you go first", "maya"),  # a name, then "you"
    ("Kowal the answer is 5", "Kowal"),  # a family name
    ("Sofia, recheck your answer", "Sofia"),
    ("you should ask Sofia", "Sofia"),
    ("Zendaya your turn", "Zendaya"),  # no English word, whether the lists know the name or not
])
def test_names_before_a_request_s_object_stay(text, word):
    assert _kind(text, word) is None


# ------------------------------------------------------------------ Spanish words


@pytest.mark.parametrize("text, word", [
    ("gracias", "gracias"), ("ok bueno", "bueno"), ("entonces es 5?", "entonces"), ("claro que si", "claro"),
    ("muy bien", "muy bien"), ("ya también lo hice", "también"),
])
def test_a_frequent_spanish_word_is_no_name(text, word):
    assert _kind(text, word) == "spanish_word"


@pytest.mark.parametrize("text, word, label", [
    ("hi sofia", "sofia", "NAME"),  # a given name
    ("gracias luz", "luz", "NAME"),  # a word, and a given name of Spanish speakers: a name first
    ("thanks carlos", "carlos", "NAME"),
    ("Sofia", "Sofia", "NAME"),
    ("Bueno is here", "Bueno", "NAME"),  # capitalised: a surname as written
    ("ask mr bueno", "bueno", "NAME"),  # after a title: a surname
    ("ok the casa", "casa", "LOCATION"),  # only NAMEs are read
    ("no", "no", "NAME"),  # an English word as well: left to the English rules
])
def test_names_and_english_words_are_no_spanish_word(text, word, label):
    assert _kind(text, word, label) != "spanish_word"
    if label == "NAME" and word != "no":
        assert _kind(text, word, label) is None


# ------------------------------------------------------------------ months


def _dates(*texts: str, month: str) -> list[list[str]]:
    """What the post-filter keeps of a DATE_OF_BIRTH on ``month`` in the last message."""
    dialogue = _dialogue(*texts)
    spans = [[] for _ in texts]
    spans[-1] = [_span(texts[-1], month, "DATE_OF_BIRTH")]
    kept = filter_dialogue(dialogue, spans)
    return [[m.text[s.start:s.end] for s in found] for m, found in zip(dialogue.messages, kept, strict=True)][-1]


@pytest.mark.parametrize(("texts", "month"), [
    (("In March, Kofi saved $40 and spent $15.",), "March"),  # a month of a word problem
    (("which month comes after may?", "june"), "june"),  # a month as an answer
    (("how many days are in the month of april",), "april"),
    (("ok", "the calendar shows 30 days", "in Sept."), "in Sept."),
])
def test_a_month_alone_without_a_birth_cue_is_no_date_of_birth(texts, month):
    assert _dates(*texts, month=month) == []


@pytest.mark.parametrize(("texts", "month"), [
    (("my birthday is in June",), "June"),
    (("when is your birthday?", "june"), "june"),
    (("when's ur bday", "ok", "march"), "march"),  # two messages back
    (("i was born in May",), "May"),
    (("In March, Kofi saved $40.", "June 3, 2014"), "June 3, 2014"),  # not a month alone
])
def test_a_month_with_a_birth_cue_or_a_full_date_stays(texts, month):
    assert _dates(*texts, month=month) == [month]


# ------------------------------------------------------------------ places whatever their label


@pytest.mark.parametrize("label", ["SCHOOL", "NAME"])
def test_a_place_of_a_maths_problem_is_dropped_whatever_its_label(label):
    problem = "A bus drives 40 miles from Fairview to Dunmore. How far is it back?"
    dialogue = _dialogue(problem, "40 miles")
    spans = [[_span(problem, "Fairview", label), _span(problem, "Dunmore", "LOCATION")], []]
    assert story_places(dialogue, spans)[label] == {"fairview"}
    assert filter_dialogue(dialogue, spans) == [[], []]


@pytest.mark.parametrize(("texts", "word"), [
    (("A bus drives 40 miles to Austin each day.",), "Austin"),  # a given name too: a name first
    (("A bus drives 40 miles to Fairview.", "hi Fairview, are you there?"), "Fairview"),  # spoken to
    (("Fairview has 40 miles of road.",), "Fairview"),  # nothing reads it as a place
    (("We drove 40 miles to Fairview.",), "Fairview"),  # the first person
])
def test_a_name_or_school_is_no_place_without_a_place_reading(texts, word):
    dialogue = _dialogue(*texts)
    spans = [[_span(t, word, "NAME")] if word in t else [] for t in texts]
    assert story_places(dialogue, spans)["NAME"] == set()  # the character rule may still read them


def test_a_school_of_a_maths_problem_may_hold_a_given_name_and_a_name_may_not():
    problem = "The bus drives 12 miles to Lincoln Park each day."
    dialogue = _dialogue(problem)
    places = story_places(dialogue, [[_span(problem, "Lincoln Park", "SCHOOL")]])
    assert places["SCHOOL"] == {"lincoln park"}
    places = story_places(dialogue, [[_span(problem, "Lincoln Park", "NAME")]])
    assert places["NAME"] == set()
