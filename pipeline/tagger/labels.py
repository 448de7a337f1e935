"""Tag schemes (IO, BIO) over a taxonomy, and the word-level conversions both ways.

The tagger labels *words* — the units of :func:`pipeline.text.tokenize` — not characters: a word
overlapping a gold span takes the span's label, and predicted runs of words become spans again.
Probabilities are summed per entity (``P(B-X) + P(I-X)``) so that one threshold per label decides
whether a word is ``X``, whichever scheme the model was trained with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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
    """Runs of words with the same label become spans (character offsets of the message).

    ``entity_probs[w][k]`` is ``P(word w is labels[k])``; a word takes its most probable label when
    that probability reaches the label's threshold. ``begin_probs[w][k]`` (BIO only) is
    ``P(B-label)``: a word that is more likely a beginning than an inside starts a new span even
    after a word of the same label. A span's score is the mean probability of its words.
    """
    spans: list[Span] = []
    cur_label: int | None = None
    cur_start = cur_end = 0
    cur_probs: list[float] = []

    def close() -> None:
        if cur_label is not None:
            spans.append(
                Span(cur_start, cur_end, labels[cur_label], score=sum(cur_probs) / len(cur_probs))
            )

    for w, word in enumerate(words):
        probs = entity_probs[w]
        k = max(range(len(labels)), key=lambda j: probs[j])
        lab = k if probs[k] >= thresholds[k] else None
        if lab is None:
            close()
            cur_label = None
            continue
        starts_new = cur_label != lab
        if not starts_new and begin_probs is not None:
            b = begin_probs[w][lab]
            starts_new = b > probs[lab] - b
        if starts_new:
            close()
            cur_label, cur_start, cur_probs = lab, word.start, []
        cur_end = word.end
        cur_probs.append(float(probs[lab]))
    close()
    return spans
