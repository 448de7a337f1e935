"""Find original PII strings in a text: the one matcher the leak check and the sweep share.

An original is found word-bounded, folding case, accents and apostrophes ("José" finds "jose" and
"JOSE", "O'Brien" finds "O’Brien": :func:`pipeline.text.fold`); phones, e-mails, ids, URLs and
usernames also with spaces and punctuation removed ("555 201 3344" finds "(555) 201-3344").
Originals that would match ordinary text everywhere are *checked in place* instead (the text that
replaced them must differ), and are reported as such:

- numbers of at most four digits or spelled out (ages, "42", "1990", "twelve" — "12 apples" and
  "2023 minus 1990" are maths; four digits identify nobody);
- dates without a year ("July 18": word problems are full of them; one day in 365 identifies
  nobody), while a full date of birth ("July 18, 2012") is looked for everywhere;
- originals made only of common English or maths words and small numbers ("math", "will",
  "is 16") written in lower case; with a capital ("Will", "IS 16") they are found
  case-sensitively, and a single word not at the start of a sentence ("May I go?").

Scanning is linear in the text: candidates are found through a dict keyed by their first word.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from pipeline.filters.vocabulary import is_common_word
from pipeline.surrogates.formats import WORD_NUMBERS
from pipeline.surrogates.keyed import compact, normalize
from pipeline.surrogates.names import TITLE_RE
from pipeline.surrogates.rules import COMPACT_LABELS, DATE_LABELS, RELAXED_LABELS
from pipeline.text import fold

_WORD_RE = re.compile(r"\w+")
_RUN_RE = re.compile(r"[^\W_]+")
_SENTENCE_START_RE = re.compile(r"(?:^|[.!?:;\n]\s*|[\"“(]\s*)$")
_COMPACT_PREFIX = 6
_DIGIT_AT_RE = re.compile(r"[\d@]")
_SPACES_RE = re.compile(r"\s+")
_ODD_SPACE_RE = re.compile(r"\s\s|[^\S ]")
_EDGES_RE = re.compile(r"^[\W_]+|[\W_]+$")
_YEAR_RE = re.compile(r"\b(?:1[89]|20)\d\d\b|\d{1,2}[/.-]\d{1,2}[/.-]\d{2}\b")


def _weak_word(word: str) -> bool:
    return is_common_word(word) or (word.isdigit() and len(word) <= 3) or word in WORD_NUMBERS


def is_weak(text: str) -> bool:
    """Made only of common words and small numbers ("Will", "is 16", "twelve"): ordinary text."""
    words = normalize(text).split()
    return bool(words) and all(_weak_word(w) for w in words)


def checked_in_place(text: str, label: str = "") -> bool:
    """Originals the corpus-wide scan skips: weak ones written without a capital letter."""
    core = text.strip()
    if core.isdigit() and len(core) <= 4:
        return True
    if label in DATE_LABELS and not _YEAR_RE.search(core):
        return True
    return is_weak(core) and not any(c.isupper() for c in core)


@dataclass(frozen=True, slots=True)
class Original:
    label: str
    text: str  # as first registered
    source: str  # what is compared: lower case, or exact when case-sensitive
    case_sensitive: bool
    single_word: bool


@dataclass(frozen=True, slots=True)
class Found:
    start: int
    end: int
    original: Original
    how: str  # text | compact


@lru_cache(maxsize=4096)
def _loose(source: str, case_sensitive: bool) -> re.Pattern[str]:
    """``source`` with any run of white space between its words (rarely needed)."""
    body = re.escape(source).replace(r"\ ", r"\s+")
    return re.compile(body, 0 if case_sensitive else re.IGNORECASE)


def _word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _bounded(text: str, end: int) -> bool:
    return end == len(text) or not _word_char(text[end])


class OriginalIndex:
    """Originals by first word (and by compact prefix) for a linear scan of any text."""

    def __init__(self) -> None:
        # first word -> length -> lower-case needle -> originals (case-insensitive ones), and
        # first word -> originals compared case-sensitively (a few weak ones: "Will", "IS 16")
        self._by_word: dict[str, dict[int, dict[str, list[Original]]]] = defaultdict(dict)
        self._exact: dict[str, list[Original]] = defaultdict(list)
        self._multi: dict[str, list[tuple[str, Original]]] = defaultdict(
            list
        )  # needles with spaces
        self._by_compact: dict[str, list[tuple[str, Original]]] = defaultdict(list)
        self._seen: set[tuple[str, str]] = set()
        self.scanned = 0
        self.in_place = 0

    def add(self, label: str, text: str) -> bool:
        """Register one original; ``False`` when it is checked in place (or already known)."""
        core = _EDGES_RE.sub("", _SPACES_RE.sub(" ", text.strip()))
        needle = fold(core)
        if not needle or (label, needle) in self._seen:
            return False
        self._seen.add((label, needle))
        if checked_in_place(text, label):
            self.in_place += 1
            return False
        self.scanned += 1
        case_sensitive = is_weak(text)
        orig = Original(
            label,
            text.strip(),
            core if case_sensitive else needle,
            case_sensitive,
            " " not in needle,
        )
        first = _WORD_RE.search(needle)
        if first is not None:
            if case_sensitive:
                self._exact[first.group()].append(orig)
            else:
                by_len = self._by_word[first.group()]
                by_len.setdefault(len(needle), {}).setdefault(needle, []).append(orig)
                if " " in needle:
                    self._multi[first.group()].append((needle, orig))
        if label in COMPACT_LABELS and _DIGIT_AT_RE.search(needle):
            c = compact(needle)
            if len(c) >= _COMPACT_PREFIX:
                self._by_compact[c[:_COMPACT_PREFIX]].append((c, orig))
        return True

    def __len__(self) -> int:
        return self.scanned

    def scan(
        self, text: str, *, sentence_starts: bool = True, any_case: bool = False
    ) -> list[Found]:
        """Every registered original found in ``text``, in order of position.

        ``sentence_starts=False`` also reports a capitalised common word at the start of a
        sentence (for checking a surrogate, which may be placed mid-sentence); ``any_case=True``
        compares the case-sensitive originals in any case too (a surrogate may be re-cased).
        """
        if not (self._by_word or self._exact):
            return []
        found: list[Found] = []
        low = fold(text)
        by_word, exact = self._by_word, self._exact
        hits = {w for w in _WORD_RE.findall(low) if w in by_word or w in exact}
        # originals are stored with single spaces; other white space is matched loosely
        loose = bool(hits) and _ODD_SPACE_RE.search(text) is not None
        n = len(text)
        for w in hits:
            s = low.find(w)
            while s >= 0:
                at, s = s, low.find(w, s + 1)
                if (at > 0 and _word_char(text[at - 1])) or not _bounded(text, at + len(w)):
                    continue  # inside a longer word
                for length, needles in by_word.get(w, {}).items():
                    for orig in needles.get(low[at : at + length], ()):
                        if at + length == n or not _word_char(text[at + length]):
                            found.append(Found(at, at + length, orig, "text"))
                if loose and _ODD_SPACE_RE.search(text, at, at + 200):
                    for needle, orig in self._multi.get(w, ()):
                        hit = _loose(needle, False).match(low, at)
                        if hit and hit.end() - at != len(needle) and _bounded(text, hit.end()):
                            found.append(Found(at, hit.end(), orig, "text"))
                found.extend(self._exact_at(text, low, at, w, loose=loose, sentence_starts=sentence_starts,
                                            any_case=any_case))
        if self._by_compact and _DIGIT_AT_RE.search(text):
            found.extend(self._scan_compact(text, found))
        found.sort(key=lambda f: (f.start, -f.end))
        return found

    def _exact_at(
        self, text: str, low: str, at: int, w: str, *, loose: bool, sentence_starts: bool, any_case: bool
    ) -> Iterator[Found]:
        """The case-sensitive originals starting with word ``w`` that ``text`` holds at ``at``."""
        for orig in self._exact.get(w, ()):
            if text.startswith(orig.source, at) or (any_case and low.startswith(fold(orig.source), at)):
                end = at + len(orig.source)
            elif loose and " " in orig.source and (hit := _loose(orig.source, True).match(text, at)):
                end = hit.end()
            else:
                continue
            if not _bounded(text, end):
                continue
            if sentence_starts and orig.single_word and _SENTENCE_START_RE.search(text[max(0, at - 3) : at]):
                continue
            yield Found(at, end, orig, "text")

    def _scan_compact(self, text: str, already: list[Found]) -> list[Found]:
        low = text.lower()
        if len(low) != len(text):
            low = text
        pieces = _RUN_RE.findall(low)
        ctext = "".join(pieces)
        get = self._by_compact.get
        todo = []
        pos = 0
        for k, piece in enumerate(pieces):
            cands = get(ctext[pos : pos + _COMPACT_PREFIX])
            if cands:
                todo.append((k, pos, cands))
            pos += len(piece)
        if not todo:
            return []
        runs = list(_RUN_RE.finditer(low))
        ends: dict[int, int] = {}
        pos = 0
        for k, piece in enumerate(pieces):
            pos += len(piece)
            ends[pos] = k
        out = []
        for k, cs, cands in todo:
            for c, orig in cands:
                ce = cs + len(c)
                if ce in ends and ctext.startswith(c, cs):
                    s, e = runs[k].start(), runs[ends[ce]].end()
                    if not any(f.start <= s and e <= f.end for f in already):
                        out.append(Found(s, e, orig, "compact"))
        return out


class ForbiddenIndex:
    """Original PII strings of the corpus a surrogate must never be, nor contain.

    Containment is decided by the leak check's own matcher (:class:`OriginalIndex`), so a
    surrogate that passes here can never be reported as a leak later.
    """

    ignores_case = True

    def __init__(self) -> None:
        self.norms: set[str] = set()
        self.compacts: set[str] = set()
        self.index = OriginalIndex()

    def add(self, label: str, original: str) -> None:
        if label in RELAXED_LABELS:
            return
        n = normalize(original)
        if not n:
            return
        if checked_in_place(original, label):
            # too common to be looked for inside text, but still never a surrogate as a whole
            if not (n.isdigit() and len(n) <= 4):
                self.norms.add(n)
            return
        self.norms.add(n)
        self.index.add(label, original)
        if label == "NAME":
            m = TITLE_RE.match(n + " ")
            rest = n[m.end() :] if m else n
            self.norms.update(
                w
                for w in re.split(r"[\s\-.]+", rest)
                if len(w) >= 2 and w.isalpha() and not is_common_word(w)
            )
        if label in COMPACT_LABELS:
            c = compact(n)
            if len(c) >= 5:
                self.compacts.add(c)

    def __call__(self, text: str) -> bool:
        if normalize(text) in self.norms or (self.compacts and compact(text) in self.compacts):
            return True
        return bool(self.index.scan(text, sentence_starts=False, any_case=True))

    def __len__(self) -> int:
        return len(self.norms)
