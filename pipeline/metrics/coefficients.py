"""The formulas under the agreement report, on counts: Cohen's and Fleiss' kappa, Krippendorff's
nominal alpha, span matching and F1, and the dialogue bootstrap (weights and percentile intervals).

Each works on one matrix or on a stack of them (``(..., K, K)``), so the point estimate and all
bootstrap resamples go through the same code.
"""

from __future__ import annotations

import warnings
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence

import numpy as np

from pipeline.text import tokenize
from pipeline.types import Span

OUTSIDE = "O"


# --------------------------------------------------------------------------- bootstrap helpers


RESAMPLE_BLOCK = 100  # resamples multiplied at once: bounds the float copy of the draw counts


def bootstrap_weights(n_groups: int, n_boot: int, seed: int = 0) -> np.ndarray:
    """``(n_boot, n_groups)`` counts: how often each dialogue is drawn in each resample.

    Kept as small integers (a dialogue is drawn a handful of times at most), drawn and counted one
    resample at a time: at 33,000 dialogues the float matrix with its draws took 800 MB and the
    counts take 33 MB. The draws are the same as one ``(n_boot, n_groups)`` call's."""
    if n_groups == 0 or n_boot <= 0:
        return np.zeros((max(n_boot, 0), n_groups), dtype=np.uint8)
    rng = np.random.default_rng(seed)
    out = np.empty((n_boot, n_groups), dtype=np.uint8)
    for b in range(n_boot):
        row = np.bincount(rng.integers(0, n_groups, size=n_groups), minlength=n_groups)
        if row.max() > np.iinfo(out.dtype).max:  # a dialogue drawn 256 times: never seen, but not wrapped
            out = out.astype(np.uint32)
        out[b] = row
    return out


def resampled_sums(w: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``w @ counts``: each resample's totals (``w`` from :func:`bootstrap_weights`, ``counts``
    one row of counts per dialogue), multiplied on the columns that hold a count only, a block of
    resamples at a time. Most cells of per-dialogue confusion matrices are zero in every dialogue
    (labels no two annotators confused) and total zero in every resample; skipping them is most of
    the product, which grows with the dialogues."""
    counts = np.asarray(counts)
    used = np.flatnonzero(counts.any(axis=0))
    out = np.zeros((w.shape[0], counts.shape[1]), dtype=np.result_type(np.float64, counts))
    if used.size:
        dense = counts[:, used]
        for b in range(0, w.shape[0], RESAMPLE_BLOCK):
            out[b:b + RESAMPLE_BLOCK, used] = w[b:b + RESAMPLE_BLOCK].astype(out.dtype) @ dense
    return out


def percentile_ci(boot: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval along axis 0, ignoring resamples where the figure is undefined."""
    alpha = (1.0 - confidence) / 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lo = np.nanpercentile(boot, 100 * alpha, axis=0)
        hi = np.nanpercentile(boot, 100 * (1 - alpha), axis=0)
    return lo, hi


def grouped_sums(
    dialogue: np.ndarray, group: np.ndarray, n_dialogues: int, n_groups: int, columns: Sequence
) -> np.ndarray:
    """Sum each column per (dialogue, group): ``(n_dialogues, n_groups, len(columns))``."""
    keep = group >= 0
    idx = dialogue[keep].astype(np.int64) * n_groups + group[keep]
    out = np.empty((n_dialogues * n_groups, len(columns)))
    for j, col in enumerate(columns):
        w = None if col is None else np.asarray(col, dtype=float)[keep]
        out[:, j] = np.bincount(idx, weights=w, minlength=n_dialogues * n_groups)
    return out.reshape(n_dialogues, n_groups, len(columns))


# --------------------------------------------------------------------------- pure formulas


def kappa_from_confusion(conf: np.ndarray) -> np.ndarray:
    """Cohen's kappa of confusion matrices ``(..., K, K)``; NaN where chance agreement is 1."""
    conf = np.asarray(conf, dtype=float)
    n = conf.sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        po = np.trace(conf, axis1=-2, axis2=-1) / n
        pe = (conf.sum(axis=-1) * conf.sum(axis=-2)).sum(axis=-1) / n**2
        return np.where(pe < 1 - 1e-12, (po - pe) / (1 - pe), np.nan)


def alpha_from_coincidence(coinc: np.ndarray) -> np.ndarray:
    """Krippendorff's nominal alpha of coincidence matrices ``(..., K, K)``."""
    coinc = np.asarray(coinc, dtype=float)
    nc = coinc.sum(axis=-1)
    n = nc.sum(axis=-1)
    observed = coinc.sum(axis=(-2, -1)) - np.trace(coinc, axis1=-2, axis2=-1)
    expected = n**2 - (nc**2).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1.0 - (n - 1) * observed / expected, np.nan)


def fleiss_from_stats(sum_p: np.ndarray, n_units: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Fleiss' kappa from ``sum_i P_i``, the number of units and category totals ``(..., K)``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p_bar = sum_p / n_units
        p = totals / totals.sum(axis=-1, keepdims=True)
        pe = (p**2).sum(axis=-1)
        return np.where(pe < 1 - 1e-12, (p_bar - pe) / (1 - pe), np.nan)


def fleiss_kappa(table: np.ndarray) -> float:
    """Fleiss' kappa of an ``items x categories`` count table.

    Items may have different numbers of raters (``P_i`` uses each item's own ``n_i``; items with
    fewer than two ratings are dropped); with a constant number this is Fleiss (1971) exactly.
    """
    t = np.asarray(table, dtype=float)
    n_i = t.sum(axis=1)
    t, n_i = t[n_i >= 2], n_i[n_i >= 2]
    p_i = ((t**2).sum(axis=1) - n_i) / (n_i * (n_i - 1))
    return float(fleiss_from_stats(p_i.sum(), np.float64(len(t)), t.sum(axis=0)))


def collapse_matrix(n_categories: int, label_code: int | None) -> np.ndarray:
    """``K x 2`` map to a binary scheme: one label vs the rest, or (None) O vs any PII."""
    m = np.zeros((n_categories, 2))
    if label_code is None:
        m[0, 0] = 1
        m[1:, 1] = 1
    else:
        m[:, 0] = 1
        m[label_code, 0] = 0
        m[label_code, 1] = 1
    return m


def collapse(conf: np.ndarray, m: np.ndarray) -> np.ndarray:
    return np.einsum("ki,...kl,lj->...ij", m, conf, m)


def token_labels(text: str, spans: Iterable[Span], labels: Sequence[str]) -> list[str]:
    """IO label of each word token of ``text`` (``O`` or the label of the overlapping span)."""
    toks = tokenize(text)
    out = [OUTSIDE] * len(toks)
    code = {lab: i + 1 for i, lab in enumerate(labels)}
    starts, ends = [t.start for t in toks], [t.end for t in toks]
    for s in spans:
        if s.label in code:
            for i in range(bisect_right(ends, s.start), bisect_left(starts, s.end)):
                out[i] = s.label
    return out


def match_spans(a: Sequence[Span], b: Sequence[Span], *, match: str = "exact",
                typed: bool = True) -> tuple[int, int]:
    """``(a matched, b matched)``: how many spans of each side have a partner on the other."""
    if match == "exact":
        if typed:
            common = {s.key() for s in a} & {s.key() for s in b}
            return len(common), len(common)
        common2 = {(s.start, s.end) for s in a} & {(s.start, s.end) for s in b}
        return len(common2), len(common2)
    if match != "overlap":
        raise ValueError(f"unknown match {match!r}: use 'exact' or 'overlap'")

    def hit(x: Span, ys: Sequence[Span]) -> bool:
        return any(x.overlaps(y) and (not typed or x.label == y.label) for y in ys)

    return sum(hit(x, b) for x in a), sum(hit(y, a) for y in b)


def f1_from_counts(n_a, n_b, m_a, m_b) -> np.ndarray:
    """Symmetric span F1: precision ``m_b / n_b`` (b against a), recall ``m_a / n_a``."""
    n_a, n_b, m_a, m_b = (np.asarray(x, dtype=float) for x in (n_a, n_b, m_a, m_b))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(n_b > 0, m_b / n_b, np.nan)
        r = np.where(n_a > 0, m_a / n_a, np.nan)
        f = np.where(p + r > 0, 2 * p * r / (p + r), 0.0)
        # Both sides empty: nothing to disagree about, F1 undefined.
        return np.where((n_a + n_b) > 0, np.where(np.isnan(p) | np.isnan(r), 0.0, f), np.nan)
