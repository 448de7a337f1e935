"""Classroom junk (fillers, endearments, maths words, references, initials) never becomes PII,
and real names in classroom talk stay names."""

from __future__ import annotations

import pytest

from pipeline import filters
from pipeline.filters.junk import junk_kind
from pipeline.tagger import postfilter
from pipeline.types import Dialogue, Message, Span


def kind(text: str, piece: str, label: str = "NAME") -> str | None:
    start = text.index(piece)
    return junk_kind(text, start, start + len(piece), label)


@pytest.mark.parametrize(
    ("text", "piece", "label", "expected"),
    [
        ("Mhm.", "Mhm", "NAME", "filler"),
        ("Ahuh, 3.", "Ahuh", "NAME", "filler"),
        ("Mm-hmm, and then?", "Mm-hmm", "NAME", "filler"),
        ("Good job, honey.", "honey", "NAME", "endearment"),
        ("Thank you, hon.", "hon", "NAME", "endearment"),
        ("Hexagon.", "Hexagon", "NAME", "maths_word"),
        ("Acute.", "Acute", "NAME", "maths_word"),
        ("Is it cubic?", "cubic", "NAME", "maths_word"),
        ("This is math class.", "math", "COURSE", "maths_word"),
        ("Open to page 177.", "page 177", "COURSE", "reference"),
        ("We're on exploration 3A.", "exploration 3A", "COURSE", "reference"),
        ("Take I-95 for 12 miles.", "I-95", "SCHOOL", "route"),
        ("May I go to the bathroom?", "May", "DATE_OF_BIRTH", "modal_may"),
        ("Go ask Ms. H for one.", "H", "NAME", "initial"),
        ("Go ask Mrs. L for one.", "Mrs. L", "NAME", "initial"),
        ("So Mike has ___ left?", "has", "NAME", "function_word"),
        ("We still need the ____ .", "the", "USERNAME", None),  # a pattern's label: never junk
        ("We still need the ____ .", "the", "NAME", "function_word"),
        ("So which one is a ray?", "ray", "NAME", "common_noun"),
        ("What is a vertice?", "vertice", "NAME", "common_noun"),
        ("Could you recheck your naswer?", "naswer", "NAME", "common_noun"),
        ("i like that vertice", "vertice", "NAME", "common_noun"),  # no given name: still a noun
        ("the mark is wrong", "mark", "NAME", "common_noun"),  # after "the", a name-like word too
        ("yes maam", "maam", "NAME", "endearment"),
        ("Thanks, Ray.", "Ray", "NAME", None),  # capitalised: a name
        ("uh huh okay thank you will", "will", "NAME", None),  # ASR lower case: maybe a name
        ("i sat with maya", "maya", "NAME", None),
        ("nah", "nah", "NAME", "filler"),
        ("okey", "okey", "NAME", "filler"),
        ("Please recheck your working.", "recheck", "NAME", "requested_verb"),
        ("Kindly recheck it.", "recheck", "NAME", "requested_verb"),
        ("Go ahead and recheck.", "recheck", "NAME", "requested_verb"),
        ("please maya sit down", "maya", "NAME", None),  # a name: its verb follows
        ("Please Odalys redo the last step.", "Odalys", "NAME", None),  # capitalised
        ("ya", "ya", "NAME", "filler"),
        ("kinda?", "kinda", "LOCATION", "filler"),
        ("yea kinda", "yea kinda", "NAME", "filler"),
        ("Have you heard of Pythagoras?", "Pythagoras", "LOCATION", "maths_word"),
        ("that was really dificult", "dificult", "NAME", "misspelling"),
        ("sorry i forgott", "forgott", "NAME", "misspelling"),
        ("that is so awsome!", "awsome", "LOCATION", "misspelling"),
        ("Look at Dmitri's ray.", "ray", "NAME", "common_noun"),
        ("Which angle is made by Fatima's Ray?", "Ray", "NAME", "common_noun"),
        ("Is the Sum even?", "Sum", "NAME", "common_noun"),
        ("Nice work! redo the last step.", "redo", "NAME", "requested_verb"),
        ("Whatis 7 times 8?", "Whatis", "NAME", "function_word"),
        ("ok thatis done", "thatis", "NAME", "function_word"),
        ("no sir", "no", "NAME", "function_word"),
        ("Is it pi or 3.14?", "pi", "NAME", "maths_word"),
        # chat abbreviations, a maths word's plural, the letters that name a figure, a verb asked
        # for after "need to"
        ("thx", "thx", "NAME", "filler"),
        ("FYI the bell rang", "FYI", "NAME", "filler"),
        ("that was ez", "ez", "NAME", "filler"),
        ("np!", "np", "NAME", "filler"),
        ("Parallelograms and rhombuses", "Parallelograms", "COURSE", "maths_word"),
        ("Rhombuses have four sides.", "Rhombuses", "NAME", "maths_word"),
        ("Find the measure of VST.", "VST", "NAME", "figure_label"),
        ("What is angle ABC?", "ABC", "NAME", "figure_label"),
        ("Triangle XYZ is isosceles.", "XYZ", "NAME", "figure_label"),
        ("the segment QR", "QR", "NAME", "figure_label"),
        ("You need to recheck the sum.", "recheck", "NAME", "requested_verb"),
        ("remember to simplfy it", "simplfy", "NAME", "requested_verb"),
    ],
)
def test_junk_is_recognised(text, piece, label, expected):
    assert kind(text, piece, label) == expected


@pytest.mark.parametrize(
    ("text", "piece"),
    [
        ("Stand up, Max.", "Max"),
        ("Michael?", "Michael"),
        ("Campbell, pass that to Gerard.", "Campbell"),
        ("Campbell, pass that to Gerard.", "Gerard"),
        ("give Breanna a round of applause", "Breanna"),
        ("this is Hunter's number model", "Hunter"),
        ("Thank you, Penny.", "Penny"),  # a coin, and a name
        ("Ask Mr. Oh.", "Oh"),  # after a title a filler-like word is a surname
        ("Ask Ms. Le.", "Le"),  # two letters are not initials
        ("My birthday is May 5.", "May 5"),
        ("Ask Mr. Nah.", "Nah"),  # after a title, a surname
        ("Thanks, Yael.", "Yael"),
        ("Kindra, sit down.", "Kindra"),
        # lower-case names stay names, spelt right or not: a given name, one slip from one, or
        # a word too short to judge
        ("thank you maya", "maya"),
        ("hi jeremiha", "jeremiha"),  # one edit from a given name
        ("goodbye ysabel", "ysabel"),
        ("i sat with joaquin", "joaquin"),
        ("ok brittanny", "brittanny"),
        ("hi minji", "minji"),
        ("Dificult", "Dificult"),  # capitalised: a spelling rule is for lower case only
        ("Thanks, Ray.", "Ray"),
        ("Ana's Mark came too.", "Mark"),  # a possessive owns people too
        ("Nice work! lucia the next one is yours.", "lucia"),  # a given name opens it
        ("Who was right?  xiaolin?", "xiaolin"),  # a call, not an imperative: no object
        ("Asher is here", "Asher"),  # "as her", but a given name
        ("Good, Sheby.", "Sheby"),  # "she by", but one slip from a given name
        ("Ian and Isa, come here.", "Isa"),  # "is a": one part is one letter
        # "that" and "its" also open a clause in lower-case speech ("so that", ASR's "its" for
        # "it's"): a given name after them is the clause's subject, not a common noun
        ("i think that maya is right", "maya"),
        ("so that jose can see it", "jose"),
        ("ok its emma's turn", "emma"),
        ("Ty, your turn.", "Ty"),  # a name, whatever chat means by "ty"
        ("Thanks, Rhys.", "Rhys"),  # a plural's "s" is not enough to make a maths word
        ("Ask ABC Tutoring.", "ABC"),  # capitals that name no figure
        ("I sat with AJ.", "AJ"),
    ],
)
def test_real_names_and_dates_are_not_junk(text, piece):
    label = "DATE_OF_BIRTH" if piece[-1].isdigit() else "NAME"
    assert kind(text, piece, label) is None


def test_misspelt_words_need_both_word_lists(monkeypatch):
    from pipeline.filters import junk

    assert junk.is_misspelt_word("dificult")
    assert not junk.is_misspelt_word("difficult")  # spelt right: left to the other rules
    assert not junk.is_misspelt_word("dificult".upper())
    monkeypatch.setattr(junk, "given_names", lambda: frozenset())
    assert not junk.is_misspelt_word("dificult")  # no names to protect: the rule stays off


def test_structured_identifiers_are_never_junk():
    assert kind("mail mhm@school.org", "mhm@school.org", "EMAIL") is None
    assert kind("Mhm", "Mhm", "USERNAME") is None


def test_tagger_postfilter_drops_junk_for_both_policies():
    text = "Mhm. Good job, honey. Michael, open to page 177. Ask Ms. H."
    spans = [
        Span(text.index(p), text.index(p) + len(p), label)
        for p, label in (("Mhm", "NAME"), ("honey", "NAME"), ("Michael", "NAME"),
                         ("page 177", "COURSE"), ("H", "NAME"))
    ]  # fmt: skip
    dialogue = Dialogue("d", (Message(text, index=0),))
    for policy in postfilter.POLICIES:
        kept = postfilter.filter_spans(dialogue, 0, spans, policy=policy)
        assert [text[s.start : s.end] for s in kept] == ["Michael"]
        assert "junk.span" in postfilter.POLICY_FILTERS[policy]
    assert "junk.span" in filters.names()


@pytest.mark.parametrize(
    ("text", "piece", "label", "malformed"),
    [
        ("Where do the commas go in big numbers?", "commas", "EMAIL", True),
        ("write to ana.perez@school.org", "ana.perez@school.org", "EMAIL", False),
        ("it's ana dot perez at gmail dot com", "ana dot perez at gmail dot com", "EMAIL", False),
        ("open the website", "website", "URL", True),
        ("go to khanacademy.org/math", "khanacademy.org/math", "URL", False),
        ("We still need the ____ .", "the", "USERNAME", True),
        ("my login is sparky22", "sparky22", "USERNAME", False),
        ("Where do we put commas?", "commas", "NAME", False),  # names have their own rules
    ],
)
def test_a_structured_identifier_that_cannot_be_one_is_dropped(text, piece, label, malformed):
    start = text.index(piece)
    assert filters.get("junk.malformed_identifier")(text, start, start + len(piece), label) is malformed
    d = Dialogue("d", [Message(index=0, speaker="s", text=text)])
    kept = postfilter.filter_spans(d, 0, [Span(start, start + len(piece), label)])
    if malformed:
        assert kept == []
