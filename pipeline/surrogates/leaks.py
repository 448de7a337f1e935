"""The leak check: no original PII string may appear anywhere in a release.

Every original is looked for case-insensitively and word-bounded in every message and anchor text;
phones, e-mails, ids, URLs and usernames are also compared with spaces and punctuation removed
("555 201 3344" finds "(555) 201-3344"). Two deliberate exceptions, both reported in the summary:

- originals of at most three digits (ages, "42") would match the maths of every dialogue ("12
  apples"), so they are checked where they were replaced (the release text there must differ)
  instead of corpus-wide;
- a name that is also a common English word ("Will", "May") is matched in its capitalised form
  only, so "I will help" is not a leak of a student named Will.

Scanning is linear in the text: candidates are found through a dict keyed by their first word.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pipeline.surrogates.engine import DeidResult
from pipeline.surrogates.keyed import compact, normalize
from pipeline.surrogates.pools import COMMON_WORD_NAMES
from pipeline.surrogates.rules import COMPACT_LABELS
from pipeline.types import Dialogue

_WORD_RE = re.compile(r"\w+")
_RUN_RE = re.compile(r"[^\W_]+")
_COMPACT_PREFIX = 6
MAX_LISTED_HITS = 1000


@dataclass(frozen=True, slots=True)
class LeakHit:
    dialogue_id: str
    index: int  # message index; -1 = anchor text
    start: int
    end: int
    label: str
    original: str
    found: str
    how: str  # text | compact | scoped

    def to_dict(self) -> dict[str, Any]:
        return {
            "dialogue_id": self.dialogue_id,
            "index": self.index,
            "start": self.start,
            "end": self.end,
            "label": self.label,
            "original": self.original,
            "found": self.found,
            "how": self.how,
        }


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "publishable": self.publishable,
            "originals_checked": self.originals,
            "originals_checked_in_place": self.scoped_originals,
            "messages_scanned": self.messages_scanned,
            "leaks": self.total_hits,
            "leaks_by_label": dict(sorted(self.by_label.items())),
            "hits": [h.to_dict() for h in self.hits],
            "hits_truncated": self.total_hits > len(self.hits),
        }


@dataclass(frozen=True, slots=True)
class _Original:
    label: str
    text: str  # as first seen
    needle: str  # lower case, edge punctuation stripped, single spaces
    pattern: re.Pattern[str]
    case_sensitive: bool


def _is_scoped(text: str) -> bool:
    core = text.strip()
    return core.isdigit() and len(core) <= 3


class LeakChecker:
    """Collect the originals of a corpus, then scan release dialogues for them."""

    def __init__(self, originals: Iterable[tuple[str, str]] = ()) -> None:
        self._by_word: dict[str, list[_Original]] = defaultdict(list)
        self._by_compact: dict[str, list[tuple[str, _Original]]] = defaultdict(list)
        self._seen: set[tuple[str, str]] = set()
        self.report = LeakReport()
        for label, text in originals:
            self.add(label, text)

    def add(self, label: str, text: str) -> None:
        needle = re.sub(r"\s+", " ", text.strip().lower()).strip(" .,;:!?\"'()[]{}<>")
        needle = re.sub(r"^[^\w]+|[^\w]+$", "", needle)
        if not needle or (label, needle) in self._seen:
            return
        self._seen.add((label, needle))
        if _is_scoped(needle):
            self.report.scoped_originals += 1
            return
        self.report.originals += 1
        case_sensitive = normalize(text) in COMMON_WORD_NAMES
        body = re.escape(text.strip() if case_sensitive else needle).replace(r"\ ", r"\s+")
        flags = 0 if case_sensitive else re.IGNORECASE
        pattern = re.compile(rf"{body}(?!\w)", flags)
        orig = _Original(label, text.strip(), needle, pattern, case_sensitive)
        first = _WORD_RE.search(needle)
        if first is not None:
            self._by_word[first.group()].append(orig)
        if label in COMPACT_LABELS:
            c = compact(needle)
            if len(c) >= _COMPACT_PREFIX:
                self._by_compact[c[:_COMPACT_PREFIX]].append((c, orig))

    def __len__(self) -> int:
        return self.report.originals + self.report.scoped_originals

    # --- scanning ------------------------------------------------------------------------

    def scan_text(self, text: str) -> list[tuple[int, int, _Original, str]]:
        """``(start, end, original, how)`` of every original found in ``text``."""
        found: list[tuple[int, int, _Original, str]] = []
        low = text.lower()
        same_length = len(low) == len(text)
        for m in _WORD_RE.finditer(low if same_length else text):
            cands = self._by_word.get(m.group().lower())
            if not cands:
                continue
            if m.start() > 0 and (text[m.start() - 1].isalnum() or text[m.start() - 1] == "_"):
                continue
            for orig in cands:
                hit = orig.pattern.match(text, m.start())
                if hit:
                    found.append((hit.start(), hit.end(), orig, "text"))
        if self._by_compact:
            found.extend(self._scan_compact(text, {(s, e) for s, e, _, _ in found}))
        return found

    def _scan_compact(self, text: str, already: set[tuple[int, int]]):
        runs = list(_RUN_RE.finditer(text))
        if not runs:
            return []
        ctext = "".join(r.group().lower() for r in runs)
        starts: list[int] = []  # compact index of each run start
        pos = 0
        for r in runs:
            starts.append(pos)
            pos += len(r.group())
        ends = {s + len(r.group()): k for k, (s, r) in enumerate(zip(starts, runs, strict=True))}
        out = []
        for k, cs in enumerate(starts):
            cands = self._by_compact.get(ctext[cs : cs + _COMPACT_PREFIX])
            if not cands:
                continue
            for c, orig in cands:
                ce = cs + len(c)
                if ctext.startswith(c, cs) and ce in ends:
                    s, e = runs[k].start(), runs[ends[ce]].end()
                    if (s, e) not in already and not any(a <= s and e <= b for a, b in already):
                        out.append((s, e, orig, "compact"))
        return out

    def check_dialogue(self, dialogue: Dialogue) -> list[LeakHit]:
        hits = []
        texts = [(m.index, m.text) for m in dialogue.messages]
        if dialogue.anchor:
            texts.append((-1, dialogue.anchor))
        for index, text in texts:
            for s, e, orig, how in self.scan_text(text):
                hits.append(LeakHit(dialogue.id, index, s, e, orig.label, orig.text, text[s:e], how))
        self.report.messages_scanned += len(dialogue.messages)
        for h in hits:
            self.report.add(h)
        return hits

    def check_result(self, result: DeidResult) -> list[LeakHit]:
        """Scan a release dialogue, and check in place the short numbers it replaced."""
        hits = self.check_dialogue(result.release)
        originals = {
            normalize(e.original): e for e in result.mapping if _is_scoped(e.original)
        }
        if originals:
            texts = {m.index: m.text for m in result.release.messages}
            source = {m.index: m.text for m in result.original.messages}
            for r in result.replacements:
                before = source.get(r.index, "")[r.start : r.end]
                after = texts.get(r.index, "")[r.new_start : r.new_end]
                entry = originals.get(normalize(before))
                if entry is not None and re.search(rf"(?<!\d){re.escape(before.strip())}(?!\d)", after):
                    hit = LeakHit(result.release.id, r.index, r.new_start, r.new_end, r.label, before, after, "scoped")
                    self.report.add(hit)
                    hits.append(hit)
        return hits
