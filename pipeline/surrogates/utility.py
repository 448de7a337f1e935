"""The utility report of a release: how much of the text's value survived de-identification.

- text statistics before and after (words per turn, vocabulary size, 1-3-gram entropy in bits —
  PIIvot's Table 1);
- the share of number tokens and maths expressions outside PII spans that are byte-identical in
  the release (must be 100 %: the maths is the reason the corpus exists);
- spans replaced per label and per method (llm / offline / tag / redact; propagated occurrences);
- the messages whose numbers changed: a number token outside the spans that differs, or a bare
  number of at most four digits ("14", "3") replaced by another — the shape of a maths answer,
  which :mod:`pipeline.surrogates.numbers` keeps unless a person confirms it is PII.

Counts are accumulated one dialogue at a time; the n-grams past a few hundred thousand distinct
ones wait on disk (:class:`NgramCounts`), so memory grows with neither the messages nor the n-grams.
"""

from __future__ import annotations

import math
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.maths import math_expression_spans
from pipeline.surrogates.numbers import is_bare_number
from pipeline.surrogates.results import DeidResult, Replacement
from pipeline.text import Token, tokenize

NGRAM_ORDERS = (1, 2, 3)
EXAMPLES = 20  # listed in the report; the counts are complete


SPILL_AT = 300_000  # distinct n-grams a side holds in memory (about 35 MB); beyond, they go to disk
BUCKETS = 64  # spill files per side: a bucket's distinct n-grams are what counting needs at once


class NgramCounts:
    """1- to 3-gram counts whose memory does not grow with the corpus.

    A million messages of real tutoring text hold millions of distinct 3-grams: counted in one
    dictionary, before and after, they would be a gigabyte. So past ``spill_at``
    distinct n-grams the counts go to ``BUCKETS`` files on disk, each n-gram always to the same
    one, and the figures are read back a bucket at a time. The entropy needs only how many
    n-grams occur how often, so it is the same to the last bit however the counts came: in one
    pass, merged from parts, or spilled. The files hold the text's words: they live in a
    temporary folder of their own (readable by this user only) inside ``folder`` (default: the
    machine's temporary folder), deleted with the counts. A process killed meanwhile deletes
    nothing, so a release passes a folder of its own that its next build or failure deletes.
    """

    def __init__(self, spill_at: int | None = None, folder: Path | None = None) -> None:
        self.spill_at = SPILL_AT if spill_at is None else spill_at
        self.folder = folder
        self.counts: dict[int, Counter] = {n: Counter() for n in NGRAM_ORDERS}
        self._spill: tempfile.TemporaryDirectory | None = None
        self._figures: dict[int, tuple[int, int, float]] | None = None  # until more is counted

    def update(self, n: int, grams: Iterable[str] | Mapping[str, int]) -> None:
        self.counts[n].update(grams)
        self._figures = None

    def held(self) -> int:
        return sum(len(c) for c in self.counts.values())

    def spill_if_full(self) -> None:
        if self.held() > self.spill_at:
            self._to_disk()

    @property
    def spilled(self) -> bool:
        return self._spill is not None

    def _bucket_path(self, n: int, bucket: int) -> Path:
        assert self._spill is not None
        return Path(self._spill.name) / f"{n}-{bucket:02d}.tsv"

    def _to_disk(self) -> None:
        """Append the counts in memory to their buckets' files (``count TAB n-gram``: a word holds
        no whitespace) and forget them."""
        if self._spill is None:
            # the folder may go first (with the release's scratch folder): nothing is left to delete
            self._spill = tempfile.TemporaryDirectory(prefix="blindspot-ngrams-", dir=self.folder,
                                                      ignore_cleanup_errors=True)
        for n, counts in self.counts.items():
            lines: list[list[str]] = [[] for _ in range(BUCKETS)]
            for gram, count in counts.items():
                lines[hash(gram) % BUCKETS].append(f"{count}\t{gram}\n")
            counts.clear()
            for bucket, rows in enumerate(lines):
                if rows:
                    with open(self._bucket_path(n, bucket), "a", encoding="utf-8", newline="\n") as fh:
                        fh.writelines(rows)

    def _bucket(self, n: int, bucket: int) -> dict[str, int]:
        counts: dict[str, int] = {}
        path = self._bucket_path(n, bucket)
        if path.exists():
            get = counts.get
            with open(path, encoding="utf-8", newline="\n") as fh:
                for line in fh.read().split("\n")[:-1]:
                    count, gram = line.split("\t", 1)
                    counts[gram] = get(gram, 0) + int(count)
        return counts

    def _pieces(self) -> Iterator[dict[int, Mapping[str, int]]]:
        """The counts in pieces that share no n-gram: all of them when nothing was spilled, else
        one bucket at a time (the counts in memory spilled first)."""
        if self._spill is None:
            yield self.counts
            return
        self._to_disk()
        for bucket in range(BUCKETS):
            yield {n: self._bucket(n, bucket) for n in NGRAM_ORDERS}

    def figures(self) -> dict[int, tuple[int, int, float]]:
        """Per order: distinct n-grams, their total count, and ``sum(c * log2(c))`` over them —
        from how many n-grams occur how often (a small table, the same however the counts came).
        Kept until more is counted: a release's reports ask twice, and spilled counts take seconds."""
        if self._figures is not None:
            return self._figures
        occurs: dict[int, Counter] = {n: Counter() for n in NGRAM_ORDERS}
        for piece in self._pieces():
            for n, counts in piece.items():
                occurs[n].update(counts.values())
        self._figures = {n: (sum(occurs[n].values()), sum(c * k for c, k in occurs[n].items()),
                             math.fsum(k * c * math.log2(c) for c, k in sorted(occurs[n].items())))
                         for n in NGRAM_ORDERS}
        return self._figures

    def state(self) -> dict[str, dict[str, int]]:
        """Every count as plain JSON (a part's: a few hundred dialogues' n-grams)."""
        out: dict[str, dict[str, int]] = {str(n): {} for n in NGRAM_ORDERS}
        for piece in self._pieces():
            for n, counts in piece.items():
                out[str(n)].update(counts)
        return out


def _entropy(total: int, sum_c_log_c: float) -> float:
    """Shannon entropy in bits of counts summing to ``total``: ``log2(T) - sum(c log2 c) / T``."""
    return math.log2(total) - sum_c_log_c / total if total else 0.0


Grams = tuple[list[str], list[str], list[str]]  # a text's words (lower case), 2-grams and 3-grams


def grams_of(tokens: list[Token]) -> Grams:
    """The 1- to 3-grams of a text's word tokens, each joined by a space (which no word holds: a
    third of a tuple's memory)."""
    words = [t.text.lower() for t in tokens if t.text[0].isalnum() or t.text[0] == "_"]
    return (words, list(map(" ".join, zip(words, words[1:], strict=False))),
            list(map(" ".join, zip(words, words[1:], words[2:], strict=False))))


@dataclass
class TextStats:
    turns: int = 0
    words: int = 0
    ngrams: NgramCounts = field(default_factory=NgramCounts)

    def add(self, text: str, tokens: list[Token] | None = None) -> Grams:
        """Count one text; returns its n-grams, which a text known to be the same is counted with
        (:meth:`add_grams`: most released messages are their original, unchanged)."""
        grams = grams_of(tokenize(text) if tokens is None else tokens)
        self.add_grams(grams)
        return grams

    def add_grams(self, grams: Grams) -> None:
        self.turns += 1
        self.words += len(grams[0])
        for n, these in zip(NGRAM_ORDERS, grams, strict=True):
            if these:
                self.ngrams.update(n, these)
        self.ngrams.spill_if_full()

    def state(self) -> dict[str, Any]:
        """The counts as plain JSON, for :meth:`merge`."""
        return {"turns": self.turns, "words": self.words, "ngrams": self.ngrams.state()}

    def merge(self, state: dict[str, Any]) -> None:
        """Add the counts of later text: merged, the same counts (so the same figures, to the last
        bit) as one pass over all of it."""
        self.turns += state["turns"]
        self.words += state["words"]
        for n, counts in state["ngrams"].items():
            self.ngrams.update(int(n), counts)
        self.ngrams.spill_if_full()

    def to_dict(self) -> dict[str, Any]:
        figures = self.ngrams.figures()
        return {
            "turns": self.turns,
            "words": self.words,
            "words_per_turn": round(self.words / self.turns, 3) if self.turns else 0.0,
            "vocabulary": figures[1][0],
            **{f"entropy_{n}gram": round(_entropy(figures[n][1], figures[n][2]), 4) for n in NGRAM_ORDERS},
        }


@dataclass
class Preserved:
    total: int = 0
    kept: int = 0
    inside_pii: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)

    def state(self) -> dict[str, Any]:
        return {"total": self.total, "kept": self.kept, "inside_pii": self.inside_pii, "examples": self.examples}

    def merge(self, state: dict[str, Any]) -> None:
        self.total += state["total"]
        self.kept += state["kept"]
        self.inside_pii += state["inside_pii"]
        self.examples.extend(state["examples"][: EXAMPLES - len(self.examples)])

    def to_dict(self) -> dict[str, Any]:
        return {
            "outside_pii": self.total,
            "preserved": self.kept,
            "share": round(self.kept / self.total, 6) if self.total else 1.0,
            "inside_pii_spans": self.inside_pii,
            "changed_examples": self.examples[:EXAMPLES],
        }


def _shifted(start: int, end: int, reps: list[Replacement]) -> tuple[int, int] | None:
    """Where ``start..end`` of the original text is in the release (``None`` if a replacement touches it)."""
    delta = 0
    for r in reps:
        if r.start < end and start < r.end:
            return None
        if r.end <= start:
            delta += (r.new_end - r.new_start) - (r.end - r.start)
    return start + delta, end + delta


def _number_replaced(text: str, r: Replacement) -> bool:
    """A short bare number ("14") replaced: what a maths answer looks like."""
    value = text[r.start : r.end].strip()
    return is_bare_number(value) and sum(c.isdigit() for c in value) <= 4


class UtilityReport:
    """Accumulate :class:`DeidResult` objects; :meth:`to_dict` is the report. ``scratch``: where
    the n-gram counts may spill the text's words (:class:`NgramCounts`)."""

    def __init__(self, scratch: Path | None = None) -> None:
        self.before = TextStats(ngrams=NgramCounts(folder=scratch))
        self.after = TextStats(ngrams=NgramCounts(folder=scratch))
        self.numbers = Preserved()
        self.maths = Preserved()
        self.replaced: Counter = Counter()
        self.methods: Counter = Counter()
        self.propagated: Counter = Counter()
        self.dialogues = 0
        self.messages = 0
        self.numbers_changed = 0
        self.numbers_changed_examples: list[dict[str, Any]] = []

    def add(self, result: DeidResult) -> None:
        self.dialogues += 1
        by_msg: dict[int, list[Replacement]] = {}
        for r in result.replacements:
            by_msg.setdefault(r.index, []).append(r)
            self.replaced[r.label] += 1
            self.methods[r.method] += 1
            if r.propagated:
                self.propagated[r.label] += 1
        for before, after in zip(result.original.messages, result.release.messages, strict=True):
            tokens = tokenize(before.text)
            grams = self.before.add(before.text, tokens)
            if after.text == before.text:
                self.after.add_grams(grams)
            else:
                self.after.add(after.text)
            reps = sorted(by_msg.get(before.index, []), key=lambda r: r.start)
            units = [(t.start, t.end) for t in tokens if t.is_number]
            kept = self.numbers.kept + self.numbers.inside_pii
            self._check(self.numbers, units, before.text, after.text, reps, result, before.index)
            self.messages += 1
            lost = self.numbers.kept + self.numbers.inside_pii - kept < len(units)
            if lost or any(_number_replaced(before.text, r) for r in reps):
                self.numbers_changed += 1
                if len(self.numbers_changed_examples) < EXAMPLES:
                    self.numbers_changed_examples.append({"dialogue_id": result.original.id, "index": before.index})
            self._check(
                self.maths,
                math_expression_spans(before.text),
                before.text,
                after.text,
                reps,
                result,
                before.index,
            )

    @staticmethod
    def _check(
        acc: Preserved, units, before: str, after: str, reps, result: DeidResult, index: int
    ) -> None:
        for start, end in units:
            where = _shifted(start, end, reps)
            if where is None:
                acc.inside_pii += 1
                continue
            acc.total += 1
            if after[where[0] : where[1]] == before[start:end]:
                acc.kept += 1
            elif len(acc.examples) < EXAMPLES:
                acc.examples.append(
                    {"dialogue_id": result.original.id, "index": index, "text": before[start:end]}
                )

    def state(self) -> dict[str, Any]:
        """Every count, as plain JSON, for :meth:`merge`."""
        return {"before": self.before.state(), "after": self.after.state(), "numbers": self.numbers.state(),
                "maths": self.maths.state(), "replaced": dict(self.replaced), "methods": dict(self.methods),
                "propagated": dict(self.propagated), "dialogues": self.dialogues, "messages": self.messages,
                "numbers_changed": self.numbers_changed, "numbers_changed_examples": self.numbers_changed_examples}

    def merge(self, state: dict[str, Any]) -> None:
        """Add the report of a later part of the release (its :meth:`state`): reports of
        consecutive parts merged in order are the report of the whole release."""
        for name in ("before", "after", "numbers", "maths"):
            getattr(self, name).merge(state[name])
        for name in ("replaced", "methods", "propagated"):
            getattr(self, name).update(state[name])
        self.dialogues += state["dialogues"]
        self.messages += state["messages"]
        self.numbers_changed += state["numbers_changed"]
        self.numbers_changed_examples.extend(
            state["numbers_changed_examples"][: EXAMPLES - len(self.numbers_changed_examples)])

    def to_dict(self) -> dict[str, Any]:
        return {
            "dialogues": self.dialogues,
            "before": self.before.to_dict(),
            "after": self.after.to_dict(),
            "number_tokens": self.numbers.to_dict(),
            "math_expressions": self.maths.to_dict(),
            "maths_intact": self.numbers.kept == self.numbers.total
            and self.maths.kept == self.maths.total,
            "messages": self.messages,
            "messages_numbers_changed": self.numbers_changed,
            "messages_numbers_changed_examples": self.numbers_changed_examples,
            "replaced_by_label": dict(sorted(self.replaced.items())),
            "replaced_by_method": dict(sorted(self.methods.items())),
            "propagated_by_label": dict(sorted(self.propagated.items())),
        }
