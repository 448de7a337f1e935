"""Tag schemes (IO, BIO) over a taxonomy, and the word-level conversions both ways.

The tagger labels *words* — the units of :func:`pipeline.text.tokenize` — not characters: a word
overlapping a gold span takes the span's label, and predicted runs of words become spans again.
Probabilities are summed per entity (``P(B-X) + P(I-X)``) so that one threshold per label decides
whether a word is ``X``, whichever scheme the model was trained with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.text import Token
from pipeline.types import Span

SCHEMES = ("io", "bio")
OUTSIDE = "O"


class SchemeError(ValueError):
    """An unknown tag scheme or a label map that does not fit it."""


@dataclass(frozen=True, slots=True)
class LabelMap:
    """The tag set of one model: ``O`` first, then ``B-X``/``I-X`` (BIO) or ``X`` (IO) per label."""

    scheme: str
    labels: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.scheme not in SCHEMES:
            raise SchemeError(f"unknown tag scheme {self.scheme!r}; use one of {', '.join(SCHEMES)}")
        if not self.labels or len(set(self.labels)) != len(self.labels):
            raise SchemeError("a label map needs distinct, non-empty labels")

    @property
    def tags(self) -> tuple[str, ...]:
        if self.scheme == "io":
            return (OUTSIDE, *self.labels)
        return (OUTSIDE, *(f"{p}-{lab}" for lab in self.labels for p in ("B", "I")))

    @property
    def num_tags(self) -> int:
        return len(self.tags)

    def id2tag(self) -> dict[int, str]:
        return dict(enumerate(self.tags))

    def tag_id(self, label: str | None, begin: bool) -> int:
        """The tag id of a word labelled ``label`` (``None``: outside); ``begin``: first word."""
        if label is None:
            return 0
        k = self.labels.index(label)
        if self.scheme == "io":
            return 1 + k
        return 1 + 2 * k + (0 if begin else 1)

    def entity_columns(self) -> list[list[int]]:
        """For each label, the tag ids whose probabilities add up to ``P(word is label)``."""
        if self.scheme == "io":
            return [[1 + k] for k in range(len(self.labels))]
        return [[1 + 2 * k, 2 + 2 * k] for k in range(len(self.labels))]

    def to_dict(self) -> dict:
        return {"scheme": self.scheme, "labels": list(self.labels), "tags": list(self.tags)}

    @classmethod
    def from_dict(cls, data: Mapping) -> LabelMap:
        return cls(scheme=str(data["scheme"]), labels=tuple(data["labels"]))


def word_labels(words: Sequence[Token], spans: Sequence[Span]) -> list[tuple[str | None, bool]]:
    """``(label, begins_a_span)`` for each word: the label of the first gold span it overlaps."""
    out: list[tuple[str | None, bool]] = []
    ordered = sorted(spans)
    prev_span: Span | None = None
    for word in words:
        hit = next((s for s in ordered if s.start < word.end and word.start < s.end), None)
        out.append((None if hit is None else hit.label, hit is not None and hit is not prev_span))
        prev_span = hit
    return out


def word_tag_ids(words: Sequence[Token], spans: Sequence[Span], label_map: LabelMap) -> list[int]:
    """Tag ids for ``words``; labels outside the map are treated as outside (``O``)."""
    known = set(label_map.labels)
    return [
        label_map.tag_id(lab if lab in known else None, begin)
        for lab, begin in word_labels(words, spans)
    ]


def decode_words(
    words: Sequence[Token],
    entity_probs: Sequence[Sequence[float]],
    begin_probs: Sequence[Sequence[float]] | None,
    labels: Sequence[str],
    thresholds: Sequence[float],
) -> list[Span]:
    """Runs of PII words become spans (character offsets of the message), labelled by vote.

    ``entity_probs[w][k]`` is ``P(word w is labels[k])``. A word is PII when its total PII
    probability reaches the threshold of its most probable label — on its own to start a span, or
    summed over labels to continue one; consecutive PII words form one span unless a word is more
    likely a beginning than an inside (``begin_probs``, BIO only). The span takes the label with
    the largest probability summed over its words, so an entity whose words disagree
    ("Walt/SCHOOL Whitman/LOCATION Middle School/SCHOOL") is not cut into pieces.
    A span's score is the mean probability of its label over its words.
    """
    if not len(words):
        return []
    ent = np.asarray(entity_probs, dtype=np.float64).reshape(len(words), len(labels))
    top, total, need = word_tests(ent, np.asarray(thresholds, dtype=np.float64))
    # a span starts only on a confident word; diffuse mass (0.2 AGE + 0.2 PHONE) continues one
    confident = (top >= need) & (total > 0)
    continues = (total >= need) & (total > 0)
    if not confident.any():
        return []  # most messages: no word is confident enough to start a span
    begins = None
    if begin_probs is not None:
        b = np.asarray(begin_probs, dtype=np.float64).reshape(len(words), len(labels)).sum(axis=1)
        begins = b > total - b
    runs: list[list[int]] = []
    prev_in = False
    for w in range(len(words)):
        if not (confident[w] or (prev_in and continues[w])):
            prev_in = False
            continue
        if prev_in and not (begins is not None and begins[w]):
            runs[-1].append(w)
        else:
            runs.append([w])
        prev_in = True
    spans = []
    for run in runs:
        votes = ent[run].sum(axis=0)
        k = int(votes.argmax())
        spans.append(
            Span(words[run[0]].start, words[run[-1]].end, labels[k], score=float(votes[k]) / len(run))
        )
    return spans


def decision_margin(entity_probs: Sequence[Sequence[float]], thresholds: Sequence[float]) -> float | None:
    """How close one message came to a different call: the smallest distance, over its words,
    between a probability :func:`decode_words` compares with a threshold and that threshold.

    Per word both tests count: its most probable label's probability (to start a span) and its
    total PII probability (to continue one), each against the threshold of that label. 0 means a
    word sat exactly on a threshold; the larger, the surer the model was of every word. It is
    the margin of uncertainty sampling measured on the decoder's own decision, not an entropy:
    a word split between two PII labels is not uncertain when either way it is PII. Scored
    before any post-filter (the filter's rules are not the model's). None for a message without
    words.
    """
    ent = np.asarray(entity_probs, dtype=np.float64)
    if not ent.size:
        return None
    return float(word_margins(ent.reshape(ent.shape[0], -1), np.asarray(thresholds, dtype=np.float64)).min())


def word_tests(ent: np.ndarray, thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per word (a row of ``ent``: ``P(word is label)``), the two probabilities :func:`decode_words`
    tests and the threshold both are tested against: the most probable label's probability (to
    start a span), the total PII probability (to continue one), and that label's threshold."""
    best = ent.argmax(axis=1)
    return ent[np.arange(len(ent)), best], ent.sum(axis=1), thresholds[best]


def word_margins(ent: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Per word, how far its nearer test of :func:`word_tests` was from its threshold:
    :func:`decision_margin` is the smallest over a message's words."""
    top, total, need = word_tests(ent, thresholds)
    return np.minimum(np.abs(top - need), np.abs(total - need))
