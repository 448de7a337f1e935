"""The utility report of a release: how much of the text's value survived de-identification.

- text statistics before and after (words per turn, vocabulary size, 1-3-gram entropy in bits —
  PIIvot's Table 1);
- the share of number tokens and maths expressions outside PII spans that are byte-identical in
  the release (must be 100 %: the maths is the reason the corpus exists);
- spans replaced per label and per method (llm / offline / tag / redact; propagated occurrences);
- the messages whose numbers changed: a number token outside the spans that differs, or a bare
  number of at most four digits ("14", "3") replaced by another — the shape of a maths answer,
  which :mod:`pipeline.surrogates.numbers` keeps unless a person confirms it is PII.

Counts are accumulated one dialogue at a time; memory grows with the number of distinct n-grams,
not with the number of messages.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pipeline.maths import math_expression_spans
from pipeline.surrogates.engine import DeidResult, Replacement
from pipeline.surrogates.numbers import is_bare_number
from pipeline.text import Token, tokenize

NGRAM_ORDERS = (1, 2, 3)
EXAMPLES = 20  # listed in the report; the counts are complete


@dataclass
class TextStats:
    turns: int = 0
    words: int = 0
    ngrams: dict[int, Counter] = field(default_factory=lambda: {n: Counter() for n in NGRAM_ORDERS})

    def add(self, text: str, tokens: list[Token] | None = None) -> None:
        tokens = tokenize(text) if tokens is None else tokens
        words = [t.text.lower() for t in tokens if t.text[0].isalnum() or t.text[0] == "_"]
        self.turns += 1
        self.words += len(words)
        self.ngrams[1].update(words)
        if len(words) > 1:  # joined by a space, which no word holds: a third of a tuple's memory
            self.ngrams[2].update(map(" ".join, zip(words, words[1:], strict=False)))
        if len(words) > 2:
            self.ngrams[3].update(map(" ".join, zip(words, words[1:], words[2:], strict=False)))

    def state(self) -> dict[str, Any]:
        """The counts as plain JSON (each order's n-grams in first-seen order), for :meth:`merge`."""
        return {"turns": self.turns, "words": self.words,
                "ngrams": {str(n): counts for n, counts in self.ngrams.items()}}

    def merge(self, state: dict[str, Any]) -> None:
        """Add the counts of later text: merged in order, the same counts in the same order (so the
        same entropies, to the last bit) as one pass over all of it."""
        self.turns += state["turns"]
        self.words += state["words"]
        for n, counts in state["ngrams"].items():
            self.ngrams[int(n)].update(counts)

    @staticmethod
    def _entropy(counts: Counter) -> float:
        total = sum(counts.values())
        if not total:
            return 0.0
        return -sum((c / total) * math.log2(c / total) for c in counts.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "turns": self.turns,
            "words": self.words,
            "words_per_turn": round(self.words / self.turns, 3) if self.turns else 0.0,
            "vocabulary": len(self.ngrams[1]),
            **{f"entropy_{n}gram": round(self._entropy(self.ngrams[n]), 4) for n in NGRAM_ORDERS},
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
    """Accumulate :class:`DeidResult` objects; :meth:`to_dict` is the report."""

    def __init__(self) -> None:
        self.before = TextStats()
        self.after = TextStats()
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
            self.before.add(before.text, tokens)
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
