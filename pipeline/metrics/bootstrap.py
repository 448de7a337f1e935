"""Dialogue-level bootstrap of precision, recall, F1 and F2 from per-dialogue counts.

Resampling dialogues (not messages) keeps each session's correlated errors together. Counts are
computed once per dialogue; each resample is a vector of dialogue multiplicities, so 1,000
resampled totals are a few matrix products, not 1,000 passes over the corpus.
"""

from __future__ import annotations

import warnings

import numpy as np

_RESAMPLE_CHUNK = 64  # resamples drawn per step: bounds memory at 64 x dialogues weights


def prf_from_counts(sums: np.ndarray) -> np.ndarray:
    """``(..., 4)`` counts -> ``(..., 4)`` precision, recall, F1, F2 (nan where undefined)."""
    tp_p, n_p, tp_g, n_g = (sums[..., k].astype(np.float64) for k in range(4))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(n_p > 0, tp_p / np.where(n_p > 0, n_p, 1), np.nan)
        r = np.where(n_g > 0, tp_g / np.where(n_g > 0, n_g, 1), np.nan)
        out = [p, r]
        for beta in (1.0, 2.0):
            b2 = beta * beta
            den = b2 * p + r
            f = np.where(den > 0, (1 + b2) * p * r / np.where(den > 0, den, 1), 0.0)
            out.append(np.where(np.isnan(p) | np.isnan(r), np.nan, f))
    return np.stack(out, axis=-1)


def bootstrap_stats(counts: np.ndarray, *, n_boot: int = 1000, seed: int = 0) -> np.ndarray:
    """``(n_boot, columns, 4)`` P/R/F1/F2 of ``n_boot`` resamples of the dialogues of ``counts``
    (``(dialogues, columns, 4)``, at least one dialogue). Every column of one resample uses the
    same dialogues, so two columns (two models on one dev set) can be compared pairwise."""
    n_dlg, n_cols, _ = counts.shape
    flat = counts.reshape(n_dlg, n_cols * 4).astype(np.float64)
    rng = np.random.default_rng(seed)
    stats = np.empty((n_boot, n_cols, 4))
    for start in range(0, n_boot, _RESAMPLE_CHUNK):
        k = min(_RESAMPLE_CHUNK, n_boot - start)
        draws = rng.integers(0, n_dlg, size=(k, n_dlg))
        offsets = (np.arange(k) * n_dlg)[:, None]
        weights = np.bincount((draws + offsets).ravel(), minlength=k * n_dlg).reshape(k, n_dlg)
        # einsum, not BLAS: a threaded BLAS on a busy machine is 40x slower for this shape
        sums = np.einsum("kd,dc->kc", weights.astype(np.float64), flat).reshape(k, n_cols, 4)
        stats[start : start + k] = prf_from_counts(sums)
    return stats


def bootstrap_intervals(
    counts: np.ndarray, *, n_boot: int = 1000, seed: int = 0, confidence: float = 0.95
) -> np.ndarray:
    """Percentile intervals of P/R/F1/F2 from resampling dialogues with replacement.

    ``counts`` is ``(dialogues, columns, 4)`` (``tp_pred, n_pred, tp_gold, n_gold``); returns
    ``(columns, 4 metrics, 2)``. Each resample is a vector of dialogue multiplicities, so the
    resampled totals are one matrix product per chunk of resamples.
    """
    n_dlg, n_cols, _ = counts.shape
    out = np.full((n_cols, 4, 2), np.nan)
    if n_dlg == 0 or n_boot <= 0:
        return out
    stats = bootstrap_stats(counts, n_boot=n_boot, seed=seed)
    alpha = (1 - confidence) / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-nan columns stay nan
        out[..., 0] = np.nanquantile(stats, alpha, axis=0)
        out[..., 1] = np.nanquantile(stats, 1 - alpha, axis=0)
    return out


def paired_drop_test(
    counts: np.ndarray, *, tolerance: float, metric: int = 2, n_boot: int = 1000, seed: int = 0,
    z: float = 1.645,
) -> dict[str, float | bool]:
    """Whether column 1 of ``counts`` (``(dialogues, 2, 4)``: a reference and a candidate model
    scored on the same dialogues) is *significantly* worse than column 0 by more than
    ``tolerance`` on ``metric`` (2: F1).

    The drop's standard error comes from resampling the dialogues, both columns together (a paired
    bootstrap: most dialogues are decided the same way by both models, so the difference is far
    less noisy than either score). The candidate fails only when the drop exceeds the tolerance
    by more than ``z`` standard errors (one-sided, 5 % by default): a drop inside the sample's
    noise is not evidence of a loss, while a real one fails on any sample big enough to show it.
    """
    sums = counts.sum(axis=0)
    point = prf_from_counts(sums)[:, metric]
    drop = float(np.nan_to_num(point[0] - point[1]))
    se = 0.0
    if counts.shape[0] > 1 and n_boot > 1:
        stats = bootstrap_stats(counts, n_boot=n_boot, seed=seed)[:, :, metric]
        diffs = np.nan_to_num(stats[:, 0] - stats[:, 1])
        se = float(diffs.std(ddof=1))
    return {
        "drop": round(drop, 4),
        "se": round(se, 4),
        "tolerance": tolerance,
        "z": z,
        "dialogues": int(counts.shape[0]),
        "passed": drop - tolerance <= z * se,
    }
