"""Name filters: who a PERSON or LOCATION candidate really is, for the tuned Presidio preset (and
any detector that finds names): a placeholder or a common word the small spaCy model mistook for a
name, a character of a word problem ("Alex has 5 apples"), or someone in the session ("Ivan, are
you there?", "my sister Linda", "yeah i'm kai"). Each is registered as ``name.<check>``.
"""

from __future__ import annotations

import re
from typing import Any

from pipeline.filters import register
from pipeline.filters.anchor import in_anchor
from pipeline.filters.vocabulary import given_names, listed_form
from pipeline.filters.worksheet import is_worksheet_character
from pipeline.maths import MATH_WORDS
from pipeline.types import Detection, Dialogue, Span

__all__ = [
    "crosses_sentence",
    "drop_characters",
    "handle_like",
    "in_anchor",
    "in_name_slot",
    "is_addressed",
    "is_common_word",
    "is_participant",
    "is_present",
    "is_vocative",
    "is_word_problem_character",
    "is_worksheet_character",
    "last_sentence_start",
    "looks_like_proper_name",
    "not_a_name",
    "speaker_words",
    "story_characters",
    "story_places",
]

_NUMBERISH = re.compile(r"\d")
_NAME_STOPWORDS = frozenset(
    """ok okay yes yeah yep no nope hi hello hey bye thanks thank good great nice awesome cool
    sorry um umm uh hmm wow right correct wrong so well alright sure please answer question
    student teacher tutor mr mrs ms miss sir""".split()  # noqa: SIM905
)


@register("name.not_a_name", "1")
def not_a_name(chunk: str) -> bool:
    """spaCy's small model tags maths words and fillers as people ("Divide", "Yes", "x")."""
    words = re.findall(r"[A-Za-z']+", chunk.lower())
    if not words or len(chunk.strip()) < 2 or _NUMBERISH.search(chunk):
        return True
    return all(w in MATH_WORDS or w in _NAME_STOPWORDS or len(w) == 1 for w in words)


_SENTENCE_BREAK_RE = re.compile(r"(?<!\bMr)(?<!\bMrs)(?<!\bMs)(?<!\bDr)(?<!\bSt)[.!?]\s+\S")


@register("name.crosses_sentence", "1")
def crosses_sentence(chunk: str) -> bool:
    """spaCy's small model runs names across sentence ends ("Student L.  Anyone")."""
    return bool(_SENTENCE_BREAK_RE.search(chunk))


@register("name.last_sentence", "1")
def last_sentence_start(chunk: str) -> int:
    """Where the chunk's last sentence starts: "Student K.  Bradley" -> 12 ("Bradley")."""
    ends = [m.end() - 1 for m in _SENTENCE_BREAK_RE.finditer(chunk)]
    return ends[-1] if ends else 0


_NOT_NAME_TAGS = frozenset(
    {"VB", "VBD", "VBG", "VBN", "VBP", "VBZ", "JJ", "JJR", "JJS", "RB", "RBR", "RBS", "UH", "IN",
     "DT", "CC", "PRP", "PRP$", "MD", "NNS", "CD", "WP", "WRB", "WDT"}
)  # fmt: skip


@register("name.common_word", "1")
def is_common_word(doc: Any, start: int, end: int) -> bool:
    """A one-word PERSON/LOCATION the tagger reads as a verb, adjective, plural noun… is a word,
    not a name: the small model calls sentence-initial "Keep", "Color", "Different" people.
    Lower-case names ("hi minji") are tagged as nouns and kept."""
    tokens = [t for t in doc if t.idx < end and t.idx + len(t.text) > start]
    return len(tokens) == 1 and tokens[0].tag_ in _NOT_NAME_TAGS


# what spaCy's NORP means in school talk; first names it also files under NORP ("Christian",
# "Anh") are left out, so a NORP in a name slot that is none of these is a person
NATIONALITIES_AND_FAITHS = frozenset(
    """american americans african asian european latino latina hispanic mexican canadian
    british english french german italian spanish portuguese greek roman egyptian chinese
    japanese korean vietnamese indian pakistani arab arabic persian turkish russian polish
    irish scottish dutch swedish african-american native indigenous cuban brazilian
    colombian filipino nigerian ethiopian somali haitian jamaican puerto dominican
    muslim muslims jewish jew jews hindu buddhist sikh catholic protestant mormon islamic
    democrat democrats republican republicans""".split()  # noqa: SIM905
)
_BE_QUESTION = frozenset({"is", "was", "are", "were"})
_SUBJECT_VERB_TAGS = frozenset({"VBZ", "VBD", "MD"})


@register("name.slot", "1")
def in_name_slot(doc: Any, start: int, end: int) -> bool:
    """Is ``start..end`` one capitalised proper noun standing where a person does: the subject of
    a question ("Wait, is Anh in our group?") or of its sentence ("Anh said …"), and no
    nationality or faith? spaCy files some first names under NORP, and NORP otherwise stays out
    ("We're American", "Is Greek yogurt good?")."""
    tokens = [t for t in doc if t.idx < end and t.idx + len(t.text) > start]
    if len(tokens) != 1:
        return False
    token = tokens[0]
    if (
        token.tag_ != "NNP"
        or not token.text[:1].isupper()
        or token.lower_ in NATIONALITIES_AND_FAITHS
    ):
        return False
    prev = doc[token.i - 1] if token.i > 0 else None
    nxt = doc[token.i + 1] if token.i + 1 < len(doc) else None
    if prev is not None and prev.lower_ in _BE_QUESTION:
        opener = doc[prev.i - 1] if prev.i > 0 else None
        # "is Anh in …" opens its clause; "He is Muslim" and "Is Greek yogurt" do not qualify
        return (opener is None or opener.is_punct) and (
            nxt is None or not nxt.tag_.startswith("NN")
        )
    sentence_start = prev is None or prev.text in (".", "!", "?")
    return sentence_start and nxt is not None and nxt.tag_ in _SUBJECT_VERB_TAGS


@register("name.proper", "1")
def looks_like_proper_name(doc: Any, start: int, end: int) -> bool:
    """Does ``start..end`` read as a person's name: one to three capitalised words ("Brianna",
    "Juana Melgar"), none in capitals ("FYI"), a verb or adjective ("Keep Going", "Red") or a
    plural proper noun ("Temptations"), and no list ("Osunleke and Randall")?"""
    tokens = [t for t in doc if t.idx < end and t.idx + len(t.text) > start]
    return 0 < len(tokens) <= 3 and all(
        t.text[:1].isupper()
        and not t.text.isupper()
        and t.is_alpha
        and t.tag_ not in _NOT_NAME_TAGS
        and t.tag_ != "NNPS"
        for t in tokens
    )


@register("name.handle", "1")
def handle_like(chunk: str) -> bool:
    return " " not in chunk.strip() and bool(re.search(r"[A-Za-z]", chunk))


_NUMBER_WORDS = (
    r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|"
    r"forty|fifty|hundred|thousand|half|third|thirds|fourth|fourths|quarter|dozen"
)
_QUANTITY_RE = re.compile(rf"\d|\b(?:{_NUMBER_WORDS})\b", re.IGNORECASE)
_WP_QUESTION_RE = re.compile(
    r"\bhow\s+(?:many|much|long|far|old|fast|tall|often)\b|\b(?:in\s+all|altogether|left\s+over|"
    r"each|per|total|more\s+than|less\s+than|times\s+as)\b",
    re.IGNORECASE,
)
_VOCATIVE_BEFORE_RE = re.compile(
    r"(?:^|\b(?:hi|hey|hello|alright|all\s+right|thanks|thank\s+you|good\s+job|great\s+job|nice\s+job|nice\s+work|"
    r"good\s+work|great\s+work|well\s+done|awesome|excellent|perfect|bye|goodbye|welcome|"
    r"morning|afternoon|evening|ok|okay|please|sorry|yes|no|right|correct|great|nice|good|"
    r"name\s+is|i'?m|i\s+am|this\s+is|call\s+me|it'?s)\s*[,!]?\s*)$",
    re.IGNORECASE,
)
# a title before a name ("Ms Krause", "Mr. Lopez")
_ABBREVIATED_TITLES = ("mr", "mrs", "ms", "mx", "dr")  # written with a period; "miss" is a word
_TITLE = rf"(?:{'|'.join((*_ABBREVIATED_TITLES, 'miss'))})\.?"
_TITLE_BEFORE_RE = re.compile(rf"\b{_TITLE}$", re.IGNORECASE)
# a sentence ends at ".", "!" or "?", never at a title's period: "How many pens does Mr. Lopez
# have?" is one sentence, whose question is the titled character's as much as an untitled one's
_SENTENCE_SPLIT_RE = re.compile(
    "(?<=[.!?])" + "".join(rf"(?<!\b{title}\.)" for title in _ABBREVIATED_TITLES) + r"\s+", re.IGNORECASE
)
# a question put to the named person, commas or not (transcripts drop them): "Paulina how many did
# you have?", "Melissa how should I pass them out", "Student S and Abelardo, do either of you …",
# "Remember, Christian, we have to …"
_QUESTION_TO_NAME_RE = re.compile(
    r"^\s*,?\s*(?:how|what|why|where|when|which|who|can|could|would|will|do|did|are|were|is|have|"
    r"should)\b.*\b(?:you|i)\b|^\s*,\s*(?:we|you|let'?s)\b",
    re.IGNORECASE,
)


def _spoken_to(before: str, after: str) -> bool:
    """A question or instruction put to the name at the start of its sentence (after a comma or
    "X and"), or a question to "you" ending on the name ("How many have you written Marina?")."""
    b = before.strip()
    if _QUESTION_TO_NAME_RE.match(after) and (
        b == "" or b.endswith(",") or re.search(r"\band$", b, re.IGNORECASE)
    ):
        return True
    return bool(re.search(r"\byou\b", before, re.IGNORECASE)) and after.strip() == "?"


def _sentence_around(text: str, start: int, end: int) -> tuple[str, str, str]:
    """``(before, span, after)`` within the sentence that holds ``start..end``; a title right
    before the span is the name's own (:data:`_TITLE_BEFORE_RE`: "Hi Mr. Lopez" is greeted, "…,
    Ms Krause?" spoken to), so ``before`` stops short of it."""
    lo = 0
    for m in _SENTENCE_SPLIT_RE.finditer(text, 0, start):
        lo = m.end()
    m = _SENTENCE_SPLIT_RE.search(text, end)
    hi = m.start() if m else len(text)
    before = text[lo:start]
    untitled = _TITLE_BEFORE_RE.sub("", before.rstrip())
    if untitled != before.rstrip():
        before = untitled.rstrip() + " "
    return before, text[start:end], text[end:hi]


@register("name.addressed", "2")  # 2: a sentence runs across a title's period, and the title is the name's
def is_addressed(text: str, start: int, end: int) -> bool:
    """Is the name at ``start..end`` someone spoken to or introducing themselves ("Hi Maria",
    "Maria, are you there?", "Good job, Maria.", "my name is Maria")?"""
    before, _, after = _sentence_around(text, start, end)
    stripped_before = before.rstrip()
    if stripped_before == "":
        return after.lstrip()[:1] in (",", "!", "?", "") or _spoken_to(before, after)
    if _VOCATIVE_BEFORE_RE.search(stripped_before) or _spoken_to(before, after):
        return True
    return stripped_before.endswith(",") and after.strip() in ("", ".", "!", "?")


_SELF_INTRODUCTION_RE = re.compile(r"\b(?:name\s+is|i'?m|i\s+am|call\s+me)\s*$", re.IGNORECASE)


@register("name.vocative", "2")  # 2: name.addressed v2
def is_vocative(text: str, start: int, end: int) -> bool:
    """Is the name at ``start..end`` spoken to and not the subject of what follows ("Great,
    Jagvi!", "Brianna, please sit down", "Paulina how many did you have?")? Praise then a story
    ("Great, Jagvi can fill 7 bags.") passes :func:`is_addressed` but not this."""
    before, _, after = _sentence_around(text, start, end)
    return is_addressed(text, start, end) and (
        after.lstrip()[:1] in (",", "!", "?", ".", "") or _spoken_to(before, after)
    )


@register("name.present", "2")  # 2: name.addressed v2
def is_present(text: str, start: int, end: int) -> bool:
    """Is the name at ``start..end`` someone in the session by how it is used: spoken to
    (:func:`is_vocative`), introducing themselves ("I'm Kai and …") or named as a participant
    (:func:`is_participant`)?"""
    before, _, after = _sentence_around(text, start, end)
    return (
        is_vocative(text, start, end)
        or bool(_SELF_INTRODUCTION_RE.search(before))
        or is_participant(before.rstrip(), after)
    )


@register("name.drop_characters", "1")
def drop_characters(detection: Detection, text: str, characters: set[str]) -> Detection:
    """Drop every mention of a word-problem character. Whoever the dialogue speaks to or names as
    a participant (:func:`is_present`) is no character, so the caller leaves them out of
    ``characters``; praise before a story ("Great, Jagvi can fill 7 bags.") is still the story."""
    kept = tuple(
        s
        for s in detection.spans
        if not (s.label in ("NAME", "LOCATION") and text[s.start : s.end].lower() in characters)
    )
    return (
        detection
        if len(kept) == len(detection.spans)
        else Detection(
            detection.dialogue_id, detection.index, kept, detection.segment, detection.segment_score
        )
    )


def speaker_words(dialogue: Dialogue) -> set[str]:
    """The words of the dialogue's speaker labels ("Maria", "Mr. Lee"): who takes part, so never
    a word-problem character."""
    return {w.lower() for m in dialogue.messages for w in re.findall(r"[^\W\d_]+", m.speaker)}


@register("name.story_characters", "4")  # 4: word_problem_character v6; 3: word_problem_character v5; 2: word_problem_character v4
def story_characters(dialogue: Dialogue, spans: list[list[Span]]) -> set[str]:
    """The NAMEs among ``spans`` (one list per message) that the dialogue uses as word-problem
    characters (:func:`is_word_problem_character`: "Alex has 5 apples and he eats 2") and never
    as someone taking part (a speaker, spoken to, a participant: :func:`is_present`), lower-cased;
    every mention of a flagged name counts, whether the detector flagged that one or not.

    The decision is the dialogue's, not the mention's: "So Mike has 1 left" and "Mike" alone are
    the same character, and a name spoken to anywhere ("Roger, come up") is nobody's story."""
    flagged = _flagged(dialogue, spans, "NAME")
    characters: set[str] = set()
    present = speaker_words(dialogue)
    for name in flagged - present:
        mention = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)", re.IGNORECASE)
        for message in dialogue.messages:  # every mention, flagged or not: "How old will Vicente be?"
            for m in mention.finditer(message.text):
                if is_word_problem_character(message.text, m.start(), m.end()):
                    characters.add(name)
                elif is_present(message.text, m.start(), m.end()):
                    present.add(name)
    return characters - present


def _flagged(dialogue: Dialogue, spans: list[list[Span]], label: str) -> set[str]:
    """The lower-cased words of the dialogue's spans of ``label``."""
    return {message.text[s.start : s.end].lower()
            for message, found in zip(dialogue.messages, spans, strict=True) for s in found if s.label == label}


# what a maths problem about places talks of: distances, travel, maps, populations, temperatures
_TRAVEL_RE = re.compile(
    r"\b(?:miles?|mi|km|kilomet(?:er|re)s?|meters?|metres?|feet|yards?|mph|drives?|drove|driv(?:en|ing)|"
    r"flights?|fl(?:y|ies|ew|ying)|trains?|bus(?:es)?|travel(?:s|ed|led|ing|ling)?|trips?|journey|"
    r"distance|far|away|population|people|residents|temperature|degrees|maps?|routes?|leaves|arrives?)\b",
    re.IGNORECASE,
)
# a sentence about the speaker or the people talking: "I live in Chicago", "we moved to Denver"
_FIRST_PERSON_RE = re.compile(r"\b(?:i|i'?m|im|we|we'?re|my|our|me|us|mine|ours)\b", re.IGNORECASE)


@register("name.word_problem_place", "2")  # 2: word_problem_character v6
def is_word_problem_place(text: str, start: int, end: int) -> bool:
    """Is the place at ``start..end`` part of a maths problem ("A train leaves Chicago at 60 miles
    per hour", "How far is Denver from Boston?", "Miami is 1,200 miles away") rather than where
    someone is ("I live in Chicago, 5 miles from school")? The word-problem rule of names
    (:func:`is_word_problem_character`), or a quantity with distance, travel, map or population
    words in its sentence; never in a sentence in the first person."""
    before, _, after = _sentence_around(text, start, end)
    sentence = before + " " + after
    if _FIRST_PERSON_RE.search(sentence):
        return False
    return is_word_problem_character(text, start, end) or bool(
        _QUANTITY_RE.search(sentence) and _TRAVEL_RE.search(sentence))


# a place-name reading of a word whatever its label: after a preposition of place or motion ("to
# Dayton", "from Akron", "in Fairview")
_PLACE_BEFORE_RE = re.compile(
    r"\b(?:to|from|in|at|near|between|toward|towards|via|through|past|into|around)\s+(?:the\s+)?$",
    re.IGNORECASE,
)


@register("name.story_places", "2")  # 2: SCHOOLs and NAMEs read as places too
def story_places(dialogue: Dialogue, spans: list[list[Span]]) -> dict[str, set[str]]:
    """The places among ``spans`` (one list per message) that the dialogue uses in maths problems
    (:func:`is_word_problem_place`) and never in a sentence in the first person ("I live in
    Chicago"), lower-cased, by the label they were flagged with; every mention counts, flagged or
    not. A city of a word problem is no more anyone's address than its characters are anyone's name.

    A LOCATION is a place by its label. A SCHOOL or NAME (a tagger's other reading of a town's
    name) is one only where a mention of it in a maths problem reads as a place (after "to",
    "from", "in" …: :data:`_PLACE_BEFORE_RE`), it cannot be a person (:func:`_may_be_person`:
    "drives to Austin" stays, Austin is a name too) and no mention is someone spoken to or taking part
    (:func:`is_present`)."""
    places: dict[str, set[str]] = {}
    for label in ("LOCATION", "SCHOOL", "NAME"):
        found = {place for place in _flagged(dialogue, spans, label) if not _may_be_person(place, label)}
        places[label] = {place for place in found if _story_place(dialogue, place, label == "LOCATION")}
    return places


def _may_be_person(place: str, label: str) -> bool:
    """A NAME with a given name in it ("Austin", "Maria Lopez") or a SCHOOL that is one ("Lincoln",
    not "Lincoln Park") may be someone: it is never read as a place."""
    words = re.findall(r"[^\W\d_]+", listed_form(place))
    if label == "NAME":
        return bool(set(words) & given_names())
    return label == "SCHOOL" and " ".join(words) in given_names()


def _story_place(dialogue: Dialogue, place: str, by_label: bool) -> bool:
    """Every mention of ``place`` in ``dialogue`` allows it to be a problem's place and one is;
    unless ``by_label``, that one reads as a place and no mention is someone present."""
    mention = re.compile(rf"(?<!\w){re.escape(place)}(?!\w)", re.IGNORECASE)
    story = False
    for message in dialogue.messages:
        for m in mention.finditer(message.text):
            before, _, after = _sentence_around(message.text, m.start(), m.end())
            if _FIRST_PERSON_RE.search(before + " " + after) or not by_label and is_present(
                message.text, m.start(), m.end()
            ):
                return False
            story = story or is_word_problem_place(message.text, m.start(), m.end()) and (
                by_label or _PLACE_BEFORE_RE.search(before) is not None
            )
    return story


# what sets a vocative off before it: the sentence's start, a comma or dash, or a discourse word
# ("so", "now", "okay")
_SET_OFF_BEFORE_RE = re.compile(r"(?:^|[,;:–—]|\b(?:so|now|well|um|uh|okay|ok))$", re.IGNORECASE)


@register("name.word_problem_character", "6")  # 6: a titled character, one sentence across the title's period, never in the first person; 5: a story whose numbers follow in the next sentence; 4: worksheet characters, "was asked to"
def is_word_problem_character(text: str, start: int, end: int) -> bool:
    """Is the name at ``start..end`` a character of a word problem ("Alex has 5 apples", "How many
    yards did Jason sprint?") rather than someone in the session ("Ivan, are you there?")?

    A name someone is addressed by (after a greeting or praise, or set off by commas at either
    end of its sentence) or introduces themselves with is never a word-problem character.
    """
    before, _, after = _sentence_around(text, start, end)
    stripped_before = before.rstrip()
    if after.lstrip()[:1] == "," and _SET_OFF_BEFORE_RE.search(stripped_before):
        return False  # "okay, so omaja, how many twelfths …"
    sentence = before + " " + after
    if _titled(text, start) and _FIRST_PERSON_RE.search(sentence):
        return False  # "Mr. Lopez gave us 10 problems": the speakers' own teacher, not a story's
    # a quantity with maths words around is not enough: a classroom's own talk has both
    # ("Mr. Fadipe is working on number seven", "Alexander, 5, 4, 3")
    quantity = bool(_QUANTITY_RE.search(sentence))
    story = quantity and (_looks_like_story(after) or bool(_COMPARISON_RE.search(sentence))) or (
        _looks_like_story(after) and _DIGIT_RE.search(_next_sentence(text, end)) is not None)
    if _VOCATIVE_BEFORE_RE.search(stripped_before) and (
        stripped_before == "" and after.lstrip()[:1] in (",", "!", "?", "")
        or stripped_before != "" and not (story and _praise_then_story(stripped_before, sentence))
    ):
        return False
    if stripped_before.endswith(",") and after.strip() in ("", ".", "!", "?"):
        return False  # "I can't hear you, Nadia."
    if is_worksheet_character(before, text[start:end], after):
        return True  # before the participant check: "Jason's answer" is a worksheet's here
    if is_participant(stripped_before, after) or _spoken_to(before, after):
        return False
    return story or bool(_WP_QUESTION_RE.search(sentence))


_TITLE_RE = re.compile(rf"{_TITLE}\s", re.IGNORECASE)


def _titled(text: str, start: int) -> bool:
    """The name at ``start`` has a title, inside the span ("Mr. Lopez") or right before it."""
    before = text[max(0, start - 8) : start].rstrip()
    return bool(_TITLE_RE.match(text, start) or _TITLE_BEFORE_RE.search(before))


# someone in the room: "Jagvi says …", "I agree with Lucía", "Me and Millicent said", "— Jessica,
# can you come show us?", "this is Hunter's number model"
_PARTICIPANT_AFTER_RE = re.compile(
    r"^\s*(?:just\s+|also\s+)?(?:says|said|thinks|thought|noticed|notices|agrees|agreed|"
    r"disagrees|disagreed|explained|explains|asked|asks|wrote|mentioned|shared|answered|suggested|"
    r"told|tells|means|meant|is\s+doing|(?:is|was)\s+(?:saying|thinking|explaining)|came\s+up)\b"
    r"|^['’]s\s+(?:answer|idea|strategy|group|table|work|model|number\s+model|way|partner|turn|"
    r"paper|board|thinking|question|drawing|picture|explanation)\b",
    re.IGNORECASE,
)
_PARTICIPANT_BEFORE_RE = re.compile(
    r"(?:\b(?:agree|agrees|agreed|disagree|disagrees|disagreed)\s+with|\bme\s+and|\bpartner,?|"
    r"[–—:;])\s*$",
    re.IGNORECASE,
)


@register("name.participant", "2")
def is_participant(before: str, after: str) -> bool:
    """The name is someone in the lesson: what they said or made, who agrees with them, or a
    name after a dash that starts a new address ("because it was— Jessica, …")."""
    if _PARTICIPANT_AFTER_RE.match(after):
        return True
    return bool(_PARTICIPANT_BEFORE_RE.search(before)) and (
        not re.search(r"[–—:;]\s*$", before) or after.lstrip()[:1] in (",", "?", "!", ".", "")
    )


_PERSONAL_REFERENCE_RE = re.compile(
    r"\b(?:my|our|your|his|her|their)\s+(?:(?:little|big|older|younger|best|step|twin)\s*)?"
    r"(?:sister|brother|mom|mum|mother|dad|father|friend|cousin|aunt|uncle|grandma|grandpa|"
    r"teacher|tutor|son|daughter|kid|child|classmate|coach|neighbou?r|parent)s?\s*,?\s*$|"
    r"\b(?:this\s+is|i'?m|i\s+am|it'?s|name\s+is|called)\s*$",
    re.IGNORECASE,
)
_STORY_VERB_RE = re.compile(
    # "Mike has", "Shannon's bag has", "Nancy and Jesse ate", "Kathy can fill"
    r"^\W*(?:'s\s+\w+(?:\s+\w+)?\s+|and\s+[^\W\d_]+\s+)?(?:(?:can|could|will|would|must)\s+)?"
    r"(?:has|had|have|buys|bought|gives|gave|gets|got|spends|spent|saves|saved|"
    r"eats|ate|drinks|drank|walks|walked|runs|ran|reads|read|makes|made|bakes|baked|sells|sold|"
    r"needs|needed|wants|wanted|collects|collected|shares|shared|picks|picked|earns|earned|"
    r"drives|drove|travels|traveled|travelled|uses|used|fills|filled|plants|planted|went|"
    r"starts|started|begins|began|finishes|finished|ends|ended|wakes|woke|rides|rode|leaves|"
    r"arrives|arrived|swims|swam|bikes|biked|jogs|jogged|paints|painted|builds|built|pays|paid|"
    r"owes|owed|pours|poured|weighs|weighed|practices|practiced|practises|practised|"
    r"buy|give|spend|save|eat|drink|walk|run|make|bake|sell|collect|share|pick|earn|drive|"
    r"travel|fill|plant|finish|ride|swim|paint|build|pay|pour|"
    # a worksheet's own statement: "Pablo was asked to divide the shapes into 8 equal parts"
    r"(?:is|was)\s+asked\s+to)\b",
    re.IGNORECASE,
)


def _praise_then_story(before: str, sentence: str) -> bool:
    """Praise set off by a comma, then a story with digits: "Great, Kathy can fill 3 1/5 bags.",
    "That's it, Nancy and Jesse ate 7/6 of the pie." ("Alright Daniele read the first one" is
    someone spoken to.)"""
    return before.endswith(",") and any(ch.isdigit() for ch in sentence)


# a comparison of quantities between people: "Anabel is 5 years older", "3 cm taller than"
_COMPARISON_RE = re.compile(
    r"\byears?\s+(?:older|younger)\b|\b(?:older|younger|taller|shorter|faster|slower|heavier)\s+than\b",
    re.IGNORECASE,
)


def _looks_like_story(after: str) -> bool:
    return bool(_STORY_VERB_RE.match(after))


_DIGIT_RE = re.compile(r"\d")


def _next_sentence(text: str, end: int) -> str:
    """The sentence after the one that holds ``end``, in the same message: where a problem told
    over two sentences has its numbers ("Lena and Theo sell cards. They earn $12.")."""
    m = _SENTENCE_SPLIT_RE.search(text, end)
    if m is None:
        return ""
    after = _SENTENCE_SPLIT_RE.search(text, m.end())
    return text[m.end() : after.start() if after else len(text)]
