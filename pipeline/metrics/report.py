"""Plain-text rendering of an :class:`~pipeline.metrics.evaluation.EvaluationReport`."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipeline.metrics.evaluation import EvaluationReport, Score

LEVEL_NAMES = {
    "token": "token",
    "span_exact": "span exact",
    "span_overlap": "span overlap",
    "span_overlap_untyped": "span overlap, any label",
}


def _f(x: float | None, digits: int = 3) -> str:
    return "–" if x is None or math.isnan(x) else f"{x:.{digits}f}"


def _ratio(x: float) -> str:
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


def format_report(report: EvaluationReport) -> str:
    conf = f"{100 * report.confidence:g}%"
    out = [
        f"{report.n_messages:,} messages in {report.n_dialogues:,} dialogues; "
        f"[{conf} CI]: bootstrap over dialogues, {report.n_boot:,} resamples, seed {report.seed}",
        *(f"note: {n}" for n in report.notes),
        "",
    ]
    rows = []
    for level, label, s in report.scores():
        if label != "ALL" and s.n_pred == 0 and s.n_gold == 0:
            continue
        rows.append(
            [
                LEVEL_NAMES[level],
                label,
                _cell(s, "precision"),
                _cell(s, "recall"),
                _cell(s, "f1"),
                _cell(s, "f2"),
                f"{s.tp:,}",
                f"{s.fp:,}",
                f"{s.fn:,}",
            ]
        )
    out += _table(
        ["level", "label", "precision", "recall", "F1", "F2", "TP", "FP", "FN"],
        rows,
        right={6, 7, 8},
    )

    a = report.ambiguity
    out += [
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
            [
                [
                    lab,
                    f"{a.fp_by_label.get(lab, 0):,}",
                    f"{a.numeric_fp_by_label.get(lab, 0):,}",
                    f"{a.tp_by_label.get(lab, 0):,}",
                ]
                for lab in labels
            ],
            right={1, 2, 3},
        )
        out.append("")
    if a.fp_by_source:
        out += _table(
            ["source", "FP", "numeric FP"],
            [
                [src, f"{n:,}", f"{a.numeric_fp_by_source.get(src, 0):,}"]
                for src, n in a.fp_by_source.items()
            ],
            right={1, 2},
        )
        out.append("")
    if a.segments is not None:
        out += _table(
            ["segment", "messages", "FP", "TP", "true PII", "FP:TP", "FP:PII"],
            [
                [
                    seg,
                    f"{e.messages:,}",
                    f"{e.fp:,}",
                    f"{e.tp:,}",
                    f"{e.gold:,}",
                    _ratio(e.fp_per_tp),
                    _ratio(e.fp_per_gold),
                ]
                for seg, e in a.segments.items()
            ],
            right={1, 2, 3, 4, 5, 6},
        )
        out.append("")

    u = report.utility
    out += [
        "Utility",
        f"number tokens removed: {u.number_tokens_removed:,} of {u.number_tokens:,} "
        f"({_pct(u.number_tokens_removed_share)}); outside gold PII: "
        f"{u.number_tokens_removed_outside_gold:,} of {u.number_tokens_outside_gold:,} "
        f"({_pct(u.number_tokens_removed_outside_gold_share)})",
        f"spans per 1,000 messages: predicted {_f(u.pred_spans_per_1000_messages, 1)}, "
        f"gold {_f(u.gold_spans_per_1000_messages, 1)}",
    ]
    return "\n".join(out)
