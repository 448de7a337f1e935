"""What an evaluation reports: plain value objects, ``to_dict`` for JSON and a text table.

Undefined values (precision with no predictions, recall with no gold, ratios over zero) are
``nan`` on the objects, ``None`` in :meth:`EvaluationReport.to_dict` and ``–`` in the table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

LEVELS = ("token", "span_exact", "span_overlap")
UNTYPED = "span_overlap_untyped"
METRICS = ("precision", "recall", "f1", "f2")


# --- value objects ---------------------------------------------------------------------------


def _ratio(a: float, b: float) -> float:
    return a / b if b else math.nan


def _fbeta(p: float, r: float, beta: float) -> float:
    if math.isnan(p) or math.isnan(r):
        return math.nan
    b2 = beta * beta
    return (1 + b2) * p * r / (b2 * p + r) if (p + r) > 0 else 0.0


def _num(x: float | None, digits: int = 6) -> float | None:
    return (
        None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), digits)
    )


@dataclass(frozen=True, slots=True)
class Score:
    """Counts and P/R/F1/F2 of one level and label, with bootstrap intervals per metric.

    ``tp_pred`` predicted units judged right (of ``n_pred``); ``tp_gold`` gold units found (of
    ``n_gold``). They differ only for overlap matching, where one prediction can cover two gold
    spans.
    """

    tp_pred: int
    n_pred: int
    tp_gold: int
    n_gold: int
    ci: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def precision(self) -> float:
        return _ratio(self.tp_pred, self.n_pred)

    @property
    def recall(self) -> float:
        return _ratio(self.tp_gold, self.n_gold)

    @property
    def f1(self) -> float:
        return _fbeta(self.precision, self.recall, 1.0)

    @property
    def f2(self) -> float:
        return _fbeta(self.precision, self.recall, 2.0)

    @property
    def tp(self) -> int:
        return self.tp_gold

    @property
    def fp(self) -> int:
        return self.n_pred - self.tp_pred

    @property
    def fn(self) -> int:
        return self.n_gold - self.tp_gold

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {m: _num(getattr(self, m)) for m in METRICS}
        out.update(
            tp=self.tp,
            fp=self.fp,
            fn=self.fn,
            tp_pred=self.tp_pred,
            n_pred=self.n_pred,
            n_gold=self.n_gold,
        )
        out["ci"] = {m: [_num(lo), _num(hi)] for m, (lo, hi) in self.ci.items()}
        return out


@dataclass(frozen=True, slots=True)
class SegmentErrors:
    """False positives, true positives and true PII inside one kind of segment."""

    messages: int = 0
    fp: int = 0
    tp: int = 0
    gold: int = 0

    @property
    def fp_per_tp(self) -> float:
        return _ratio(self.fp, self.tp)

    @property
    def fp_per_gold(self) -> float:
        return _ratio(self.fp, self.gold)

    def to_dict(self) -> dict[str, Any]:
        return {
            "messages": self.messages,
            "fp": self.fp,
            "tp": self.tp,
            "gold": self.gold,
            "fp_per_tp": _num(self.fp_per_tp),
            "fp_per_gold": _num(self.fp_per_gold),
        }


@dataclass(frozen=True, slots=True)
class Ambiguity:
    """MathEd-PII's numeric-ambiguity table (false positive = overlaps no gold span at all)."""

    fp: int
    tp: int
    numeric_fp: int
    fp_by_label: Mapping[str, int]
    tp_by_label: Mapping[str, int]
    numeric_fp_by_label: Mapping[str, int]
    fp_by_source: Mapping[str, int]
    numeric_fp_by_source: Mapping[str, int]
    segments: Mapping[str, SegmentErrors] | None = None

    @property
    def numeric_fp_share(self) -> float:
        return _ratio(self.numeric_fp, self.fp)

    def to_dict(self) -> dict[str, Any]:
        return {
            "fp": self.fp,
            "tp": self.tp,
            "numeric_fp": self.numeric_fp,
            "numeric_fp_share": _num(self.numeric_fp_share),
            "fp_by_label": dict(self.fp_by_label),
            "tp_by_label": dict(self.tp_by_label),
            "numeric_fp_by_label": dict(self.numeric_fp_by_label),
            "fp_by_source": dict(self.fp_by_source),
            "numeric_fp_by_source": dict(self.numeric_fp_by_source),
            "segments": None
            if self.segments is None
            else {k: v.to_dict() for k, v in self.segments.items()},
        }


@dataclass(frozen=True, slots=True)
class Utility:
    """What a redaction with the predicted spans would cost the maths."""

    messages: int
    pred_spans: int
    gold_spans: int
    number_tokens: int
    number_tokens_removed: int
    number_tokens_outside_gold: int
    number_tokens_removed_outside_gold: int

    @property
    def number_tokens_removed_share(self) -> float:
        return _ratio(self.number_tokens_removed, self.number_tokens)

    @property
    def number_tokens_removed_outside_gold_share(self) -> float:
        return _ratio(self.number_tokens_removed_outside_gold, self.number_tokens_outside_gold)

    @property
    def pred_spans_per_1000_messages(self) -> float:
        return _ratio(1000 * self.pred_spans, self.messages)

    @property
    def gold_spans_per_1000_messages(self) -> float:
        return _ratio(1000 * self.gold_spans, self.messages)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            k: getattr(self, k)
            for k in (
                "messages",
                "pred_spans",
                "gold_spans",
                "number_tokens",
                "number_tokens_removed",
                "number_tokens_outside_gold",
                "number_tokens_removed_outside_gold",
            )
        }
        for k in (
            "number_tokens_removed_share",
            "number_tokens_removed_outside_gold_share",
            "pred_spans_per_1000_messages",
            "gold_spans_per_1000_messages",
        ):
            out[k] = _num(getattr(self, k))
        return out


@dataclass(frozen=True, slots=True)
class EvaluationReport:
    n_dialogues: int
    n_messages: int
    labels: tuple[str, ...]
    token: Score
    token_by_label: Mapping[str, Score]
    span_exact: Score
    span_exact_by_label: Mapping[str, Score]
    span_overlap: Score
    span_overlap_by_label: Mapping[str, Score]
    span_overlap_untyped: Score
    ambiguity: Ambiguity
    utility: Utility
    n_boot: int = 1000
    seed: int = 0
    confidence: float = 0.95
    notes: tuple[str, ...] = ()  # what the caller left out or could not use
    weighted: bool = False  # P/R/F counts weighted by the sampling design (1/p per message)

    def scores(self) -> list[tuple[str, str, Score]]:
        """``(level, label, score)`` rows in table order; label ``ALL`` is the overall row."""
        rows: list[tuple[str, str, Score]] = []
        for level in LEVELS:
            rows.append((level, "ALL", getattr(self, level)))
            rows.extend((level, lab, s) for lab, s in getattr(self, f"{level}_by_label").items())
        rows.append((UNTYPED, "ALL", self.span_overlap_untyped))
        return rows

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "n_dialogues": self.n_dialogues,
            "n_messages": self.n_messages,
            "labels": list(self.labels),
            "n_boot": self.n_boot,
            "seed": self.seed,
            "confidence": self.confidence,
            "notes": list(self.notes),
            "weighted": self.weighted,
        }
        for level in LEVELS:
            out[level] = getattr(self, level).to_dict()
            out[f"{level}_by_label"] = {
                k: v.to_dict() for k, v in getattr(self, f"{level}_by_label").items()
            }
        out[UNTYPED] = self.span_overlap_untyped.to_dict()
        out["ambiguity"] = self.ambiguity.to_dict()
        out["utility"] = self.utility.to_dict()
        return out

    def format_table(self) -> str:
        return format_report(self)


# --- the text table -------------------------------------------------------------------------

LEVEL_NAMES = {
    "token": "token",
    "span_exact": "span exact",
    "span_overlap": "span overlap",
    "span_overlap_untyped": "span overlap, any label",
}


def _f(x: float | None, digits: int = 3) -> str:
    return "–" if x is None or math.isnan(x) else f"{x:.{digits}f}"


def _ratio_text(x: float) -> str:
    if math.isnan(x):
        return "–"
    return f"{x:.2f}:1" if x >= 0.1 or x == 0 else f"{x:.3f}:1"


def _pct(x: float) -> str:
    return "–" if math.isnan(x) else f"{100 * x:.1f}%"


def _cell(score: Score, metric: str) -> str:
    lo, hi = score.ci.get(metric, (math.nan, math.nan))
    point = _f(getattr(score, metric))
    if math.isnan(lo):
        return point
    return f"{point} [{_f(lo)}, {_f(hi)}]"


def _table(header: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(r[k]) for r in [header, *rows]) for k in range(len(header))]

    def line(r: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if k in right else c.ljust(w)
            for k, (c, w) in enumerate(zip(r, widths, strict=True))
        ).rstrip()

    return [line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]


def _header(report: EvaluationReport) -> list[str]:
    conf = f"{100 * report.confidence:g}%"
    return [
        f"{report.n_messages:,} messages in {report.n_dialogues:,} dialogues; "
        f"[{conf} CI]: bootstrap over dialogues, {report.n_boot:,} resamples, seed {report.seed}",
        *(f"note: {n}" for n in report.notes),
        *(["weighted by the sampling design: audit messages count 1/r, flagged ones 1; "
           "counts are estimates for the whole corpus"] if report.weighted else []),
        "",
    ]


def _scores_table(report: EvaluationReport) -> list[str]:
    rows = [
        [LEVEL_NAMES[level], label, _cell(s, "precision"), _cell(s, "recall"), _cell(s, "f1"), _cell(s, "f2"),
         f"{s.tp:,}", f"{s.fp:,}", f"{s.fn:,}"]
        for level, label, s in report.scores()
        if label == "ALL" or s.n_pred or s.n_gold
    ]
    return _table(["level", "label", "precision", "recall", "F1", "F2", "TP", "FP", "FN"], rows, right={6, 7, 8})


def _ambiguity_tables(a: Ambiguity) -> list[str]:
    out = [
        "",
        "Numeric ambiguity (false positive: a predicted span that overlaps no gold span)",
        f"false positives {a.fp:,}, of which numeric {a.numeric_fp:,} "
        f"({_pct(a.numeric_fp_share)}); true positives {a.tp:,}",
        "",
    ]
    labels = list(dict.fromkeys([*a.fp_by_label, *a.tp_by_label]))
    if labels:
        out += _table(
            ["predicted label", "FP", "numeric FP", "TP"],
            [[lab, f"{a.fp_by_label.get(lab, 0):,}", f"{a.numeric_fp_by_label.get(lab, 0):,}",
              f"{a.tp_by_label.get(lab, 0):,}"] for lab in labels],
            right={1, 2, 3},
        )
        out.append("")
    if a.fp_by_source:
        out += _table(
            ["source", "FP", "numeric FP"],
            [[src, f"{n:,}", f"{a.numeric_fp_by_source.get(src, 0):,}"] for src, n in a.fp_by_source.items()],
            right={1, 2},
        )
        out.append("")
    if a.segments is not None:
        out += _table(
            ["segment", "messages", "FP", "TP", "true PII", "FP:TP", "FP:PII"],
            [[seg, f"{e.messages:,}", f"{e.fp:,}", f"{e.tp:,}", f"{e.gold:,}", _ratio_text(e.fp_per_tp),
              _ratio_text(e.fp_per_gold)] for seg, e in a.segments.items()],
            right={1, 2, 3, 4, 5, 6},
        )
        out.append("")
    return out


def _utility_lines(u: Utility) -> list[str]:
    return [
        "Utility",
        f"number tokens removed: {u.number_tokens_removed:,} of {u.number_tokens:,} "
        f"({_pct(u.number_tokens_removed_share)}); outside gold PII: "
        f"{u.number_tokens_removed_outside_gold:,} of {u.number_tokens_outside_gold:,} "
        f"({_pct(u.number_tokens_removed_outside_gold_share)})",
        f"spans per 1,000 messages: predicted {_f(u.pred_spans_per_1000_messages, 1)}, "
        f"gold {_f(u.gold_spans_per_1000_messages, 1)}",
    ]


def format_report(report: EvaluationReport) -> str:
    """The plain-text report: scores, numeric ambiguity, utility."""
    return "\n".join(_header(report) + _scores_table(report) + _ambiguity_tables(report.ambiguity)
                     + _utility_lines(report.utility))
