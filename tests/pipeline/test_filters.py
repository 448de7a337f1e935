"""The filters registry: each maths/placeholder/anchor/cue filter once, named and versioned."""

import pytest

from pipeline import filters
from pipeline.detectors import rules, rules_personal
from pipeline.filters import name_filters
from pipeline.filters.anchor import in_anchor, is_anchor_name
from pipeline.filters.cues import AGE_QUESTION_RE, asks_age
from pipeline.filters.maths import inside_expression, is_math_number
from pipeline.filters.placeholder import is_placeholder_span
from pipeline.registry import build
from pipeline.tagger import postfilter


def test_every_filter_has_a_name_and_a_version():
    names = filters.names()
    assert {"maths.context", "maths.operand", "maths.number", "placeholder.span", "cue.pii"} <= set(names)
    for name in names:
        fn = filters.get(name)
        assert fn.name == name and fn.version
    with pytest.raises(KeyError, match="unknown filter"):
        filters.get("nope")


def test_detectors_call_the_one_copy():
    assert postfilter.is_math_number is is_math_number
    assert postfilter.is_placeholder_span is is_placeholder_span
    assert name_filters.in_anchor is in_anchor
    assert rules.inside_expression is inside_expression is rules_personal.inside_expression
    assert rules_personal.AGE_QUESTION_RE is AGE_QUESTION_RE


@pytest.mark.parametrize(
    "text",
    [
        "how old are you?", "How old r u", "what's your age", "ur age?",  # the rules' old pattern
        "when do you turn 10", "when is your bday", "when were you born",  # the post-filter's
    ],
)
def test_one_age_question_covers_both_former_patterns(text):
    assert asks_age(text)


def test_age_question_does_not_match_maths():
    assert not asks_age("how old is the tree if it grows 3 cm a year")


def test_anchor_and_operand_filters():
    assert is_anchor_name("Alex", frozenset({"alex", "has"}))
    assert not is_anchor_name("Alex Smith", frozenset({"alex"}))
    assert in_anchor("Alex", "alex has 5 apples")
    assert inside_expression("id 4815 / 2 = x", 3, 7)


@pytest.mark.parametrize(
    ("name", "config", "expected"),
    [
        ("rules", {}, ("maths.context", "maths.operand")),
        ("rules", {"math_filter": False}, ()),
        ("presidio", {"preset": "vanilla"}, ()),
        ("llm", {"base_url": "http://localhost:1", "model": "m"}, ()),
    ],
)
def test_detectors_list_the_filters_they_apply(name, config, expected):
    assert build(name, config).filters == expected


def test_tuned_presidio_ensemble_and_tagger_policies_name_registered_filters():
    tuned = build("presidio", {"preset": "tuned"})
    assert {"maths.context", "placeholder.text", "anchor.phrase"} <= set(tuned.filters)
    ensemble = build("ensemble", {"members": [{"name": "rules"}, {"name": "presidio", "config": {"preset": "tuned"}}]})
    assert set(ensemble.filters) == set(tuned.filters) | set(build("rules").filters)
    assert "anchor.words" in postfilter.POLICY_FILTERS["strict"]
    assert "anchor.words" not in postfilter.POLICY_FILTERS["recall_first"]
    registered = set(filters.names())
    for names in (tuned.filters, ensemble.filters, *postfilter.POLICY_FILTERS.values()):
        assert set(names) <= registered
    assert filters.versioned(("maths.number",)) == ("maths.number@1",)


def _names(dialogue, *names):
    """NAME spans on every mention of ``names`` in each message of ``dialogue``."""
    import re

    from pipeline.types import Span

    return [
        [Span(m.start(), m.end(), "NAME") for n in names for m in re.finditer(rf"\b{n}\b", msg.text)]
        for msg in dialogue.messages
    ]


@pytest.mark.parametrize("policy", postfilter.POLICIES)
def test_a_story_character_is_dropped_in_every_message_and_a_student_never(policy):
    from pipeline.types import Dialogue, Message

    story = Dialogue("d1", [
        Message(index=0, speaker="tutor", text="Alex has 5 apples and he eats 2 apples."),
        Message(index=1, speaker="student", text="so 1?"),
        Message(index=2, speaker="tutor", text="Yes! Mike has 1 left. Great job, Priya."),
        Message(index=3, speaker="tutor", text="Priya, how many did Mike eat?"),
    ])
    kept = postfilter.filter_dialogue(story, _names(story, "Mike", "Priya"), policy=policy)
    assert [[story.messages[i].text[s.start:s.end] for s in found] for i, found in enumerate(kept)] == [
        [], [], ["Priya"], ["Priya"]
    ]
    # someone the dialogue speaks to is nobody's story, even inside one; a speaker neither
    lesson = Dialogue("d2", [
        Message(index=0, speaker="teacher", text="Roger, come up to the board."),
        Message(index=1, speaker="teacher", text="And Roger has $40 to spend on 8 books."),
        Message(index=2, speaker="Dana", text="Dana has 3 pencils"),
    ])
    kept = postfilter.filter_dialogue(lesson, _names(lesson, "Roger", "Dana"), policy=policy)
    assert [len(found) for found in kept] == [1, 1, 1]
    assert "name.story_characters" in postfilter.POLICY_FILTERS[policy]


def test_every_mention_decides_and_praise_before_a_story_is_still_the_story():
    from pipeline.types import Dialogue, Message, Span

    born = "Vicente was born on 1/21/2009."
    d = Dialogue("d3", [
        Message(index=0, speaker="tutor", text=born),  # flagged, and no story verb of its own
        Message(index=1, speaker="tutor", text="How old will Vicente be in 2030?"),  # not flagged
        Message(index=2, speaker="tutor", text="Great, Kathy can fill 3 1/5 bags."),
    ])
    spans = [[Span(0, 7, "NAME")], [], [Span(7, 12, "NAME")]]
    assert postfilter.filter_dialogue(d, spans) == [[], [], []]
    assert not name_filters.is_word_problem_character("Alright Daniele read the first one, number one.", 8, 15)


@pytest.mark.parametrize(("text", "name", "character"), [
    ("Zorla and Brint sell cards on Fridays. Each week they earn $12.", "Zorla", True),
    ("Zorla and Brint sell cards on Fridays. Each week they earn $12.", "Brint", True),
    ("Zorla has a card shop. It is sunny.", "Zorla", False),  # no numbers: no problem
    ("Zorla has a card shop. It is sunny. They earn $12.", "Zorla", False),  # one sentence on, no further
    ("Zorla, you have a point. 5 is right.", "Zorla", False),  # spoken to
])
def test_a_story_told_over_two_sentences_has_its_numbers_in_the_second(text, name, character):
    start = text.index(name)
    assert name_filters.is_word_problem_character(text, start, start + len(name)) is character


@pytest.mark.parametrize(
    ("text", "name", "character"),
    [
        ("Which graph shows that Renata's claim is wrong?", "Renata", True),
        ("Which expression is not shown by Doloress model?", "Doloress", True),
        ("What strategy does Oskar use here?", "Oskar", True),
        ("We sort the cards according to Wendell's rules.", "Wendell", True),
        ("Linnea's pattern could be that every term doubles.", "Linnea", True),
        ("Here Ignatius's answer is not correct.", "Ignatius", True),
        ("Beatriz was asked to cut 6 ribbons into equal parts.", "Beatriz", True),
        ("Who can add on to Delia's idea?", "Delia", False),  # the class, about a student
        ("Renata, which graph shows the answer?", "Renata", False),  # spoken to
        ("What did Oskar use?", "Oskar", False),  # no worksheet's opening
        ("Which way did Oskar go, Ana?", "Oskar", False),  # "Which way": no noun asked for
        ("this is Hunter's number model", "Hunter", False),
        ("Beatriz was asked to leave early.", "Beatriz", False),  # no quantity: no story
    ],
)
def test_a_worksheet_question_s_character_is_no_participant(text, name, character):
    start = text.index(name)
    assert name_filters.is_word_problem_character(text, start, start + len(name)) is character


@pytest.mark.parametrize("policy", postfilter.POLICIES)
def test_a_worksheet_character_someone_speaks_to_is_kept(policy):
    from pipeline.types import Dialogue, Message

    quiz = Dialogue("d4", [
        Message(index=0, speaker="tutor", text="Which equation shows that Cosmo's answer is incorrect?"),
        Message(index=1, speaker="student", text="the second one"),
    ])
    assert postfilter.filter_dialogue(quiz, _names(quiz, "Cosmo"), policy=policy) == [[], []]
    talk = Dialogue("d5", [
        Message(index=0, speaker="tutor", text="Cosmo, are you there?"),
        Message(index=1, speaker="tutor", text="Which equation shows that Cosmo's answer is incorrect?"),
    ])
    assert [len(found) for found in postfilter.filter_dialogue(talk, _names(talk, "Cosmo"), policy=policy)] == [1, 1]


@pytest.mark.parametrize(
    ("text", "piece", "label", "dropped"),
    [
        ("The two lengths are 37and52.", "37", "OTHER_IDENTIFIER", True),
        ("the center guide tells you E54 and E55.", "E54", "ID_NUMBER", True),
        ("my student id is 58", "58", "ID_NUMBER", False),  # cued: kept
        ("it's 58213 on the card", "58213", "ID_NUMBER", False),  # long enough to be one
        ("The two lengths are 37and52.", "37", "NAME", False),  # other labels have their rules
        ("Because it’s 806, not 805.  You have 7", "806", "PHONE", True),
        ("Oh, it’s 48.  You want to say 50", "48", "PHONE", True),
        ("call me at 555-0142", "555-0142", "PHONE", False),  # seven digits: a number
        ("my phone number is 4821", "4821", "PHONE", False),  # cued: kept
    ],
)
def test_a_short_id_without_a_cue_is_dropped(text, piece, label, dropped):
    from pipeline.types import Dialogue, Message, Span

    start = text.index(piece)
    d = Dialogue("d", [Message(index=0, speaker="s", text=text)])
    assert filters.get("cue.short_id")(text, start, start + len(piece), label) is dropped
    kept = postfilter.filter_spans(d, 0, [Span(start, start + len(piece), label)])
    assert (kept == []) is (dropped or label == "NAME")  # a bare-number NAME goes by its own rule


@pytest.mark.parametrize(
    ("text", "piece", "kept"),
    [
        ("Okay.  248,300.  If you need a hint", "Okay.  248,300", None),  # a filler and a quantity
        ("Maria 5 is done", "Maria 5", "Maria"),  # a name holds no digits
        ("thanks Jo 7 Kevin Brown", "Jo 7 Kevin Brown", "Kevin Brown"),  # the longest stretch
        ("room 12 Ms. Lopez", "Ms. Lopez", "Ms. Lopez"),  # no digit: untouched
    ],
)
def test_a_name_keeps_no_digits(text, piece, kept):
    from pipeline.types import Dialogue, Message, Span

    start = text.index(piece)
    d = Dialogue("d", [Message(index=0, speaker="s", text=text)])
    out = postfilter.filter_spans(d, 0, [Span(start, start + len(piece), "NAME")])
    assert [text[s.start:s.end] for s in out] == ([kept] if kept else [])
