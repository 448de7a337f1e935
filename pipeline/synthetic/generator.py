"""Assemble whole tutoring dialogues: a cast, a session plan, rendered turns and gold spans."""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from pipeline.synthetic import chat, classroom
from pipeline.synthetic import pools as P
from pipeline.synthetic.maths import PROBLEMS, Problem, problem_names
from pipeline.synthetic.render import Seg, assemble, chat_noise, lit, pick, pii, render
from pipeline.types import Dialogue, Message

GENERATOR_NAME = "blindspot-synthetic"
GENERATOR_VERSION = "1.2"
POLICIES = ("strict", "recall_first")
SPEAKERS = {"T": "Tutor", "S": "Student", "P": "Parent", "C": "Teacher", "K": "Student"}
ROLES = {"T": "tutor", "S": "student", "P": "other", "C": "tutor", "K": "student"}
# share of whole-class lessons among generated dialogues (the rest are one-to-one tutoring)
CLASSROOM_SHARE = 0.35
# share of those lessons whose record names its speakers (classroom.name_the_room), drawn apart
# from the lesson's own generator: the texts and spans of a lesson are the same either way
NAMED_SPEAKERS_SHARE = 1 / 3
# share of tutoring sessions given hard-negative turns (endearments, fillers, maths words; no span),
# drawn apart from the session's own generator: with 0 (the demo corpus) sessions are unchanged
HARD_NEGATIVE_SHARE = 0.5

GRADES = ("4th", "5th", "6th", "7th", "8th", "9th", "10th", "third", "fifth", "sixth", "seventh", "eighth", "ninth")
ID_CUES = ("student id", "student ID", "student number", "id number", "ID", "lunch number", "lunch pin",
           "library card number", "login id", "school id", "account number", "student #", "bus pass number")


@dataclass(frozen=True, slots=True)
class Cast:
    """Everyone and everything identifying in one dialogue, fixed for the whole dialogue."""

    ctx: dict[str, Any]
    names: frozenset[str]


def make_cast(pools: P.Pools, rng: random.Random) -> Cast:
    taken: set[str] = set()

    def person() -> P.Person:
        p = P.make_person(pools, rng, exclude=taken)
        taken.update((p.first, p.last))
        return p

    student, tutor, parent, sib, sib2, friend, teacher = (person() for _ in range(7))
    # the parent usually shares the student's surname
    if rng.random() < 0.75:
        parent = P.Person(parent.first, student.last, parent.gender)
    school = P.school(pools, rng)
    user = P.username(student, rng)
    other_cue, other_val = P.other_identifier(rng)
    year = rng.randint(2007, 2018)
    nick = _nickname(student, rng)
    ctx: dict[str, Any] = {
        **_people_slots(student, tutor, parent, sib, sib2, friend, teacher, nick),
        **_identifier_slots(pools, rng, student=student, parent=parent, tutor=tutor, school=school,
                            user=user, year=year, other=(other_cue, other_val)),
        **_session_slots(rng),
    }
    names = frozenset(taken | {nick})
    return Cast(ctx, names)


def _people_slots(student: P.Person, tutor: P.Person, parent: P.Person, sib: P.Person, sib2: P.Person,
                  friend: P.Person, teacher: P.Person, nick: str) -> dict[str, Any]:
    """The cast's names and the words that look like names; draws nothing from the dialogue's rng."""
    return {
        "sname": lambda r: P.name_address_student(student, r),
        "sfirst": P.name_first(student),
        "sfull": P.name_full(student),
        "nick": [pii(nick, "NAME")],
        "tname": lambda r: P.name_address_tutor(tutor, r),
        "tfirst": P.name_first(tutor),
        "tfull": P.name_full(tutor),
        "ttitled": lambda r: P.name_titled(tutor, r),
        "parent": P.name_first(parent),
        "parentfull": P.name_full(parent),
        "ptitled": lambda r: P.name_titled(parent, r),
        "sib": P.name_first(sib),
        "sibrel": lambda r: [lit(r.choice(("sister", "sister", "cousin") if sib.gender == "f" else ("brother", "brother", "cousin")))],
        "prel": lambda r: [lit(r.choice(("mom", "mom", "mother", "mum", "grandma", "aunt") if parent.gender == "f" else ("dad", "dad", "father", "stepdad", "grandpa", "uncle")))],
        "ppro": [lit("her" if parent.gender == "f" else "his")],
        "ppro2": [lit("she" if sib.gender == "f" else "he")],
        "sib2": P.name_first(sib2),
        "grade": lambda r: [lit(r.choice(GRADES), "grade_level")],
        "markverb": lambda r: [lit("Mark", "name_like_word")] if r.random() < 0.5 else [lit(r.choice(("Circle", "Highlight")))],
        "mark": [lit("mark", "name_like_word")],
        "will": [lit("Will", "name_like_word")],
        "month": lambda r: [lit(r.choice(("May", "June", "April", "August", "January")), "name_like_word")],
        "letter": lambda r: [lit(r.choice("ABCD"))],
        "friend": lambda r: P.name_first(friend) if r.random() < 0.8 else P.name_full(friend),
        "teacher": lambda r: P.name_titled(teacher, r),
    }


def _identifier_slots(pools: P.Pools, rng: random.Random, *, student: P.Person, parent: P.Person,
                      tutor: P.Person, school: str, user: str, year: int,
                      other: tuple[str, str]) -> dict[str, Any]:
    """Schools, places, contacts and ids, drawn in a fixed order (the corpus depends on it)."""
    other_cue, other_val = other
    return {
        "school": [pii(school, "SCHOOL")],
        "school2": [pii(P.school(pools, rng), "SCHOOL")],
        "college": _college(rng),
        "tcity": [pii(P.city(pools, rng), "LOCATION")],
        "city": [pii(P.city(pools, rng), "LOCATION")],
        "city2": [pii(P.city(pools, rng), "LOCATION")],
        "hood": _hood(rng),
        "street": [pii(P.street_address(pools, rng), "LOCATION")],
        "age": [pii(P.age_value(rng, 8, 17), "AGE")],
        "sibage": [pii(P.age_value(rng, 3, 21), "AGE")],
        "dob": [pii(P.birthday(rng, year), "DATE_OF_BIRTH")],
        "email": [pii(P.email(student, rng, P.school_domain(school, rng)), "EMAIL")],
        "pemail": [pii(P.email(parent, rng), "EMAIL")],
        "temail": [pii(P.email(tutor, rng), "EMAIL")],
        "phone": [pii(P.phone(rng), "PHONE")],
        "tphone": [pii(P.phone(rng), "PHONE")],
        "user": [pii(user, "USERNAME")],
        "platform": [lit(rng.choice(P.PLATFORMS))],
        "url": [pii(P.url(student, user, rng), "URL")],
        "sid": [pii(P.id_number(rng), "ID_NUMBER")],
        "idcue": [lit(rng.choice(ID_CUES))],
        "course": [pii(P.course(rng), "COURSE")],
        "plaincourse": [lit(rng.choice(P.COURSE_NO_NUMBER), "plain_course")],
        "othercue": [lit(other_cue)],
        "other": [pii(other_val, "OTHER_IDENTIFIER")],
    }


def _session_slots(rng: random.Random) -> dict[str, Any]:
    """Days, times, dates, section numbers and placeholders."""
    return {
        "day": [lit(rng.choice(P.WEEKDAYS))],
        "day2": [lit(rng.choice(P.WEEKDAYS))],
        "when": lambda r: [lit(_session_time(r), "session_time")],
        "sdate": lambda r: [lit(_session_date(r), "session_date")],
        "unit": lambda r: [lit(f"{r.randint(1, 12)}.{r.randint(1, 9)}", "section_number")],
        "ph": lambda r: [lit(r.choice(chat.PLACEHOLDERS), "placeholder")],
        "phnum": lambda r: [lit(str(r.randint(2, 120)), "calculation")],
    }


NICKNAMES = {"Alexander": "Alex", "Alexandra": "Alex", "Benjamin": "Ben", "Christopher": "Chris",
             "Daniel": "Dan", "Elizabeth": "Liz", "Gabriel": "Gabe", "Isabella": "Bella", "Jacob": "Jake",
             "Jennifer": "Jen", "Jonathan": "Jon", "Joseph": "Joe", "Katherine": "Kate", "Matthew": "Matt",
             "Michael": "Mike", "Nicholas": "Nick", "Rebecca": "Becca", "Robert": "Rob", "Samantha": "Sam",
             "Samuel": "Sam", "Stephanie": "Steph", "Thomas": "Tom", "Victoria": "Tori", "William": "Will",
             "Zachary": "Zach", "Alejandro": "Alex", "Francisco": "Paco", "Guadalupe": "Lupe", "José": "Pepe",
             "Jessica": "Jess", "Anthony": "Tony", "Timothy": "Tim", "Margaret": "Maggie", "Patricia": "Patty"}


def _nickname(person: P.Person, rng: random.Random) -> str:
    """"Alex" for Alexander, "Kris" for Kristopher, initials ("MG") otherwise."""
    first = person.first
    if first in NICKNAMES:
        return NICKNAMES[first]
    if len(first) >= 7 and first[:4].isalpha():
        return first[:4]
    return (first[0] + person.last[0]).upper()


def _college(rng: random.Random) -> list[Seg]:
    college = rng.choice(chat.COLLEGES)
    if college.startswith("the "):
        return [lit("the "), pii(college[4:], "SCHOOL")]
    return [pii(college, "SCHOOL")]


def _hood(rng: random.Random) -> list[Seg]:
    hood = rng.choice(P.NEIGHBOURHOODS)
    if hood.startswith("the "):
        return [lit("the "), pii(hood[4:], "LOCATION")]
    return [pii(hood, "LOCATION")]


def _session_time(rng: random.Random) -> str:
    h = rng.randint(1, 8)
    m = rng.choice((0, 15, 30, 45))
    return rng.choice((f"{h}:{m:02d}", f"{h}:{m:02d} pm", f"{h}:{m:02d}pm", f"{h}pm", f"{h} o'clock"))


def _session_date(rng: random.Random) -> str:
    m, d = rng.randint(1, 12), rng.randint(1, 28)
    return rng.choice((f"{P.MONTHS[m - 1]} {d}", f"{m}/{d}", f"the {P.ordinal(d)}", f"{P.MONTH_ABBR[m - 1]} {P.ordinal(d)}"))


# ------------------------------------------------------------------------------------------
# session plan

Turn = tuple[str, list[Seg]]  # (role key, segments)


def _opening(ctx, rng) -> list[Turn]:
    turns: list[Turn] = [("T", pick(chat.TUTOR_GREET, ctx, rng)), ("S", pick(chat.STUDENT_GREET, ctx, rng))]
    if rng.random() < 0.35:
        turns += [("T", pick(chat.TUTOR_INTRO, ctx, rng)), ("S", pick(chat.STUDENT_INTRO, ctx, rng))]
    return turns


def _social(ctx, rng) -> list[Turn]:
    ask, answer = rng.choices(chat.SOCIAL_TOPICS, weights=chat.SOCIAL_WEIGHTS)[0]
    turns: list[Turn] = [("T", pick(ask, ctx, rng)), ("S", pick(answer, ctx, rng))]
    if rng.random() < 0.3:
        turns.append(("S", pick(answer, ctx, rng)))
    if rng.random() < 0.4:
        turns.append(("T", pick(chat.TUTOR_FILLER, ctx, rng)))
    return turns


def _problem(problem: Problem, ctx, rng) -> list[Turn]:
    full = {**ctx, **problem.ctx}
    turns: list[Turn] = []
    for role, template in problem.lines:
        r = rng.random()
        if role == "S" and r < 0.06:
            turns.append(("S", pick(chat.STUDENT_FILLER, full, rng)))
        elif role == "S" and r < 0.11:
            turns.append(("S", pick(chat.STUDENT_ASIDE, full, rng)))
        elif role == "S" and r < 0.16:
            turns.append(("S", pick(chat.STUDENT_MATH_REPLY, full, rng)))
        elif role == "T" and r < 0.07:
            turns.append(("T", pick(chat.TUTOR_MATH_TALK, full, rng)))
        elif role == "T" and r < 0.1:
            turns.append(("T", pick(chat.HOMONYM_LINES, full, rng)))
        if rng.random() < 0.1 and turns:
            continue  # real sessions skip steps
        turns.append((role, render(template, full, rng)))
    if rng.random() < 0.75:
        turns.append(("T", pick(chat.TUTOR_PRAISE, full, rng)))
    elif rng.random() < 0.5:
        turns.append(("T", pick(chat.TUTOR_ENCOURAGE, full, rng)))
    return turns


def _extras(ctx, rng) -> list[list[Turn]]:
    """Optional blocks that carry contact details, courses, a parent or placeholders."""
    blocks: list[list[Turn]] = []
    if rng.random() < 0.5:
        blocks.append([("T", pick(chat.TUTOR_COURSE, ctx, rng)), ("S", pick(chat.COURSE_TALK, ctx, rng))])
    for _ in range(rng.choice((0, 1, 1, 1, 2))):
        ask, answer = rng.choices(chat.CONTACT_TOPICS, weights=chat.CONTACT_WEIGHTS)[0]
        block = [("T", pick(ask, ctx, rng)), ("S", pick(answer, ctx, rng))]
        if rng.random() < 0.3:
            block.append(("T", pick(chat.TUTOR_CONTACT_GIVE, ctx, rng)))
        blocks.append(block)
    if rng.random() < 0.18:
        block = [("P", pick(chat.PARENT_LINES[:2], ctx, rng)), ("T", pick(chat.TUTOR_TO_PARENT, ctx, rng))]
        block += [("P", render(line, ctx, rng)) for line in rng.sample(chat.PARENT_LINES[2:], rng.randint(1, 2))]
        blocks.append(block)
    if rng.random() < 0.3:
        blocks.append([("T", pick(chat.PLACEHOLDER_LINES, ctx, rng)) for _ in range(rng.randint(1, 2))])
    return blocks


def _closing(ctx, rng) -> list[Turn]:
    turns: list[Turn] = []
    if rng.random() < 0.6:
        turns += [("T", pick(chat.TUTOR_SCHEDULE, ctx, rng)), ("S", pick(chat.STUDENT_SCHEDULE, ctx, rng))]
    turns += [("T", pick(chat.TUTOR_BYE, ctx, rng)), ("S", pick(chat.STUDENT_BYE, ctx, rng))]
    return turns


def generate_dialogue(
    rng: random.Random,
    pools: P.Pools,
    index: int,
    *,
    policy: str = "strict",
    seed: int = 0,
    length: tuple[int, int] = (18, 36),
    id_prefix: str = "synth",
    max_messages: int | None = None,
    hard_negatives: random.Random | None = None,
) -> Dialogue:
    """One dialogue with gold spans; ``rng`` drives every choice, ``pools`` supplies the people.
    ``hard_negatives``, when given, drives 1-4 extra turns of :func:`hard_negative_turns`.

    ``length`` is the range the session plan aims at (at least its minimum; a plan can overshoot
    the maximum); ``max_messages`` is a hard cap: small talk goes first, then the tail is cut.
    """
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; expected one of {', '.join(POLICIES)}")
    cast = make_cast(pools, rng)
    ctx = cast.ctx
    target = rng.randint(*length)
    opening, closing = _opening(ctx, rng), _closing(ctx, rng)
    middle: list[list[Turn]] = [_social(ctx, rng) for _ in range(rng.choice((0, 1, 1, 2, 2, 3)))]
    middle += _extras(ctx, rng)
    rng.shuffle(middle)
    budget = target - len(opening) - len(closing) - sum(len(b) for b in middle)
    insert_at = rng.randint(0, min(1, len(middle)))
    plan = _plan_problems(pools, rng, cast, budget)
    middle[insert_at:insert_at] = plan.blocks[:1]
    for block in plan.blocks[1:]:
        middle.insert(rng.randint(insert_at + 1, len(middle)), block)
    if max_messages is not None:
        ends = len(opening) + len(closing)
        middle = _fit(middle, plan.blocks, room=max_messages - ends, floor=length[0] - ends)
    turns = opening + [t for block in middle for t in block] + closing
    if hard_negatives is not None:
        for turn in hard_negative_turns(hard_negatives):
            turns.insert(hard_negatives.randint(len(opening), len(turns) - len(closing)), turn)
    if max_messages is not None:
        turns = turns[:max_messages]
    messages = _render_messages(turns, rng, policy)
    meta = {
        "generator": GENERATOR_NAME,
        "version": GENERATOR_VERSION,
        "seed": seed,
        "policy": policy,
        "problems": plan.kinds,
        "problem_characters": plan.characters,
    }
    anchor = plan.anchor
    return Dialogue(id=f"{id_prefix}-{seed}-{index:05d}", messages=tuple(messages), anchor=anchor, meta=meta)


def generate_lesson(
    rng: random.Random,
    pools: P.Pools,
    index: int,
    *,
    policy: str = "strict",
    seed: int = 0,
    length: tuple[int, int] = (18, 36),
    id_prefix: str = "synth",
    max_messages: int | None = None,
    named: random.Random | None = None,
) -> Dialogue:
    """One whole-class lesson transcript (:mod:`pipeline.synthetic.classroom`) with gold spans.
    ``named``, when given, drives the record of a transcript that names its speakers
    (:func:`~pipeline.synthetic.classroom.name_the_room`): speaker labels, timestamps, the
    teacher's surname in the id, a name and an e-mail in the metadata."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; expected one of {', '.join(POLICIES)}")
    turns, meta, cast = classroom.lesson_turns(pools, rng, rng.randint(*length))
    if max_messages is not None:
        turns = turns[:max_messages]
    messages = _render_messages(turns, rng, policy, typed=False)
    meta = {"generator": GENERATOR_NAME, "version": GENERATOR_VERSION, "seed": seed, "policy": policy, **meta}
    did = f"{id_prefix}-{seed}-{index:05d}"
    if named is not None:
        room = classroom.name_the_room(cast, [kind for kind, _ in turns], pools, named)
        messages = [replace(m, speaker=speaker, ts=ts)
                    for m, speaker, ts in zip(messages, room.speakers, room.times, strict=True)]
        did, meta = f"{did}.{room.id_tail}", {**meta, **room.meta}
    return Dialogue(id=did, messages=tuple(messages), anchor="", meta=meta)


def hard_negative_turns(rng: random.Random) -> list[Turn]:
    """Tutor and student turns made of endearments, fillers, maths words, "maam" and misspelt
    everyday words: never a span."""
    out: list[Turn] = []
    for _ in range(rng.randint(1, 4)):
        ctx = {
            "endear": [lit(rng.choice(chat.HARD_ENDEARMENTS), "endearment")],
            "hesit": [lit(rng.choice(chat.HARD_FILLERS), "filler")],
            "mword": [lit(rng.choice(chat.HARD_MATHS_WORDS), "maths_word")],
            "typo": [lit(rng.choice(chat.HARD_TYPOS), "typo")],
        }
        role = rng.choice("TS")
        out.append((role, pick(chat.TUTOR_HARD if role == "T" else chat.STUDENT_HARD, ctx, rng)))
    return out


@dataclass
class _ProblemPlan:
    """The maths problems of one dialogue: their turn blocks, kinds, characters and the anchor."""

    blocks: list[list[Turn]] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    characters: list[str] = field(default_factory=list)
    anchor: str = ""


def _plan_problems(pools: P.Pools, rng: random.Random, cast: Cast, budget: int) -> _ProblemPlan:
    """Problems until the session's message budget is spent (at least one), each a fresh kind
    while there are any, its characters' names kept apart from the cast's."""
    plan = _ProblemPlan()
    while budget > 0 or not plan.blocks:
        names = problem_names(pools, rng, set(cast.names) | set(plan.characters))
        fresh = [p for p in PROBLEMS if p.__name__ not in plan.kinds] or list(PROBLEMS)
        problem = rng.choice(fresh)(rng, names)
        plan.kinds.append(problem.kind)
        plan.characters += [c for c in problem.characters if c not in plan.characters]
        if not plan.anchor and problem.anchor and rng.random() < 0.6:
            plan.anchor = "".join(s[0] for s in render(problem.anchor, problem.ctx, rng))
        block = _problem(problem, cast.ctx, rng)
        plan.blocks.append(block)
        budget -= len(block)
    return plan


def _render_messages(turns: list[Turn], rng: random.Random, policy: str, *, typed: bool = True) -> list[Message]:
    """Turns to messages with chat noise (the student's level drawn per dialogue) and gold spans;
    the strict policy does not label word-problem characters. Transcribed speech
    (``typed=False``) keeps its spelling and only sometimes loses its capitals."""
    noise = rng.choice((0.0, 0.1, 0.2, 0.3, 0.45)) if typed else 0.05

    def keep(label: str, tag: str | None) -> str | None:
        return None if (tag == "problem_character" and policy == "strict") else label

    messages = []
    for i, (role, segs) in enumerate(turns):
        level = noise if role == "S" else (0.03 if role == "T" else 0.05)
        text, spans, traps = assemble(
            _tidy(chat_noise(segs, rng, level, words=typed and role != "T")), keep=keep
        )
        messages.append(
            Message(text=text, speaker=SPEAKERS[role], role=ROLES[role], index=i, spans=spans,
                    meta={"traps": traps} if traps else {})
        )
    return messages


def _fit(middle: list[list[Turn]], problems: list[list[Turn]], *, room: int, floor: int) -> list[list[Turn]]:
    """Drop small-talk blocks (never a maths problem), last first, until the middle fits ``room``,
    never going under ``floor`` turns (the caller cuts what is still over)."""
    kept = list(middle)
    size = sum(len(b) for b in kept)
    for block in reversed(middle):
        if size <= room:
            break
        if size - len(block) >= floor and not any(block is p for p in problems):
            kept.remove(block)
            size -= len(block)
    return kept


_SPACES = re.compile(r" {2,}")
_SPACE_BEFORE_PUNCT = re.compile(r" +(?=[,.!?])")


def _tidy(segs: list[Seg]) -> list[Seg]:
    """Collapse doubled spaces, drop spaces before closing punctuation, strip the outer white space."""
    out: list[Seg] = []
    prev_space = True
    for text, label, tag in segs:
        if label is None and tag is None:
            if "  " in text:
                text = _SPACES.sub(" ", text)
            if prev_space and text.startswith(" "):
                text = text[1:]
            if " " in text:
                text = _SPACE_BEFORE_PUNCT.sub("", text)
        if text:
            out.append((text, label, tag))
            prev_space = text.endswith(" ")
    while out and out[-1][1] is None and out[-1][2] is None and out[-1][0].endswith(" "):
        t = out[-1][0].rstrip()
        out[-1:] = [(t, None, None)] if t else []
    return out


def iter_corpus(
    n_dialogues: int, seed: int = 0, *, policy: str = "strict", length: tuple[int, int] = (18, 36),
    id_prefix: str = "synth", max_messages: int | None = None, classroom: float = CLASSROOM_SHARE,
    hard_negatives: float = HARD_NEGATIVE_SHARE, named_speakers: float = NAMED_SPEAKERS_SHARE,
) -> Iterator[Dialogue]:
    """Dialogue ``i`` depends only on ``(seed, i)``: a bigger corpus extends a smaller one.

    A ``classroom`` share of the dialogues are whole-class lessons, the rest tutoring sessions;
    which ones is drawn apart from the dialogue's own generator, so with ``classroom=0`` the
    corpus is the tutoring corpus of generator 1.0 (with ``hard_negatives=0``).
    A ``hard_negatives`` share of the tutoring sessions get hard-negative turns, and a
    ``named_speakers`` share of the lessons a record that names their speakers, drawn apart too.
    """
    for what, share in (("classroom", classroom), ("hard-negative", hard_negatives),
                        ("named-speakers", named_speakers)):
        if not 0 <= share <= 1:
            raise ValueError(f"{what} share must be between 0 and 1, not {share}")
    pools = P.build_pools(seed)
    for i in range(n_dialogues):
        rng = random.Random(seed * 1_000_003 + i)
        lesson = classroom > 0 and random.Random(f"classroom:{seed}:{i}").random() < classroom
        common = {"policy": policy, "seed": seed, "length": length, "id_prefix": id_prefix,
                  "max_messages": max_messages}
        if lesson:
            named = random.Random(f"named-speakers:{seed}:{i}")
            yield generate_lesson(rng, pools, i, **common,
                                  named=named if named.random() < named_speakers else None)
            continue
        hard = random.Random(f"hard-negatives:{seed}:{i}")
        yield generate_dialogue(rng, pools, i, **common,
                                hard_negatives=hard if hard.random() < hard_negatives else None)


def generate_corpus(
    n_dialogues: int, seed: int = 0, *, policy: str = "strict", length: tuple[int, int] = (18, 36),
    id_prefix: str = "synth", max_messages: int | None = None, classroom: float = CLASSROOM_SHARE,
    hard_negatives: float = HARD_NEGATIVE_SHARE, named_speakers: float = NAMED_SPEAKERS_SHARE,
) -> list[Dialogue]:
    return list(iter_corpus(n_dialogues, seed, policy=policy, length=length, id_prefix=id_prefix,
                            max_messages=max_messages, classroom=classroom, hard_negatives=hard_negatives,
                            named_speakers=named_speakers))


def generate_messages(n_messages: int, seed: int = 0, **kwargs: Any) -> list[Dialogue]:
    """Whole dialogues until at least ``n_messages`` messages (for benchmarks sized in messages)."""
    out: list[Dialogue] = []
    total = 0
    for d in iter_corpus(10**9, seed, **kwargs):
        out.append(d)
        total += len(d.messages)
        if total >= n_messages:
            break
    return out


def dialogue_to_row(dialogue: Dialogue) -> dict[str, Any]:
    """The import-format object, with each message's trap records kept under ``meta``."""
    from pipeline.corpus import dialogue_to_obj

    obj = dialogue_to_obj(dialogue)
    for out, m in zip(obj["messages"], dialogue.messages, strict=True):
        if m.meta:
            out["meta"] = dict(m.meta)
    return obj


def corpus_stats(dialogues: Iterable[Dialogue]) -> dict[str, Any]:
    labels: Counter[str] = Counter()
    traps: Counter[str] = Counter()
    n_d = n_m = 0
    anchors = 0
    for d in dialogues:
        n_d += 1
        anchors += bool(d.anchor)
        for m in d.messages:
            n_m += 1
            labels.update(s.label for s in m.spans)
            traps.update(t["kind"] for t in m.meta.get("traps", ()))
    return {
        "dialogues": n_d,
        "messages": n_m,
        "with_anchor": anchors,
        "spans": dict(sorted(labels.items())),
        "traps": dict(sorted(traps.items())),
    }
