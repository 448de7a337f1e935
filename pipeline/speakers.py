"""Speaker labels: which name a person ("Caleb", "Ms. Carroll") and which name a role ("T2",
"Student 3", "All students").

Real classroom transcripts label turns with the speakers' own names as often as with roles, and a
label that is a name is personal data like any name in the text: the release gives it the same
person's surrogate, the sweeps look for it in every field, and the ``speakers`` detector suggests
its mentions to annotators. A label is a **role** when, once digits, single letters ("Student A",
"T2") and titles are set aside, every word left is a role word (:data:`DEFAULT_ROLE_LABELS`, or
a project's own list); anything else names someone. That errs toward privacy: an unknown word
("Facilitator2" is a role, "Kiddo" is not in the list) is pseudonymised rather than published;
a project that labels turns with other role words adds them to its list.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

from pipeline.text import fold

TITLE_RE = re.compile(
    r"^(?P<title>(?:mr|mrs|ms|miss|mx|dr|prof|professor|coach|mister|missus|sir|madam|madame|"
    r"señor|señora|senor|senora|mme|mlle)\.?)(?P<sep>\s+)",
    re.IGNORECASE,
)
TITLE_WORDS = frozenset((
    "mr", "mrs", "ms", "miss", "mx", "dr", "prof", "professor", "coach", "mister", "missus", "sir",
    "madam", "madame", "senor", "senora", "mme", "mlle",
))

DEFAULT_ROLE_LABELS: tuple[str, ...] = (
    "adult", "agent", "ai", "aide", "all", "and", "another", "assistant", "audio", "bot", "boy",
    "boys", "child", "children", "class", "classroom", "co", "coteacher", "crosstalk", "dad",
    "everybody", "everyone", "facilitator", "father", "female", "girl", "girls", "group", "groups",
    "guardian", "inaudible", "ins", "instructor", "instructors", "interviewee", "interviewer",
    "kid", "kids", "learner", "learners", "male", "man", "many", "moderator", "mom", "mother",
    "multiple", "narrator", "new", "observer", "of", "other", "others", "para", "paraprofessional",
    "parent", "parents", "participant", "participants", "person", "principal", "pupil", "pupils",
    "recording", "researcher", "s", "several", "some", "speaker", "speakers", "ss", "st", "staff",
    "stu", "student", "students", "system", "t", "table", "tch", "teacher", "teachers", "the",
    "transcriber", "tt", "tut", "tutee", "tutor", "tutors", "unclear", "unidentified", "unknown",
    "user", "video", "visitor", "voice", "voices", "volunteer", "with", "woman",
)

_WORD_RE = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
_GLUED_TITLE_RE = re.compile(r"^((?:mr|mrs|ms|mx|dr|prof)\.)(?=[^\W\d_])", re.IGNORECASE)
_SPACES_RE = re.compile(r"\s+")


def role_words(extra: Iterable[str] | None = None) -> frozenset[str]:
    """The folded role words: the defaults, or ``extra`` when a project gives its own list."""
    words = DEFAULT_ROLE_LABELS if extra is None else tuple(extra)
    return frozenset(fold(w.strip()) for w in words if w.strip())


def speaker_name(label: str, roles: Collection[str] | None = None) -> str | None:
    """The person a speaker label names, written as a name ("Ms.Carroll" → "Ms. Carroll",
    "Caleb:" → "Caleb", "Student Caleb" → "Caleb"), or ``None`` for a role label.

    ``roles`` are folded role words (:func:`role_words`); the defaults when ``None``."""
    roles = role_words() if roles is None else roles
    text = _SPACES_RE.sub(" ", label).strip()
    text = _GLUED_TITLE_RE.sub(r"\1 ", text)
    words = list(_WORD_RE.finditer(text))
    named = [m for m in words
             if len(m.group()) > 1 and fold(m.group()) not in roles and fold(m.group()) not in TITLE_WORDS]
    if not named:
        return None
    start, end = named[0].start(), named[-1].end()
    title = TITLE_RE.match(text)
    if title and not any(m.start() < title.end() for m in named):
        start = 0  # keep the title: "Ms. Carroll" is the person, "Carroll" a part of her
    return text[start:end]


def named_speakers(labels: Iterable[str], roles: Collection[str] | None = None) -> dict[str, str]:
    """``label -> name`` for the labels that name someone (each label once)."""
    roles = role_words() if roles is None else roles
    out: dict[str, str] = {}
    for label in labels:
        if label not in out and (name := speaker_name(label, roles)) is not None:
            out[label] = name
    return out
