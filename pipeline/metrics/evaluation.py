"""Predicted spans against gold: the tables de-identification papers print.

* Token level (presidio-research's definition): every word token of :func:`pipeline.text.tokenize`
  gets an IO tag from the gold spans and one from the predicted spans (a token overlapped by a
  span takes its label; by several, the label of the widest overlap). Overall figures are
  type-agnostic (PII or not); per-label figures compare the labels.
* Span level: *exact* (same start, end and label) and *overlap* (a predicted span is right when it
  overlaps a gold span of the same label; a gold span is found when a predicted span of its label
  overlaps it), overall and per label, plus overlap ignoring labels.
* 95% bootstrap confidence intervals, resampling dialogues: per-dialogue counts are computed once,
  then resampled as a weight matrix times the count matrix (:mod:`pipeline.metrics.bootstrap`).
* Numeric ambiguity (MathEd-PII): false positives (predicted spans overlapping no gold span) by
  predicted label and by ``Span.source`` (``presidio:US_DRIVER_LICENSE``), those containing a digit,
  and false positives against true positives and true PII inside MATH vs NON-MATH segments.
* Utility: the share of number tokens a redaction would remove (all, and those outside gold PII),
  and spans per 1,000 messages.
* Sampling weights (optional): when gold covers a *sample* (flagged messages plus an audit of
  unflagged ones drawn with probability ``r``), each message's P/R/F counts are multiplied by its
  weight ``1/p`` (1 for flagged, ``1/r`` for audit messages), which estimates the corpus figures
  instead of overstating recall. The ambiguity and utility tables stay raw counts of the sample.

Precision with no predictions, recall with no gold, and the ratios with a zero denominator are
undefined: ``nan`` here, ``None`` in :meth:`EvaluationReport.to_dict`, ``–`` in the table.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pipeline.metrics.bootstrap import bootstrap_intervals
from pipeline.metrics.report import (
    LEVELS,
    METRICS,
    UNTYPED,
    Ambiguity,
    EvaluationReport,
    Score,
    SegmentErrors,
    Utility,
)
from pipeline.spans import overlaps_any
from pipeline.text import Token, count_number_tokens, tokenize
from pipeline.types import DEFAULT_LABELS, MATH, NON_MATH, Span

__all__ = [
    "Ambiguity",
    "EvaluationError",
    "EvaluationReport",
    "Key",
    "Score",
    "SegmentErrors",
    "Utility",
    "bootstrap_intervals",
    "evaluate",
    "overlaps_any",
    "token_labels",
]

Key = tuple[str, int]
UNSEGMENTED = "UNSEGMENTED"
UNKNOWN_SOURCE = "(no source)"
_DIGIT = re.compile(r"\d")


class EvaluationError(ValueError):
    """Gold or predictions that do not fit the texts (unknown message, span past the end)."""


# --- matching helpers ------------------------------------------------------------------------


def _dedupe(spans: Sequence[Span] | None) -> list[Span]:
    if not spans:
        return []
    seen: dict[tuple[int, int, str], Span] = {}
    for s in spans:
        seen.setdefault(s.key(), s)
    return sorted(seen.values())


def token_labels(tokens: Sequence[Any], spans: Sequence[Span]) -> list[str | None]:
    """IO tags: the label of the span overlapping each token most (``None`` outside spans)."""
    out: list[str | None] = []
    for tok in tokens:
        best, best_len = None, 0
        for s in spans:
            if s.start >= tok.end:
                break
            covered = min(s.end, tok.end) - max(s.start, tok.start)
            if covered > best_len:
                best, best_len = s.label, covered
        out.append(best)
    return out


# --- the counting pass -----------------------------------------------------------------------


class _Columns:
    """Index of the count columns: (level, label or None) -> column; 4 counts per column."""

    def __init__(self, labels: Sequence[str]) -> None:
        self.index: dict[tuple[str, str | None], int] = {}
        for level in LEVELS:
            for lab in (None, *labels):
                self.index[(level, lab)] = len(self.index)
        self.index[(UNTYPED, None)] = len(self.index)

    def __len__(self) -> int:
        return len(self.index)


def _add(row: list[int], col: int, tp_pred: int, n_pred: int, tp_gold: int, n_gold: int) -> None:
    b = 4 * col
    row[b] += tp_pred
    row[b + 1] += n_pred
    row[b + 2] += tp_gold
    row[b + 3] += n_gold


def _count_message(
    row: list[int], cols: _Columns, tokens: Sequence[Token], gold: list[Span], pred: list[Span]
) -> None:
    idx = cols.index
    # token level
    g_tags = token_labels(tokens, gold)
    p_tags = token_labels(tokens, pred)
    n_p = n_g = both = 0
    per: dict[str, list[int]] = {}
    for g, p in zip(g_tags, p_tags, strict=True):
        if p is not None:
            n_p += 1
            per.setdefault(p, [0, 0, 0])[0] += 1
        if g is not None:
            n_g += 1
            per.setdefault(g, [0, 0, 0])[1] += 1
            if p is not None:
                both += 1
                if p == g:
                    per[g][2] += 1
    _add(row, idx[("token", None)], both, n_p, both, n_g)
    for lab, (lp, lg, lt) in per.items():
        col = idx.get(("token", lab))
        if col is not None:
            _add(row, col, lt, lp, lt, lg)
    # span level (gold and pred are deduplicated: one span per (start, end, label))
    gold_keys = {s.key() for s in gold}
    exact = [s.key() in gold_keys for s in pred]
    ov_pred = [overlaps_any(s, gold, label=s.label) for s in pred]
    ov_gold = [overlaps_any(s, pred, label=s.label) for s in gold]
    n_exact = sum(exact)
    _add(row, idx[("span_exact", None)], n_exact, len(pred), n_exact, len(gold))
    _add(row, idx[("span_overlap", None)], sum(ov_pred), len(pred), sum(ov_gold), len(gold))
    _add(
        row,
        idx[(UNTYPED, None)],
        sum(overlaps_any(s, gold) for s in pred),
        len(pred),
        sum(overlaps_any(s, pred) for s in gold),
        len(gold),
    )
    # per label: exact hits, predicted, overlap hits (pred), gold, overlap hits (gold)
    acc: dict[str, list[int]] = {}
    for s, e, o in zip(pred, exact, ov_pred, strict=True):
        a = acc.setdefault(s.label, [0, 0, 0, 0, 0])
        a[0] += e
        a[1] += 1
        a[2] += o
    for s, o in zip(gold, ov_gold, strict=True):
        a = acc.setdefault(s.label, [0, 0, 0, 0, 0])
        a[3] += 1
        a[4] += o
    for lab, (ne, np_, op, ng, og) in acc.items():
        col = idx.get(("span_exact", lab))
        if col is not None:
            _add(row, col, ne, np_, ne, ng)
            _add(row, idx[("span_overlap", lab)], op, np_, og, ng)


def _ordered_labels(seen: Iterable[str]) -> tuple[str, ...]:
    seen = set(seen)
    return tuple(
        [lab for lab in DEFAULT_LABELS if lab in seen] + sorted(seen - set(DEFAULT_LABELS))
    )


def _check(texts: Mapping[Key, str], spans: Mapping[Key, Sequence[Span]], what: str) -> None:
    problems = []
    for key, ss in spans.items():
        if not ss:
            continue
        if key not in texts:
            problems.append(f"{what} for unknown message {key[0]!r} #{key[1]}")
            continue
        n = len(texts[key])
        problems.extend(
            f"{what} span {s.start}..{s.end} runs past the end of {key[0]!r} #{key[1]} "
            f"({n} characters)"
            for s in ss
            if s.end > n
        )
        if len(problems) > 20:
            break
    if problems:
        more = "" if len(problems) <= 10 else f"\n… and more ({len(problems) - 10}+)"
        raise EvaluationError("\n".join(problems[:10]) + more)


# --- the entry point -------------------------------------------------------------------------


@dataclass
class _ErrorTally:
    """False and true positives by label and detector source, those containing a digit, and the
    FP:TP split per MATH / NON-MATH segment: the ambiguity figures."""

    fp_by_label: Counter = field(default_factory=Counter)
    tp_by_label: Counter = field(default_factory=Counter)
    numeric_by_label: Counter = field(default_factory=Counter)
    fp_by_source: Counter = field(default_factory=Counter)
    numeric_by_source: Counter = field(default_factory=Counter)
    seg_counts: dict[str, list[int]] = field(default_factory=dict)

    def add(self, text: str, g: Sequence[Span], p: Sequence[Span], segment: str | None) -> None:
        fp_here = tp_here = 0
        for s in p:
            if overlaps_any(s, g):
                tp_here += 1
                self.tp_by_label[s.label] += 1
                continue
            fp_here += 1
            source = s.source or UNKNOWN_SOURCE
            self.fp_by_label[s.label] += 1
            self.fp_by_source[source] += 1
            if _DIGIT.search(text, s.start, s.end):
                self.numeric_by_label[s.label] += 1
                self.numeric_by_source[source] += 1
        if segment is not None:
            c = self.seg_counts.setdefault(segment, [0, 0, 0, 0])
            c[0] += 1
            c[1] += fp_here
            c[2] += tp_here
            c[3] += len(g)

    def ambiguity(self, segmented: bool) -> Ambiguity:
        segs = None
        if segmented:
            order = [MATH, NON_MATH] + sorted(set(self.seg_counts) - {MATH, NON_MATH})
            segs = {s: SegmentErrors(*self.seg_counts.get(s, (0, 0, 0, 0))) for s in order}
        return Ambiguity(
            fp=sum(self.fp_by_label.values()),
            tp=sum(self.tp_by_label.values()),
            numeric_fp=sum(self.numeric_by_label.values()),
            fp_by_label=dict(self.fp_by_label.most_common()),
            tp_by_label=dict(self.tp_by_label.most_common()),
            numeric_fp_by_label=dict(self.numeric_by_label.most_common()),
            fp_by_source=dict(self.fp_by_source.most_common()),
            numeric_fp_by_source=dict(self.numeric_by_source.most_common()),
            segments=segs,
        )


@dataclass
class _NumberTally:
    """Number tokens, and how many the predictions removed (inside gold or not): the utility."""

    total: int = 0
    removed: int = 0
    outside: int = 0
    removed_outside: int = 0

    def add_untouched(self, n_numbers: int) -> None:
        """A message with neither gold nor predicted spans: its numbers are kept, outside gold
        (counted without tokens: most messages of a maths corpus have numbers and no span)."""
        self.total += n_numbers
        self.outside += n_numbers

    def add(self, tokens: Sequence[Token], g: Sequence[Span], p: Sequence[Span]) -> None:
        for tok in tokens:
            if not tok.is_number:
                continue
            removed = bool(p) and any(s.start < tok.end and tok.start < s.end for s in p)
            self.total += 1
            self.removed += removed
            if not (g and any(s.start < tok.end and tok.start < s.end for s in g)):
                self.outside += 1
                self.removed_outside += removed


def _add_message(row: list, cols: _Columns, tokens: Sequence[Token], g: Sequence[Span], p: Sequence[Span],
                 w: float) -> None:
    """Add one message's counts to its dialogue's row, times its sampling weight."""
    if w == 1.0:
        _count_message(row, cols, tokens, g, p)
        return
    here = [0] * len(row)
    _count_message(here, cols, tokens, g, p)
    for i, v in enumerate(here):
        if v:
            row[i] += w * v


def _scorer(dialogue_rows: dict[str, list], cols: _Columns, *, weighted: bool, n_boot: int, seed: int,
            confidence: float):
    """``score(level, label) -> Score`` from the per-dialogue counts, with bootstrap intervals."""
    dtype = np.float64 if weighted else np.int64
    counts = np.array(list(dialogue_rows.values()), dtype=dtype).reshape(-1, len(cols), 4)
    totals = counts.sum(axis=0) if len(counts) else np.zeros((len(cols), 4), dtype=dtype)
    count = (lambda x: round(float(x), 3)) if weighted else int
    ci = bootstrap_intervals(counts, n_boot=n_boot, seed=seed, confidence=confidence)

    def score(level: str, label: str | None) -> Score:
        c = cols.index[(level, label)]
        t = totals[c]
        return Score(count(t[0]), count(t[1]), count(t[2]), count(t[3]),
                     ci={m: (float(ci[c, k, 0]), float(ci[c, k, 1])) for k, m in enumerate(METRICS)})

    return score


@dataclass(frozen=True, slots=True)
class ScoredMessage:
    """One message as scoring reads it: its text, gold and predicted spans, its MATH / NON-MATH
    segment (None: no segment) and its sampling weight ``1/p``."""

    key: Key
    text: str
    gold: Sequence[Span] = ()
    pred: Sequence[Span] = ()
    segment: str | None = None
    weight: float = 1.0


class Scoring:
    """Scores against gold counted one message at a time (:meth:`add`), then the report
    (:meth:`report`): each dialogue's count row, the error and number tallies, how many messages,
    gold and predicted spans there are, and whether any weighs. Several runs are scored in one
    pass over a gold set with one each (the detectors-versus-gold report)."""

    def __init__(self, labels: Sequence[str], *, segmented: bool = False):
        self.labels, self.segmented = tuple(labels), segmented
        self.cols = _Columns(self.labels)
        self.dialogue_rows: dict[str, list[float]] = {}
        self.errors, self.numbers = _ErrorTally(), _NumberTally()
        self.n_messages = self.n_gold_spans = self.n_pred_spans = 0
        self.weighted = False

    def add(self, m: ScoredMessage) -> None:
        self.n_messages += 1
        self.weighted |= m.weight != 1.0
        row = self.dialogue_rows.setdefault(m.key[0], [0] * (4 * len(self.cols)))
        g, p = _dedupe(m.gold), _dedupe(m.pred)
        self.n_gold_spans += len(g)
        self.n_pred_spans += len(p)
        has_digit = _DIGIT.search(m.text) is not None
        if g or p:
            tokens = tokenize(m.text)
            _add_message(row, self.cols, tokens, g, p, m.weight)
            if has_digit:
                self.numbers.add(tokens, g, p)
        elif has_digit:  # nothing predicted nor in gold: every number stays, outside gold
            self.numbers.add_untouched(count_number_tokens(m.text))
        self.errors.add(m.text, g, p, (m.segment or UNSEGMENTED) if self.segmented else None)

    def report(self, *, n_boot: int = 1000, seed: int = 0, confidence: float = 0.95) -> EvaluationReport:
        labels = self.labels
        score = _scorer(self.dialogue_rows, self.cols, weighted=self.weighted, n_boot=n_boot, seed=seed,
                        confidence=confidence)
        numbers = self.numbers
        utility = Utility(self.n_messages, self.n_pred_spans, self.n_gold_spans, numbers.total, numbers.removed,
                          numbers.outside, numbers.removed_outside)
        return EvaluationReport(
            n_dialogues=len(self.dialogue_rows),
            n_messages=self.n_messages,
            labels=labels,
            token=score("token", None),
            token_by_label={lab: score("token", lab) for lab in labels},
            span_exact=score("span_exact", None),
            span_exact_by_label={lab: score("span_exact", lab) for lab in labels},
            span_overlap=score("span_overlap", None),
            span_overlap_by_label={lab: score("span_overlap", lab) for lab in labels},
            span_overlap_untyped=score(UNTYPED, None),
            ambiguity=self.errors.ambiguity(self.segmented),
            utility=utility,
            n_boot=n_boot,
            seed=seed,
            confidence=confidence,
            weighted=self.weighted,
        )


def evaluate(
    *,
    texts: Mapping[Key, str],
    gold: Mapping[Key, Sequence[Span]],
    pred: Mapping[Key, Sequence[Span]],
    segments: Mapping[Key, str] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    labels: Sequence[str] | None = None,
    confidence: float = 0.95,
    weights: Mapping[Key, float] | None = None,
) -> EvaluationReport:
    """Score ``pred`` against ``gold`` over the messages of ``texts``.

    Keys are ``(dialogue_id, message index)``. Messages missing from ``pred`` (or ``gold``) have
    no predicted (gold) spans; spans for messages not in ``texts`` are an error. ``labels`` picks
    and orders the per-label rows (default: every label in gold or predictions); overall rows
    always count every span. ``segments`` (MATH / NON-MATH per message) adds the FP:TP split.
    ``weights`` maps a message to its sampling weight ``1/p`` (absent: 1); P/R/F counts are
    weighted, so the scores estimate the corpus the sample was drawn from.
    """
    _check(texts, gold, "gold")
    _check(texts, pred, "prediction")
    if labels is None:
        labels = _ordered_labels(
            [s.label for ss in gold.values() for s in ss] + [s.label for ss in pred.values() for s in ss]
        )
    weights = weights or {}
    messages = (ScoredMessage(key, text, gold.get(key, ()), pred.get(key, ()),
                              segments.get(key) if segments is not None else None, float(weights.get(key, 1.0)))
                for key, text in texts.items())
    return evaluate_messages(messages, labels=labels, segmented=segments is not None, n_boot=n_boot, seed=seed,
                             confidence=confidence)


def evaluate_messages(
    messages: Iterable[ScoredMessage],
    *,
    labels: Sequence[str],
    segmented: bool = False,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> EvaluationReport:
    """:func:`evaluate` on messages read once, one at a time, so a gold set of a million
    messages is never held. ``labels`` are given, since a stream cannot be read for
    them first; ``segmented`` says the messages carry MATH / NON-MATH segments (a message without
    one counts as unsegmented)."""
    scoring = Scoring(labels, segmented=segmented)
    for m in messages:
        scoring.add(m)
    return scoring.report(n_boot=n_boot, seed=seed, confidence=confidence)
