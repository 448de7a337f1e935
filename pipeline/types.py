"""Plain value objects shared by every detector, metric and surrogate strategy.

Offsets are Python ``str`` code-point offsets with an exclusive end, the same convention the
database uses, so a span can travel from a detector to a page to an export without conversion.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

MATH = "MATH"
NON_MATH = "NON-MATH"

SPEAKER_ROLES = ("tutor", "student", "other")


@dataclass(frozen=True, slots=True)
class LabelDef:
    """One PII type of a project's taxonomy. It has no key of its own: a screen that labels by key
    gives each label the key of its place in the taxonomy."""

    label: str
    description: str
    color: str = "#fde68a"


DEFAULT_TAXONOMY: tuple[LabelDef, ...] = (
    LabelDef("NAME", "A real person: student, tutor, parent, teacher.", "#fca5a5"),
    LabelDef("SCHOOL", "A school, college or district attended or worked at.", "#fdba74"),
    LabelDef("LOCATION", "Address, city or neighbourhood that locates a participant.", "#fcd34d"),
    LabelDef("AGE", "A participant's age.", "#bef264"),
    LabelDef("DATE_OF_BIRTH", "A birthday or date of birth.", "#86efac"),
    LabelDef("EMAIL", "An e-mail address.", "#6ee7b7"),
    LabelDef("PHONE", "A telephone number.", "#5eead4"),
    LabelDef("URL", "A personal web address or profile link.", "#7dd3fc"),
    LabelDef("USERNAME", "A handle, login or gamer tag.", "#a5b4fc"),
    LabelDef("ID_NUMBER", "A student id, licence, account or other identifying number.", "#c4b5fd"),
    LabelDef("COURSE", "A course code with its number, such as 'Algebra 300'.", "#f0abfc"),
    LabelDef("OTHER_IDENTIFIER", "Anything else that identifies a participant.", "#f9a8d4"),
)

DEFAULT_LABELS: tuple[str, ...] = tuple(d.label for d in DEFAULT_TAXONOMY)


class SpanError(ValueError):
    """A span that does not fit its text."""


@dataclass(frozen=True, slots=True, order=True)
class Span:
    """A labelled character range of one message."""

    start: int
    end: int
    label: str
    score: float = field(default=1.0, compare=False)
    source: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not (isinstance(self.start, int) and isinstance(self.end, int)):
            raise SpanError(f"span offsets must be integers, got {self.start!r}..{self.end!r}")
        if self.start < 0 or self.end <= self.start:
            raise SpanError(f"span {self.start}..{self.end} is empty or negative")

    def check(self, text: str) -> Span:
        """Raise unless ``0 <= start < end <= len(text)``; returns itself for chaining."""
        if self.end > len(text):
            raise SpanError(
                f"span {self.start}..{self.end} runs past the end of a {len(text)}-character text"
            )
        return self

    def overlaps(self, other: Span) -> bool:
        return self.start < other.end and other.start < self.end

    def key(self) -> tuple[int, int, str]:
        return (self.start, self.end, self.label)

    def to_dict(self, *, with_score: bool = True, with_source: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"start": self.start, "end": self.end, "label": self.label}
        if with_score:
            out["score"] = round(float(self.score), 6)
        if with_source and self.source and self.source != self.label:
            out["source"] = self.source
        return out


@dataclass(frozen=True, slots=True)
class Message:
    text: str
    speaker: str = ""
    role: str = "other"
    index: int = 0
    ts: str | None = None
    spans: tuple[Span, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Dialogue:
    id: str
    messages: tuple[Message, ...]
    anchor: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict)

    def window(self, index: int, size: int = 3) -> tuple[Message, ...]:
        """The centred context window around message ``index`` (PIIvot's previous/target/next)."""
        half = max(size, 1) // 2
        lo, hi = max(0, index - half), min(len(self.messages), index + half + 1)
        return self.messages[lo:hi]


@dataclass(frozen=True, slots=True)
class Detection:
    """What a detector says about one message: its spans and, optionally, its segment and how
    near the model came to another call (``margin``, see :func:`pipeline.tags.decision_margin`)."""

    dialogue_id: str
    index: int
    spans: tuple[Span, ...] = ()
    segment: str | None = None
    segment_score: float | None = None
    margin: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "dialogue_id": self.dialogue_id,
            "index": self.index,
            "spans": [s.to_dict(with_source=True) for s in sorted(self.spans)],
        }
        if self.segment is not None:
            out["segment"] = self.segment
            if self.segment_score is not None:
                out["segment_score"] = round(self.segment_score, 6)
        return out


@runtime_checkable
class Detector(Protocol):
    """The one interface every detector implements (:class:`pipeline.detectors.base.BaseDetector`
    is its shared plumbing); here so the registry can name it without importing detectors."""

    name: str
    version: str
    config: Mapping[str, Any]

    def detect(self, dialogue: Dialogue) -> list[Detection]:
        """One Detection per message of ``dialogue``, in order."""
        ...

    def detect_many(self, dialogues: Iterable[Dialogue]) -> Iterator[list[Detection]]:
        """Like :meth:`detect` over many dialogues; detectors that batch override it."""
        ...

    @property
    def model_version(self) -> str:
        """The exact model (weights, prompt file) this detector's output depends on."""
        ...


def resolve_overlaps(spans: Iterable[Span]) -> list[Span]:
    """Keep a non-overlapping subset: higher score first, then longer, then earlier."""
    chosen: list[Span] = []
    for span in sorted(spans, key=lambda s: (-s.score, -(s.end - s.start), s.start, s.label)):
        if not any(span.overlaps(c) for c in chosen):
            chosen.append(span)
    return sorted(chosen)
