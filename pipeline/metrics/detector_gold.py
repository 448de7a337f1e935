"""A detector run scored against the gold set: span (exact, overlap) and token P/R/F1/F2 per label,
with dialogue-bootstrap intervals, and a table of how it treats numbers.

Only messages that have gold count; a prediction on a message without gold is not scored. Counts
are per dialogue, so all resamples are one matrix product (see :mod:`pipeline.metrics.agreement`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pipeline.metrics.agreement import bootstrap_weights, match_spans, percentile_ci
from pipeline.text import tokenize
from pipeline.types import Span

Key = tuple[str, int]
LEVELS = ("span_exact", "span_overlap", "token")
ALL = "ALL"


def _token_labels(text: str, spans: Sequence[Span]) -> tuple[list[str], list[bool]]:
    toks = tokenize(text)
    labels = ["O"] * len(toks)
    for s in spans:
        for i, t in enumerate(toks):
            if t.start < s.end and s.start < t.end:
                labels[i] = s.label
    return labels, [t.is_number for t in toks]


def _scores(n_pred, tp_pred, n_gold, tp_gold) -> dict[str, np.ndarray]:
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(n_pred > 0, tp_pred / n_pred, np.nan)
        r = np.where(n_gold > 0, tp_gold / n_gold, np.nan)
        out = {"precision": p, "recall": r}
        for name, beta in (("f1", 1.0), ("f2", 2.0)):
            b2 = beta * beta
            f = np.where((b2 * p + r) > 0, (1 + b2) * p * r / (b2 * p + r), 0.0)
            out[name] = np.where(np.isnan(p) | np.isnan(r),
                                 np.where(n_pred + n_gold > 0, 0.0, np.nan), f)
    return out


def score_run(
    predictions: Mapping[Key, Sequence[Span]],
    gold: Mapping[Key, Sequence[Span]],
    *,
    texts: Mapping[Key, str] | None = None,
    labels: Sequence[str] | None = None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """Rows ``{level, label, precision, recall, f1, f2 (each value/ci_low/ci_high), n_pred,
    n_gold}`` and the numeric table. Token level needs ``texts``."""
    if labels is None:
        labels = sorted({s.label for v in gold.values() for s in v}
                        | {s.label for k in gold for s in predictions.get(k, ())})
    labels = list(labels)
    groups = [ALL, *labels]
    levels = [lv for lv in LEVELS if lv != "token" or texts is not None]
    d_index: dict[str, int] = {}
    for did, _ in gold:
        d_index.setdefault(did, len(d_index))
    n_d = len(d_index)
    # counts[d, level, group, (n_pred, tp_pred, n_gold, tp_gold)]
    counts = np.zeros((n_d, len(levels), len(groups), 4))
    numeric = np.zeros((n_d, 4))  # number tokens: gold PII, predicted PII, tp, fp
    for key, g in gold.items():
        d = d_index[key[0]]
        p = list(predictions.get(key, ()))
        g = list(g)
        for li, level in enumerate(levels):
            if level == "token":
                gl, is_num = _token_labels(texts[key], g)
                pl, _ = _token_labels(texts[key], p)
                for a, b, num in zip(gl, pl, is_num, strict=True):
                    if b != "O":
                        counts[d, li, 0, 0] += 1
                        counts[d, li, 0, 1] += a == b
                        if b in labels:
                            gi = 1 + labels.index(b)
                            counts[d, li, gi, 0] += 1
                            counts[d, li, gi, 1] += a == b
                    if a != "O":
                        counts[d, li, 0, 2] += 1
                        counts[d, li, 0, 3] += a == b
                        if a in labels:
                            gi = 1 + labels.index(a)
                            counts[d, li, gi, 2] += 1
                            counts[d, li, gi, 3] += a == b
                    if num:
                        numeric[d] += (a != "O", b != "O", a != "O" and b != "O",
                                       a == "O" and b != "O")
                continue
            match = "exact" if level == "span_exact" else "overlap"
            g_hit, p_hit = match_spans(g, p, match=match)
            counts[d, li, 0] += (len(p), p_hit, len(g), g_hit)
            for gi, lab in enumerate(labels, start=1):
                gs = [s for s in g if s.label == lab]
                ps = [s for s in p if s.label == lab]
                if gs or ps:
                    gh, ph = match_spans(gs, ps, match=match)
                    counts[d, li, gi] += (len(ps), ph, len(gs), gh)
    w = bootstrap_weights(n_d, n_boot, seed)
    point = counts.sum(0)
    boot = (w @ counts.reshape(n_d, -1)).reshape(-1, *counts.shape[1:])
    sp = _scores(*(point[..., i] for i in range(4)))
    sb = _scores(*(boot[..., i] for i in range(4)))
    rows = []
    for li, level in enumerate(levels):
        for gi, group in enumerate(groups):
            if point[li, gi, 0] + point[li, gi, 2] == 0:
                continue
            row: dict[str, Any] = {"level": level, "label": group,
                                   "n_pred": int(point[li, gi, 0]), "n_gold": int(point[li, gi, 2])}
            for name in ("precision", "recall", "f1", "f2"):
                lo, hi = percentile_ci(sb[name][:, li, gi].reshape(-1, 1), confidence)
                row[name] = {"value": _clean(sp[name][li, gi]), "ci_low": _clean(lo[0]),
                             "ci_high": _clean(hi[0])}
            rows.append(row)
    nt = numeric.sum(0)
    return {
        "rows": rows,
        "numeric": {"gold_pii_numbers": int(nt[0]), "predicted_pii_numbers": int(nt[1]),
                    "true_positive_numbers": int(nt[2]), "false_positive_numbers": int(nt[3])},
        "n_messages": len(gold), "n_dialogues": n_d, "n_boot": n_boot,
    }


def _clean(x) -> float | None:
    x = float(x)
    return None if np.isnan(x) else round(x, 6)
