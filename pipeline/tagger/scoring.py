"""Small scorers the training loop needs (early stopping, threshold tuning, quantisation check).

Kept here, not in :mod:`pipeline.metrics`, so that training depends on nothing but itself; the
benchmarks use the project's evaluation module for the published figures.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pipeline.tags import word_labels
from pipeline.text import Token
from pipeline.types import Span


def f_beta(tp: float, fp: float, fn: float, beta: float) -> float:
    b2 = beta * beta
    denom = (1 + b2) * tp + b2 * fn + fp
    return (1 + b2) * tp / denom if denom else 0.0


def span_scores(
    gold: Sequence[Sequence[Span]], pred: Sequence[Sequence[Span]], *, beta: float = 2.0
) -> dict:
    """Exact-match (start, end, label) precision, recall, F1 and F-beta, micro and per label."""
    per: dict[str, list[int]] = {}
    for g, p in zip(gold, pred, strict=True):
        gk, pk = {s.key() for s in g}, {s.key() for s in p}
        for key in gk | pk:
            c = per.setdefault(key[2], [0, 0, 0])
            if key in gk and key in pk:
                c[0] += 1
            elif key in pk:
                c[1] += 1
            else:
                c[2] += 1
    tp, fp, fn = (sum(c[i] for c in per.values()) for i in range(3))
    return {
        **_prf(tp, fp, fn, beta),
        "labels": {lab: _prf(*c, beta) for lab, c in sorted(per.items())},
    }


def dialogue_counts(
    gold: Sequence[Sequence[Span]], *preds: Sequence[Sequence[Span]], sizes: Sequence[int]
) -> np.ndarray:
    """Exact-span counts ``(dialogues, len(preds), 4)`` (``tp, n_pred, tp, n_gold``, the layout of
    :mod:`pipeline.metrics.bootstrap`) of each model's ``preds`` against ``gold``, messages
    grouped into dialogues of ``sizes`` messages: what a paired bootstrap over dialogues resamples."""
    out = np.zeros((len(sizes), len(preds), 4), dtype=np.int64)
    row = np.repeat(np.arange(len(sizes)), sizes)
    for col, pred in enumerate(preds):
        for d, g, p in zip(row, gold, pred, strict=True):
            gk, pk = {s.key() for s in g}, {s.key() for s in p}
            tp = len(gk & pk)
            out[d, col] += (tp, len(pk), tp, len(gk))
    return out


def _prf(tp: int, fp: int, fn: int, beta: float) -> dict:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "precision": round(p, 4),
        "recall": round(r, 4),
        "f1": round(f_beta(tp, fp, fn, 1.0), 4),
        f"f{beta:g}": round(f_beta(tp, fp, fn, beta), 4),
    }


GRID = tuple(round(x, 2) for x in np.arange(0.05, 0.951, 0.05))


def tune_thresholds(
    words: Sequence[Sequence[Token]],
    gold: Sequence[Sequence[Span]],
    entity_probs: Sequence[np.ndarray],
    labels: Sequence[str],
    *,
    beta: float,
    min_support: int = 5,
) -> tuple[dict[str, float], dict[str, dict]]:
    """Per-label word-level thresholds that maximise F-beta on the dev set.

    A label with fewer than ``min_support`` gold words on dev takes the threshold tuned on all
    labels together. Returns ``(thresholds, {label: {threshold, f, support}})``.
    """
    gold_ids = []
    for ws, spans in zip(words, gold, strict=True):
        gold_ids.append([lab for lab, _ in word_labels(ws, spans)])
    index = {lab: k for k, lab in enumerate(labels)}
    gold_flat = np.array(
        [index.get(lab, -1) if lab else -1 for g in gold_ids for lab in g], dtype=np.int64
    )
    probs = (
        np.concatenate([p for p in entity_probs if len(p)], axis=0)
        if any(len(p) for p in entity_probs)
        else np.zeros((0, len(labels)))
    )
    best_label = probs.argmax(axis=1) if len(probs) else np.zeros(0, dtype=np.int64)
    best_prob = probs.max(axis=1) if len(probs) else np.zeros(0)

    def counts(k: int | None, t: float) -> tuple[int, int, int]:
        if k is None:
            pred = np.where(best_prob >= t, best_label, -1)
            tp = int(((pred == gold_flat) & (gold_flat >= 0)).sum())
            return tp, int((pred >= 0).sum()) - tp, int((gold_flat >= 0).sum()) - tp
        pred = (best_label == k) & (best_prob >= t)
        is_gold = gold_flat == k
        tp = int((pred & is_gold).sum())
        return tp, int(pred.sum()) - tp, int(is_gold.sum()) - tp

    def best(k: int | None) -> tuple[float, float]:
        scored = [(f_beta(*counts(k, t), beta), -abs(t - 0.5), t) for t in GRID]
        f, _, t = max(scored)
        return t, f

    global_t, global_f = best(None)
    thresholds, report = {}, {"_all": {"threshold": global_t, "f": round(global_f, 4)}}
    for lab, k in index.items():
        support = int((gold_flat == k).sum())
        if support >= min_support:
            t, f = best(k)
        else:
            t, f = global_t, float("nan")
        thresholds[lab] = float(t)
        report[lab] = {"threshold": t, "f": None if f != f else round(f, 4), "support": support}
    return thresholds, report
