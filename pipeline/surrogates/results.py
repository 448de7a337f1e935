"""What de-identifying one dialogue gives: the release, each replacement made in it, the mapping
table's rows (the key to the originals, kept apart from the release) and the released strings
outside the messages. The engine makes them; the leak check, the utility report and the audit
read them."""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.surrogates.candidates import Candidate
from pipeline.types import Dialogue

REDACTED = "[REDACTED]"


def tag_for(label: str) -> str:
    return f"<{label}>"


@dataclass(frozen=True, slots=True)
class MappingEntry:
    """One row of the mapping table: admin-only, never part of the release."""

    dialogue_id: str
    label: str
    original: str
    surrogate: str
    method: str  # llm | offline | tag | redact

    def to_dict(self) -> dict[str, str]:
        return {
            "dialogue_id": self.dialogue_id,
            "label": self.label,
            "original": self.original,
            "surrogate": self.surrogate,
            "method": self.method,
        }


@dataclass(frozen=True, slots=True)
class Replacement:
    """One replaced range: where it was, where its replacement is, and how it was chosen."""

    index: int  # message index; -1 for the anchor text
    start: int
    end: int
    label: str
    new_start: int
    new_end: int
    method: str
    propagated: bool = False  # found by the consistency sweep rather than given as a span


@dataclass(frozen=True, slots=True)
class FieldText:
    """A released string outside the messages (the anchor, a metadata value) and what replaced
    what in it: the second opinion reads it and maps its hits back to the original."""

    field: str  # "anchor" or "meta.<key path>"
    index: int  # -1 for the anchor, -2 for metadata (as in Candidate and LeakHit)
    original: str
    released: str
    replacements: tuple[Replacement, ...] = ()


@dataclass
class DeidResult:
    original: Dialogue
    release: Dialogue
    replacements: list[Replacement] = field(default_factory=list)
    mapping: list[MappingEntry] = field(default_factory=list)
    # what the self-audit could not settle alone (see pipeline.surrogates.candidates)
    candidates: list[Candidate] = field(default_factory=list)
    fields: list[FieldText] = field(default_factory=list)  # the released strings outside the messages

    @property
    def originals(self) -> list[tuple[str, str]]:
        """``(label, original text)`` of every mapped value (for the leak check)."""
        return [(m.label, m.original) for m in self.mapping]
