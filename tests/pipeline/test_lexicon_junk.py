"""Tutoring-chat junk cut with a lexicon signal, not with recall. A NAME on a
lower-case word that is a close misspelling of a frequent English or chat word ("alreda",
"aight"), two frequent words glued ("rightcause") or laughter ("ahah"), and no known given or
family name, is dropped, and so is one of a maths word ("divizion"), one without a vowel ("tbh") or one
drawn out ("sooo"); names, misspelt names and names the lists do not know stay. A city of a
maths problem follows the word-problem rule. Made-up sentences only."""

from __future__ import annotations

import pytest

from pipeline.filters.junk import junk_kind
from pipeline.filters.name_filters import is_word_problem_place, story_places
from pipeline.filters.vocabulary import glued_frequent_words, slip_of, word_zipf
from pipeline.tagger.postfilter import filter_dialogue, filter_spans
from pipeline.types import Dialogue, Message, Span


def _kind(text: str, word: str, label: str = "NAME") -> str | None:
    start = text.index(word)
    return junk_kind(text, start, start + len(word), label)


def _dialogue(*texts: str, anchor: str = "") -> Dialogue:
    return Dialogue("d", tuple(Message(t, "student" if i % 2 else "tutor", index=i) for i, t in enumerate(texts)),
                    anchor=anchor)


def _span(text: str, word: str, label: str = "NAME") -> Span:
    start = text.index(word)
    return Span(start, start + len(word), label, 0.9)


def test_the_frequencies_come_from_a_list_with_chat_in_it():
    assert word_zipf("gonna") > 5 and word_zipf("haha") > 4  # chat words have their real frequency
    assert word_zipf("alreda") < 1


@pytest.mark.parametrize(("word", "target"), [
    ("gona", "gonna"), ("alreda", "already"), ("aight", "right"), ("goinng", "going"), ("becuase", "because"),
    ("tomorow", "tomorrow"), ("sory", None), ("jeremah", None), ("sofai", None), ("minji", None), ("Gona", None),
    ("ok", None),
], ids=lambda v: str(v))
def test_slip_of_names_the_frequent_word_a_lower_case_word_misspells(word, target):
    found = slip_of(word)
    if word == "sory":  # "sorry" or "story": either way a frequent word, not a name
        assert found in ("sorry", "story")
    else:
        assert found == target


@pytest.mark.parametrize(("word", "target"), [
    ("divizion", "division"), ("denominater", "denominator"), ("perimiter", "perimeter"),
    ("multiplacation", "multiplication"), ("numarator", "numerator"), ("thausand", "thousand"), ("fourtean", "fourteen"),
], ids=lambda v: str(v))
def test_slip_of_reads_maths_words_as_common_as_frequent_ones(word, target):
    assert slip_of(word) == target


@pytest.mark.parametrize("name", ["dellar", "gaylon", "madyan", "paralee", "pennie", "raees", "shirleen", "corene"])
def test_a_rare_given_name_near_a_maths_word_is_no_maths_slip(name):
    # given names of Faker's English locales, one or two edits from "dollar", "gallon", "median",
    # "parallel", "pennies", "rates", "thirteen", "cone": read as if the name lists did not know them
    assert slip_of(name) is None


def test_glued_frequent_words():
    assert glued_frequent_words("rightcause") == ("right", "cause")
    assert glued_frequent_words("thenwhat") == ("then", "what")
    assert glued_frequent_words("andthe") is None  # too short to be sure
    assert glued_frequent_words("newman") is None and glued_frequent_words("goodwin") is None  # names


@pytest.mark.parametrize(("text", "word", "kind"), [
    ("is yuor answer 5", "yuor", "slip"),
    ("i am goinng to finish it", "goinng", "misspelling"),  # the older rule: six letters, one slip
    ("it is alreda done", "alreda", "slip"),
    ("aight bet", "aight", "slip"),
    ("yes becuase the sides are equal", "becuase", "slip"),
    ("rightcause the sides match", "rightcause", "glued_words"),
    ("ahah that was funny", "ahah", "filler"),
    ("hehe ok", "hehe", "filler"),
    ("lmao yes", "lmao", "filler"),
    ("paralellagram is hard", "paralellagram", "slip"),  # two slips of a maths word
    ("quoshent is 4", "quoshent", "slip"),
    ("tbh i dont know", "tbh", "no_vowel"),
    ("ok zxqv", "zxqv", "no_vowel"),  # a keyboard mash
    ("sooo i got it", "sooo", "drawn_out"),
    ("yesss finally", "yesss", "drawn_out"),
    ("brrrm brrrm", "brrrm", "no_vowel"),
    ("ammmm 12", "ammmm", "drawn_out"),
])
def test_chat_junk_flagged_as_a_name_is_junk(text, word, kind):
    assert _kind(text, word) == kind


@pytest.mark.parametrize(("text", "word"), [
    ("hi maya can you see it", "maya"),  # a given name, lower case
    ("thanks eda", "eda"),  # a given name, however close to a word
    ("hi minji are you there", "minji"),  # a name the lists do not know, near no frequent word
    ("good job jeremah", "jeremah"),  # a misspelt name
    ("ok cano", "cano"),  # a family name, however close to "can"
    ("i am gona do it", "gona"),  # a family name too (Kenyan, in Faker's tables): names come first
    ("sofai did you get it", "sofai"),  # a slip of "Sofia" before one of "soft"
    ("Gona is here", "Gona"),  # capitalised: written as a name
    ("ask mr gona", "gona"),  # after a title: a surname, whatever else it is
    ("hi Hana", "Hana"),
    ("hi mayaaa", "mayaaa"),  # a name called out, drawn out
    ("hi jooo", "jooo"),  # "jo" is a given name
    ("ok Tbh", "Tbh"),  # capitalised: written as a name
    ("yes ng", "ng"),  # two letters: too short to tell
    ("bye kenji", "kenji"),
])
def test_names_stay(text, word):
    assert _kind(text, word) is None


def test_only_names_are_read_as_slips():
    assert _kind("i live in alreda", "alreda", "LOCATION") is None
    assert _kind("i am gona do it", "gona", "SCHOOL") is None


def test_the_tagger_post_filter_drops_the_slips_and_keeps_the_names():
    text = "sory maya i am goinng to be late alreda"
    dialogue = _dialogue("ok", text)
    spans = [_span(text, w) for w in ("sory", "maya", "goinng", "alreda")]
    kept = filter_spans(dialogue, 1, spans)
    assert [text[s.start:s.end] for s in kept] == ["maya"]


# ---------------------------------------------------------------------- places of a maths problem


@pytest.mark.parametrize(("text", "place", "expected"), [
    ("A train leaves Chicago at 3 pm and travels 60 miles per hour.", "Chicago", True),
    ("How far is Denver from Boston if the map shows 4 inches?", "Denver", True),
    ("Miami is 1,200 miles away from here.", "Miami", True),
    ("I live in Chicago, 5 miles from school.", "Chicago", False),
    ("We moved to Denver last year.", "Denver", False),
    ("Chicago is nice.", "Chicago", False),
])
def test_is_word_problem_place(text, place, expected):
    start = text.index(place)
    assert is_word_problem_place(text, start, start + len(place)) is expected


def test_a_city_of_a_maths_problem_is_dropped_in_every_message_and_a_home_town_stays():
    problem = "A train leaves Chicago at 3 pm and travels 60 miles per hour. How far is it at 5 pm?"
    later = "so Chicago is where it starts"
    dialogue = _dialogue(problem, "120 miles", later)
    spans = [[_span(problem, "Chicago", "LOCATION")], [], [_span(later, "Chicago", "LOCATION")]]
    assert story_places(dialogue, spans)["LOCATION"] == {"chicago"}
    assert filter_dialogue(dialogue, spans) == [[], [], []]
    home = "I live in Chicago"
    personal = _dialogue(problem, home)
    spans = [[_span(problem, "Chicago", "LOCATION")], [_span(home, "Chicago", "LOCATION")]]
    assert filter_dialogue(personal, spans) == spans  # someone's home anywhere: kept everywhere


def test_a_place_of_a_maths_problem_never_drops_a_name_of_the_same_spelling():
    problem = "A bus drives from Austin 40 miles each day."
    greeting = "hi Austin, ready?"
    dialogue = _dialogue(problem, greeting)
    spans = [[_span(problem, "Austin", "LOCATION")], [_span(greeting, "Austin", "NAME")]]
    assert filter_dialogue(dialogue, spans) == [[], spans[1]]


def test_under_strict_a_place_in_the_anchor_is_the_problem_s():
    text = "so it goes to Denver"
    dialogue = _dialogue(text, anchor="A plane flies to Denver.")
    spans = [[_span(text, "Denver", "LOCATION")]]
    assert filter_dialogue(dialogue, spans, policy="strict") == [[]]
    assert filter_dialogue(dialogue, spans, policy="recall_first") == spans
