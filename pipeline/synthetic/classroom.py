"""Whole-class maths lessons: one teacher, many students, talk transcribed from speech.

Real classroom transcripts name students the way a room does — roll calls, one-word turns
("Michael?"), vocatives ("Stand up, Max.", "Campbell, pass that to Gerard."), possessives ("this
is Hunter's number model"), the teacher by title and surname, names lower-cased or misspelt by
the transcriber — and are full of words a tagger must leave alone: fillers ("Mhm", "Ahuh"),
endearments ("honey"), maths words said alone ("Acute."), page and lesson numbers ("page 177",
"exploration 3A"), place names of a task map ("I-95"), the modal "May I go", ASR fragments
("Kilome-"), and people a transcript already de-identified ("Ms. H", "Student X"). The templates
and pools here are the project's own. Names are NAME spans (titles outside); everything else is a
trap, recorded and never labelled.

Many real transcripts also name their speakers: turns labelled "Caleb" or "Ms.Carroll" among "T",
"SS" and "Student 3", a file named after the teacher ("lesson.Year1.Benson.Fall.121019"), metadata
with a name and an e-mail, a timestamp on every turn. :func:`name_the_room` gives a lesson that
record; its labels, id and metadata are not text, so they carry no spans.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pipeline.synthetic import pools as P
from pipeline.synthetic.render import Seg, lit, pick, pii

Turn = tuple[str, list[Seg]]  # ("C" teacher | "K" student, segments)

FILLERS = ("Mhm.", "Mm-hmm.", "Ahuh.", "Uh-huh.", "Mm.", "Hmm.", "Um.", "Uh.", "Ah.", "Oh.", "Yeah.", "Mhm, mhm.")
ENDEARMENTS = ("honey", "hon", "sweetie", "buddy", "my friend", "sweetheart", "kiddo", "friends", "guys")
SHAPES = ("hexagon", "pentagon", "octagon", "trapezoid", "rhombus", "parallelogram", "triangle", "cube",
          "prism", "cylinder", "quadrilateral", "square")
ONE_WORD_ANSWERS = ("Acute.", "Obtuse.", "Prime.", "Composite.", "Hexagon.", "Cubic.", "Even.", "Odd.",
                    "Denominator.", "Numerator.", "Perimeter.", "Area.", "Volume.", "Right angle.",
                    "Equilateral.", "Isosceles.", "Scalene.", "Parallel.", "Remainder.", "Quotient.")
MATHS_FRAGMENTS = ("kilometers", "relook", "because", "denominator", "multiply", "perimeter", "centimeters",
                   "equivalent", "rectangle", "estimate", "hundredths", "thousand")
ROUTES = ("I-95", "I-10", "I-5", "I-80", "Route 66", "Route 9", "US-1", "Highway 101", "I-35", "Route 3")
MAP_PLACES = ("the library", "the park", "the museum", "the zoo", "the farm", "the lake", "the airport",
              "the mall", "the stadium", "the bakery", "the fire station", "the school")
DEIDENTIFIED = ("Ms. H", "Mrs. L", "Mr. B", "Ms. R", "Mr. T", "Mrs. K", "Ms. J")
DEIDENTIFIED_STUDENTS = ("Student X", "Student A", "Student B", "Student C", "Student G", "Student J", "Student M")
ASR_MARKS = ("[inaudible]", "(inaudible)", "[crosstalk]", "[laughter]", "[unintelligible]", "(crosstalk)")

# ---- teacher ---------------------------------------------------------------------------------
ROLL_CALL = (
    "{st}?", "{st}?", "{st}.", "{stfull}?", "{st}, are you here?", "{st}? {st2}?", "And {st}?",
    "{st}? Is {st} here today?", "Okay, {st}.", "{st:lower}?", "{st}, {st2}, {st3}?",
    "{st}. {st2}. {st3}.", "Okay, {st}, {st2}, {st3} and {st4}.", "{st:lower} {st2:lower} {st3:lower}",
)
ROLL_ANSWER = (
    "Here.", "Here!", "Present.", "Yeah.", "{filler}", "Here, {teach}.", "{st} is absent.",
    "{st:poss} in the bathroom.", "{st:poss} not here.", "Here. {asr}",
)
VOCATIVES = (
    "Stand up, {st}.", "Sit down, {st}.", "{st}, pass that to {st2}.", "{st}, can you read number {n}?",
    "Thank you, {st}.", "Go ahead, {st}.", "{st}, what did you get?", "Eyes up here, {st}.",
    "Give {st} a round of applause.", "Let's give {st} a hand.", "Shh, {st}.", "{st}, {st2}, come to the board.",
    "Who can help {st}?", "Nice, {st}.", "{st} says {n}. Do you agree?", "I'm going to call on {st}.",
    "What do you think, {st}?", "{st}? {filler}", "{st}, {endear}, sit down please.", "{st:lower}, look at me.",
    "Good, {st}. {filler}", "{st}, you want to try?", "Louder, {st}.", "{st}, and then {st2}.",
    "Can you explain what {st} did?", "Turn to {st} and tell {stpro} your answer.", "Wait, {st}, say it again.",
    "{st}, put your pencil down.", "Okay, {st}, you're next.", "Thank you, {st}. {st2}?",
)
POSSESSIVES = (
    "Let's look at {st:poss} answer.", "This is {st:poss} number model.", "{st:poss} group got {n}.",
    "I like {st:poss} strategy.", "Compare your answer to {st:poss}.", "Whose is this? Is this {st:poss}?",
    "{st:poss} table is ready.", "Look at how {st} drew the {shape}.", "I'm putting {st:poss} work up here.",
)
TEACHER_MATHS = (
    "Open your books to page {page}.", "We're on exploration {expl}.", "Lesson {lesson}, problem {n}.",
    "Turn to page {page} in your journal.", "A {shape} has how many sides?", "Is {n} prime or composite?",
    "Is that angle acute or obtuse?", "We measure volume in cubic units.", "What's {a} times {b}?",
    "So {a} plus {b} is {sum}. {filler}", "Write {frac} on your whiteboard.", "Page {page}, number {n}.",
    "Everybody look at exploration {expl} on page {page}.", "Finish problems {n} through {n2} for homework.",
    "How many {unit} are in {a} {unit2}?", "Okay, {endear}, what's the denominator?", "Hexagon, {endear}. Six sides.",
    "Prime numbers only have two factors.", "Cubic centimeters. Say it with me.", "Acute means less than {deg} degrees.",
    "{may} I have everybody's attention?", "{asr} Okay, so {a} times {b}.", "{frag} {fragword}. Let's relook at it.",
)
TASK_MAP = (
    "Look at the map. The bus takes {route} for {a} miles.", "If you drive on {route} from {place} to {place2}, how far is it?",
    "The map says {place} is {a} miles from {place2}.", "{route} goes right past {place}. How many miles is that?",
    "Start at {place}, go {a} blocks north, then {b} blocks east.", "Which is closer to {route}, {place} or {place2}?",
)
ENDEARMENT_LINES = (
    "Good job, {endear}.", "Thank you, {endear}.", "Come on, {endear}, you can do it.", "It's okay, {endear}.",
    "Nice work, {endear}.", "Listen, {endear}.", "Yes, {endear}?", "No, {endear}, look again.",
)
DEIDENTIFIED_LINES = (
    "Go ask {deid} for a calculator.", "{deid} is going to help you.", "{deid} said we can finish tomorrow.",
    "{deidst}, what do you think?", "Thank you, {deidst}.", "{deidst} got {n}.", "Tell {deid} what you got.",
    "I agree with {deidst}.", "{deidst} and {deidst2}, come here.",
)
TEACHER_TALK = (
    "Okay.", "All right.", "Shh.", "Eyes on me.", "Pencils down.", "Good.", "Say it louder.", "One more time.",
    "Who agrees?", "Thumbs up if you got {n}.", "Everybody.", "What else?", "Why?", "How do you know?",
    "{filler}", "{filler} Okay.", "Mm-hmm, and then?", "{asr}",
)
# lists of students, pairs and groups; thanks; the ASR's unpunctuated lower case
GROUP_LINES = (
    "Group {=one|two|three|four}: {st}, {st2} and {st3}.", "{st} and {st2}, you're partners.",
    "{st}, {st2}, {st3}, you're at table {=one|two|three}.", "Partners: {st} with {st2}, {st3} with {st4}.",
    "{st}, {st2} and {st3}, come up to the board.", "I need {st}, {st2}, and {st3} over here.",
    "Who's in {st:poss} group? {st2} and {st3}.", "{st} and {st2}, you two work together.",
    "{st}, {st2}, {st3}, {st4}: you're the red group.", "{st} is with {st2} today.",
    "Okay, {st} and {st2}, then {st3} and {st4}.", "{st} and {st2}, can you share with {st3}?",
)
THANKS = (
    "Thank you, {st}.", "Thanks, {st}.", "Thank you {st}.", "Thank you so much, {st}.", "Thanks, {st}. {st2}?",
    "Thank you, {st} and {st2}.", "Okay, thank you, {st}. Next, {st2}.", "Thank you for sharing, {st}.",
    "Thanks {st:lower}.", "Thank you, {endear}.", "Thank you. {filler}", "Thanks, {endear}. {st}, you're next.",
)
ASR_LINES = (
    "um {st:lower} what did you get", "okay uh {st:lower} go ahead", "yeah {st:lower} and {st2:lower}",
    "thank you {st:lower} um", "mhm okay {st:lower} {st2:lower} you're next", "{st:lower} can you um",
    "so {st:lower} said {n} right", "uh huh okay thank you {st:lower}", "okay {endear} um {n}",
    "um okay so the um {fragword}", "mhm mhm okay", "uh {teach:lower} i got {n}", "{frag} {fragword} um",
)
STORIES = (
    "So {char} has {sum} pencils and gives {b} away.", "{char} ran {a} miles on Monday. How far did {char} run?",
    "If {char} has {a} cookies and {char2} has {b}, how many do they have?", "{char:poss} garden has {a} rows.",
    "Read number {n}. {char} buys {a} apples.", "{char} and {char2} share {a} stickers equally.",
)
# ---- students --------------------------------------------------------------------------------
STUDENT_LINES = (
    "{st} took my pencil.", "Me and {st2} got {n}.", "{teach}, can I go to the bathroom?", "{may} I go get a drink?",
    "{may} I sharpen my pencil?", "{teach}, I'm done.", "I agree with {st}.", "{st} said it first.", "{filler}",
    "{filler}", "Um, {n}?", "Uh, {shape}?", "It's {n}.", "{n}.", "I got {frac}.", "{answer}", "{answer}",
    "Because it's {a} times {b}.", "{teach}, {st} is copying me.", "{teach}? {teach}?", "Can I be partners with {st}?",
    "{st:lower} has it.", "I don't get it.", "Wait, what page?", "Page {page}?", "Is it exploration {expl}?",
    "{frag} {fragword}.", "It's a {shape}.", "It's prime.", "{asr}", "Yes, {teach}.", "No.", "Me!", "Ooh, me!",
    "{st:poss} answer is wrong.", "{st} and me.", "Can {st} help me?", "We did {a} plus {b}.", "Ahuh, {n}.",
    "{deidst} did it.", "I went on {route} with my dad.", "{may} I go to the nurse?", "Thank you, {teach}.",
    "Thanks, {teach}!", "{teach}, {st} and me are partners.", "Me, {st} and {st2}.", "{st} and {st2} are done.",
    "{char} has {a}.", "Um, {char} gave away {b}?",
)


def _pronoun(person: P.Person) -> str:
    return "her" if person.gender == "f" else "him"


def _student_form(person: P.Person, rng: random.Random) -> list[Seg]:
    """A student as a classroom says and a transcriber writes them: mostly the first name,
    sometimes lower-cased, misspelt ("Breana") or the surname alone ("Campbell")."""
    r = rng.random()
    if r < 0.62:
        name = person.first
    elif r < 0.74:
        name = person.first.lower() if len(person.first.lower()) == len(person.first) else person.first
    elif r < 0.84:
        name = P.misspell_name(person.first, rng)
    elif r < 0.94:
        name = person.last
    else:
        name = person.full
    return [pii(name, "NAME")]


def _teacher_form(person: P.Person, rng: random.Random) -> list[Seg]:
    segs = P.name_titled(person, rng)
    if rng.random() < 0.15:
        segs = [(t.lower(), lab, tag) for t, lab, tag in segs]
    return segs


def _asr_fragment(rng: random.Random) -> tuple[str, str]:
    """``("Kilome-", "kilometers")``, ``("Ca-", "caause")``: a cut-off or stretched word."""
    word = rng.choice(MATHS_FRAGMENTS)
    if rng.random() < 0.6:
        cut = word[: rng.randint(2, max(2, len(word) - 3))]
        return cut.capitalize() + "-", word
    i = next((k for k, c in enumerate(word) if c in "aeiou"), 1)
    return word[: i + 1].capitalize() + "-", word[:i] + word[i] + word[i:]


def _turn_ctx(cast: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """The slots of one turn: which students it names, its numbers and its traps."""
    students: list[P.Person] = cast["students"]
    a, b, c, d = rng.sample(students, 4)
    char, char2 = rng.sample(cast["characters"], 2)
    frag, fragword = _asr_fragment(rng)
    x, y = rng.randint(2, 12), rng.randint(2, 12)
    place, place2 = rng.sample(MAP_PLACES, 2)
    deidst, deidst2 = rng.sample(DEIDENTIFIED_STUDENTS, 2)
    num = lambda v: [lit(str(v), "calculation")]  # noqa: E731
    return {
        "st": _student_form(a, rng),
        "st2": _student_form(b, rng),
        "st3": _student_form(c, rng),
        "st4": _student_form(d, rng),
        "char": [pii(char, "NAME", "problem_character")],
        "char2": [pii(char2, "NAME", "problem_character")],
        "stfull": [pii(a.full, "NAME")],
        "stpro": [lit(_pronoun(a))],
        "teach": _teacher_form(cast["teacher"], rng),
        "filler": [lit(rng.choice(FILLERS), "filler")],
        "endear": [lit(rng.choice(ENDEARMENTS), "endearment")],
        "answer": [lit(rng.choice(ONE_WORD_ANSWERS), "maths_word")],
        "shape": [lit(rng.choice(SHAPES), "maths_word")],
        "n": num(rng.randint(1, 40)),
        "n2": num(rng.randint(41, 60)),
        "a": num(x),
        "b": num(y),
        "sum": num(x + y),
        "deg": num(90),
        "frac": [lit(f"{rng.randint(1, 7)}/{rng.randint(8, 12)}", "fraction")],
        "page": [lit(str(rng.randint(12, 320)), "reference")],
        "lesson": [lit(f"{rng.randint(1, 12)}.{rng.randint(1, 9)}", "reference")],
        "expl": [lit(f"{rng.randint(1, 9)}{rng.choice('ABCD')}", "reference")],
        "unit": [lit(rng.choice(("inches", "centimeters", "ounces", "minutes")))],
        "unit2": [lit(rng.choice(("feet", "meters", "pounds", "hours")))],
        "route": [lit(rng.choice(ROUTES), "problem_place")],
        "place": [lit(place)],
        "place2": [lit(place2)],
        "deid": [lit(rng.choice(DEIDENTIFIED), "initial")],
        "deidst": [lit(deidst, "placeholder")],
        "deidst2": [lit(deidst2, "placeholder")],
        "asr": [lit(rng.choice(ASR_MARKS), "asr")],
        "may": [lit("May", "modal_may")],
        "frag": [lit(frag, "asr")],
        "fragword": [lit(fragword)],
    }


# (bank, teacher turn?, weight): what the lesson is made of
BANKS: tuple[tuple[tuple[str, ...], bool, int], ...] = (
    (VOCATIVES, True, 16), (POSSESSIVES, True, 5), (TEACHER_MATHS, True, 16), (TASK_MAP, True, 4),
    (ENDEARMENT_LINES, True, 5), (DEIDENTIFIED_LINES, True, 5), (TEACHER_TALK, True, 10),
    (STUDENT_LINES, False, 34), (GROUP_LINES, True, 6), (THANKS, True, 5), (ASR_LINES, True, 4),
    (STORIES, True, 3),
)


def make_class(pools: P.Pools, rng: random.Random) -> dict[str, Any]:
    taken: set[str] = set()
    people = []
    for _ in range(rng.randint(5, 10)):
        p = P.make_person(pools, rng, exclude=taken)
        taken.update((p.first, p.last))
        people.append(p)
    # word-problem characters: textbook names nobody in the room has (not PII under ``strict``)
    characters = rng.sample(sorted(set(pools.problem_names) - taken), 2)
    return {"teacher": people[0], "students": people[1:], "names": frozenset(taken), "characters": characters}


def lesson_turns(pools: P.Pools, rng: random.Random,
                 target: int) -> tuple[list[Turn], dict[str, Any], dict[str, Any]]:
    """About ``target`` turns of one lesson (a roll call first, half the time), its meta and its
    cast (:func:`make_class`)."""
    cast = make_class(pools, rng)
    turns: list[Turn] = []
    if rng.random() < 0.5:
        for _ in range(rng.randint(2, 5)):
            ctx = _turn_ctx(cast, rng)
            turns += [("C", pick(ROLL_CALL, ctx, rng)), ("K", pick(ROLL_ANSWER, ctx, rng))]
    weights = [w for _, _, w in BANKS]
    while len(turns) < target:
        bank, teacher, _ = rng.choices(BANKS, weights=weights)[0]
        turns.append(("C" if teacher else "K", pick(bank, _turn_ctx(cast, rng), rng)))
    meta = {"kind": "classroom", "students": len(cast["students"])}
    return turns, meta, cast


# ---- named speakers --------------------------------------------------------------------------
TEACHER_TITLES = {"f": ("Ms.", "Ms.", "Mrs."), "m": ("Mr.",)}
SEASONS = ("Winter", "Winter", "Spring", "Spring", "Spring", "Summer", "Summer", "Summer", "Fall", "Fall",
           "Fall", "Winter")  # by month, January first
NAMED_STUDENT_SHARE = 0.75  # of the students' turns; the rest are labelled by role


@dataclass(frozen=True, slots=True)
class Room:
    """What a lesson's record says beyond its texts: each turn's speaker label and timestamp, the
    tail of its id and its metadata."""

    speakers: tuple[str, ...]
    times: tuple[str, ...]
    id_tail: str
    meta: dict[str, Any]


def name_the_room(cast: dict[str, Any], kinds: Sequence[str], pools: P.Pools, rng: random.Random) -> Room:
    """Speaker labels for turns of ``kinds`` ("C" teacher, "K" student) as a transcriber writes
    them — the teacher as "Ms. Carroll", sometimes glued ("Ms.Carroll") or "T"; a student by
    first name, or "S", "SS", "Student 3" — a timestamp per turn (ISO 8601, a few seconds apart),
    an id tail with the teacher's surname and the lesson's date, and metadata with the teacher's
    name, a student's e-mail and the grade."""
    teacher: P.Person = cast["teacher"]
    students: list[P.Person] = cast["students"]
    title = rng.choice(TEACHER_TITLES[teacher.gender])
    teacher_labels = (f"{title} {teacher.last}", f"{title}{teacher.last}", "T")
    speakers = []
    for kind in kinds:
        if kind == "C":
            speakers.append(rng.choices(teacher_labels, weights=(14, 3, 3))[0])
        elif rng.random() < NAMED_STUDENT_SHARE:
            speakers.append(rng.choice(students).first)
        else:
            speakers.append(rng.choice(("S", "SS", f"Student {rng.randint(1, 30)}")))
    start = datetime(rng.randint(2019, 2024), rng.randint(1, 12), rng.randint(1, 28), rng.randint(8, 14),
                     rng.choice((0, 5, 10, 15, 30, 45)))
    times, at = [], start
    for _ in kinds:
        times.append(at.isoformat())
        at += timedelta(seconds=rng.randint(2, 45))
    surname = "".join(teacher.last.split())
    id_tail = f"lesson.Year{rng.randint(1, 3)}.{surname}.{SEASONS[start.month - 1]}.{start:%m%d%y}"
    student = rng.choice(students)
    meta = {"teacher": f"{title} {teacher.last}",
            "student_email": P.email(student, rng, P.school_domain(P.school(pools, rng), rng)),
            "grade": rng.randint(3, 8)}
    return Room(tuple(speakers), tuple(times), id_tail, meta)
