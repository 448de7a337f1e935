"""The leak check: no original PII string may appear anywhere in a release.

Every original is looked for in every released field — each message's text, speaker label and
timestamp, the anchor, every metadata string and the dialogue id — with the matcher of
:mod:`pipeline.surrogates.scanner` (case-insensitive, word-bounded, and without spaces and
punctuation for phones, e-mails and ids). The few originals that would match ordinary maths talk
everywhere (ages, lower-case common words) are checked where they were replaced instead; the
report counts them apart. A release is publishable only with zero hits; each hit names its field.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pipeline.surrogates.fields import meta_items
from pipeline.surrogates.results import DeidResult
from pipeline.surrogates.scanner import Found, OriginalIndex, checked_in_place
from pipeline.types import Dialogue

MAX_LISTED_HITS = 1000


@dataclass(frozen=True, slots=True)
class LeakHit:
    dialogue_id: str
    index: int  # message index; -1 = anchor text; -2 = dialogue meta; -3 = the dialogue id
    start: int
    end: int
    label: str
    original: str
    found: str
    how: str  # text | compact | in_place
    field: str = "text"  # text | speaker | ts | anchor | meta.<key path> | id

    def to_dict(self, *, public: bool = False) -> dict[str, Any]:
        """``public``: positions only, without the original strings (the release's own file)."""
        out = {"dialogue_id": self.dialogue_id, "index": self.index, "field": self.field, "start": self.start,
               "end": self.end, "label": self.label, "how": self.how}
        return out if public else {**out, "original": self.original, "found": self.found}


@dataclass
class LeakReport:
    originals: int = 0
    scoped_originals: int = 0
    messages_scanned: int = 0
    total_hits: int = 0
    hits: list[LeakHit] = field(default_factory=list)
    by_label: Counter = field(default_factory=Counter)

    @property
    def publishable(self) -> bool:
        return self.total_hits == 0

    def add(self, hit: LeakHit) -> None:
        self.total_hits += 1
        self.by_label[hit.label] += 1
        if len(self.hits) < MAX_LISTED_HITS:
            self.hits.append(hit)

    def state(self) -> dict[str, Any]:
        """What this report found, as plain JSON, for :meth:`merge` (strings found included: private)."""
        return {"originals": self.originals, "scoped_originals": self.scoped_originals,
                "messages_scanned": self.messages_scanned, "total_hits": self.total_hits,
                "by_label": dict(self.by_label), "hits": [h.to_dict() for h in self.hits]}

    def merge(self, state: dict[str, Any]) -> None:
        """Add what the check of a later part of the release found (its :meth:`state`): reports of
        consecutive parts merged in order are the report of the whole release (every part checks
        the same originals: the corpus's)."""
        self.originals, self.scoped_originals = state["originals"], state["scoped_originals"]
        self.messages_scanned += state["messages_scanned"]
        self.total_hits += state["total_hits"]
        self.by_label.update(state["by_label"])
        self.hits.extend(LeakHit(**h) for h in state["hits"][: MAX_LISTED_HITS - len(self.hits)])

    def to_dict(self, *, public: bool = False) -> dict[str, Any]:
        return {
            "publishable": self.publishable,
            "originals_checked": self.originals,
            "originals_checked_in_place": self.scoped_originals,
            "messages_scanned": self.messages_scanned,
            "leaks": self.total_hits,
            "leaks_by_label": dict(sorted(self.by_label.items())),
            "hits": [h.to_dict(public=public) for h in self.hits],
            "hits_truncated": self.total_hits > len(self.hits),
        }


def released_fields(dialogue: Dialogue) -> list[tuple[int, str, str]]:
    """``(index, field, string)`` of every string a released dialogue carries, for the leak check."""
    fields: list[tuple[int, str, str]] = [(-3, "id", dialogue.id)]
    for m in dialogue.messages:
        fields.append((m.index, "text", m.text))
        if m.speaker:
            fields.append((m.index, "speaker", m.speaker))
        if m.ts:
            fields.append((m.index, "ts", m.ts))
    if dialogue.anchor:
        fields.append((-1, "anchor", dialogue.anchor))
    fields.extend((-2, f"meta.{path}", value) for path, value in meta_items(dialogue.meta) if isinstance(value, str))
    return fields


class LeakChecker:
    """Collect the originals of a corpus, then scan release dialogues for them."""

    def __init__(self, originals: Iterable[tuple[str, str]] = ()) -> None:
        self.index = OriginalIndex()
        self.report = LeakReport()
        for label, text in originals:
            self.add(label, text)

    @classmethod
    def over(cls, index: OriginalIndex) -> LeakChecker:
        """A checker with a report of its own over an index built before: the parts of one release
        share it (it takes seconds to build at a million messages, and scanning never changes it)."""
        checker = cls()
        checker.index = index
        checker.report.originals, checker.report.scoped_originals = index.scanned, index.in_place
        return checker

    def add(self, label: str, text: str) -> None:
        self.index.add(label, text)
        self.report.originals = self.index.scanned
        self.report.scoped_originals = self.index.in_place

    def __len__(self) -> int:
        return self.index.scanned + self.index.in_place

    def scan_text(self, text: str) -> list[Found]:
        return self.index.scan(text)

    def check_dialogue(self, dialogue: Dialogue, *, keyed_id: bool = False) -> list[LeakHit]:
        """Scan every released field; ``keyed_id``: the id is the release's own (an HMAC in hex,
        whose letters would match any one-letter original), so it is not read."""
        hits = [LeakHit(dialogue.id, index, f.start, f.end, f.original.label, f.original.text,
                        text[f.start : f.end], f.how, name)
                for index, name, text in released_fields(dialogue) if not (keyed_id and name == "id")
                for f in self.index.scan(text)]
        self.report.messages_scanned += len(dialogue.messages)
        for h in hits:
            self.report.add(h)
        return hits

    def check_result(self, result: DeidResult) -> list[LeakHit]:
        """Scan a release dialogue, and check in place the originals the scan skips."""
        hits = self.check_dialogue(result.release, keyed_id=result.release.id != result.original.id)
        if not any(checked_in_place(e.original, e.label) for e in result.mapping):
            return hits
        texts = {m.index: m.text for m in result.release.messages}
        source = {m.index: m.text for m in result.original.messages}
        if result.original.anchor:
            texts[-1], source[-1] = result.release.anchor, result.original.anchor
        for r in result.replacements:
            before = source.get(r.index, "")[r.start : r.end].strip()
            after = texts.get(r.index, "")[r.new_start : r.new_end]
            if checked_in_place(before, r.label) and re.search(
                rf"(?<!\w){re.escape(before)}(?!\w)", after, re.IGNORECASE
            ):
                hit = LeakHit(
                    result.release.id,
                    r.index,
                    r.new_start,
                    r.new_end,
                    r.label,
                    before,
                    after,
                    "in_place",
                )
                self.report.add(hit)
                hits.append(hit)
        return hits
