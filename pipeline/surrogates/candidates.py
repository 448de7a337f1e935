"""Release-review candidates: what a release's self-audit could not settle on its own.

A release replaces what gold (or a run) marked. Its self-audit then looks for what nobody marked
(fragments of originals, incomplete structured identifiers, hits of an independent second
detector on the released text) and for replacements that may have changed teaching content
(a bare number in maths). Each such place is a :class:`Candidate`: a person must *confirm* it
(it becomes a gold span and the release is rebuilt) or *dismiss* it (recorded as "not PII", so
the next build does not ask again). A release is publishable only when none is pending.

Offsets are always those of the **original** text (code points, end exclusive) of the message, or
of the field outside the messages that ``field`` names (the anchor, a metadata value), so a
confirmed candidate can become a gold span as it is, and a dismissal keeps matching the same
place across rebuilds. The candidate's ``text`` is an original string: it belongs in the private
directory only, never in a downloadable file (:meth:`Candidate.public_dict` leaves it out).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

REASONS = (
    "fragment",  # a part of a marked original, found unmarked, that is unsafe to replace (a common word)
    "incomplete",  # a structured span (PHONE, EMAIL, URL, ID_NUMBER, USERNAME) its pattern could not complete
    "second_opinion",  # an independent detector found it in the released text
    "maths_number",  # a bare-number span in a maths-dense segment: kept, not replaced
    "word_problem_number",  # a bare-number span whose number also appears in the dialogue's word problem
    "uncued_number",  # a bare-number span with no cue for its label anywhere in its message: kept
)
# A kept bare number: teaching content unless a person says which PII it is, so a confirmation
# names its label (a reviewer's generic "yes" on "6/28" made a date of a fraction).
NUMBER_REASONS = ("maths_number", "word_problem_number", "uncued_number")


def candidate_key(dialogue_id: str, index: int, start: int, end: int, text: str, field: str = "") -> str:
    """A stable fingerprint of a place and what it holds (dismissals are matched by it).

    The label is left out on purpose: a dismissed "not PII" holds whatever label the next
    detector would give the same words. ``field`` names a place outside a message's text
    ("meta.teacher"); a message's text keeps the fingerprint it always had.
    """
    raw = "\x1f".join((dialogue_id, str(index), str(start), str(end), text, *((field,) if field else ())))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Candidate:
    dialogue_id: str
    index: int  # message index; -1 for the anchor text
    start: int  # in the original message text
    end: int
    label: str  # the label a confirmation would give the gold span
    reason: str  # one of REASONS
    text: str  # the original words (private)
    source: str = ""  # which check or detector found it (never shown to reviewers: they stay blind)
    field: str = ""  # "" for a message's text; "anchor" or "meta.<key path>" outside the messages

    def __post_init__(self) -> None:
        if self.reason not in REASONS:
            raise ValueError(f"unknown candidate reason {self.reason!r}")
        if not 0 <= self.start < self.end:
            raise ValueError(f"bad candidate offsets {self.start}..{self.end}")

    @property
    def key(self) -> str:
        return candidate_key(self.dialogue_id, self.index, self.start, self.end, self.text, self.field)

    def to_dict(self) -> dict[str, Any]:
        """Everything, for the private directory."""
        return {**self.public_dict(), "text": self.text, "source": self.source}

    def public_dict(self) -> dict[str, Any]:
        """Positions and counts only: safe in the downloadable release."""
        return {
            "key": self.key,
            "dialogue_id": self.dialogue_id,
            "index": self.index,
            "start": self.start,
            "end": self.end,
            "label": self.label,
            "reason": self.reason,
            "field": self.field or "text",
        }

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> Candidate:
        return cls(
            dialogue_id=obj["dialogue_id"],
            index=int(obj["index"]),
            start=int(obj["start"]),
            end=int(obj["end"]),
            label=obj["label"],
            reason=obj["reason"],
            text=obj.get("text", ""),
            source=obj.get("source", ""),
            field="" if obj.get("field", "text") == "text" else obj["field"],
        )
