"""Is a new tagger version better than the active one? Both scored on one gold dev set.

F2 (exact spans) is compared with a *paired* bootstrap over dialogues: every resample draws the
dev dialogues with replacement and scores both versions on that same draw, so the interval is of
the difference and the variation the two versions share (hard dialogues are hard for both)
cancels out. "Better" means the interval's lower bound is above zero. The new version must also
remove no more number tokens outside gold, and make no more false positives that contain a
digit: a tutor's maths kept intact matters as much as a name found.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from pipeline.metrics.bootstrap import bootstrap_stats, prf_from_counts
from pipeline.metrics.evaluation import Key, evaluate
from pipeline.types import Dialogue, Span

N_BOOT = 1000
# Two-sided 90 %: "better" when the 5th percentile of the F2 difference is above 0, i.e. a
# one-sided 95 % test. Dev sets drawn from a project's gold are small (tens of dialogues), and a
# 95 % two-sided bound would keep the first model forever.
CONFIDENCE = 0.90
_F2 = 3  # column of F2 in prf_from_counts


@dataclass(frozen=True)
class DevScores:
    """One version on the dev set: exact-span F2, recall and precision, and the maths it costs."""

    f2: float
    recall: float
    precision: float
    numbers_removed: int  # number tokens outside gold that its spans would remove
    numeric_fp: int  # false positives (overlapping no gold span) that contain a digit
    name_recall: float | None = None  # exact-span recall on NAME (None: no gold name in the set)


@dataclass(frozen=True)
class Comparison:
    """The new version against the old on the same dialogues; ``better`` with its reasons."""

    new: DevScores
    old: DevScores | None
    dialogues: int
    messages: int
    delta_f2: float | None
    ci: tuple[float, float] | None
    confidence: float
    n_boot: int
    seed: int
    better: bool
    reasons: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["ci"] = list(self.ci) if self.ci else None
        out["reasons"] = list(self.reasons)
        return out


def _texts_and_gold(dialogues: Sequence[Dialogue]) -> tuple[dict[Key, str], dict[Key, tuple[Span, ...]]]:
    texts = {(d.id, m.index): m.text for d in dialogues for m in d.messages}
    gold = {(d.id, m.index): m.spans for d in dialogues for m in d.messages}
    return texts, gold


def dialogue_counts(dialogues: Sequence[Dialogue], pred: Mapping[Key, Sequence[Span]]) -> np.ndarray:
    """``(dialogues, 4)`` exact-span counts (tp, predicted, tp, gold), the bootstrap's input."""
    out = np.zeros((len(dialogues), 4), dtype=np.int64)
    for i, d in enumerate(dialogues):
        for m in d.messages:
            g = {s.key() for s in m.spans}
            p = {s.key() for s in pred.get((d.id, m.index), ())}
            out[i] += (len(g & p), len(p), len(g & p), len(g))
    return out


def dev_scores(dialogues: Sequence[Dialogue], pred: Mapping[Key, Sequence[Span]]) -> DevScores:
    """One version's scores on gold ``dialogues`` (via :func:`pipeline.metrics.evaluation.evaluate`)."""
    texts, gold = _texts_and_gold(dialogues)
    report = evaluate(texts=texts, gold=gold, pred=pred, n_boot=0)
    s = report.span_exact

    def num(x: float) -> float:
        return 0.0 if x is None or np.isnan(x) else round(float(x), 4)

    names = report.span_exact_by_label.get("NAME")
    has_names = any(sp.label == "NAME" for spans in gold.values() for sp in spans)
    return DevScores(
        f2=num(s.f2), recall=num(s.recall), precision=num(s.precision),
        numbers_removed=report.utility.number_tokens_removed_outside_gold,
        numeric_fp=report.ambiguity.numeric_fp,
        name_recall=num(names.recall) if names is not None and has_names else None,
    )


def paired_f2_difference(
    new_counts: np.ndarray, old_counts: np.ndarray, *, n_boot: int = N_BOOT, seed: int = 0,
    confidence: float = CONFIDENCE,
) -> tuple[float, tuple[float, float]]:
    """F2(new) - F2(old) and its paired percentile interval (dialogues resampled together)."""
    counts = np.stack([new_counts, old_counts], axis=1)  # (dialogues, 2 versions, 4)
    stats = bootstrap_stats(counts, n_boot=n_boot, seed=seed)[..., _F2]
    diffs = np.nan_to_num(stats[:, 0]) - np.nan_to_num(stats[:, 1])
    alpha = (1 - confidence) / 2
    totals = counts.sum(axis=0)

    point = np.nan_to_num(prf_from_counts(totals)[:, _F2])
    lo, hi = np.quantile(diffs, [alpha, 1 - alpha])
    return round(float(point[0] - point[1]), 4), (round(float(lo), 4), round(float(hi), 4))


def compare_versions(
    dialogues: Sequence[Dialogue],
    new_pred: Mapping[Key, Sequence[Span]],
    old_pred: Mapping[Key, Sequence[Span]] | None,
    *,
    n_boot: int = N_BOOT,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> Comparison:
    """Score ``new_pred`` (and ``old_pred``, the active version's) on gold ``dialogues``; with no
    old version the new one counts as better. Raises ``ValueError`` on an empty dev set."""
    dialogues = [d for d in dialogues if d.messages]
    if not dialogues:
        raise ValueError("no dev dialogues to compare the versions on")
    new = dev_scores(dialogues, new_pred)
    base = {"new": new, "dialogues": len(dialogues), "messages": sum(len(d.messages) for d in dialogues),
            "confidence": confidence, "n_boot": n_boot, "seed": seed}
    if old_pred is None:
        return Comparison(**base, old=None, delta_f2=None, ci=None, better=True,
                          reasons=("no active version to beat",))
    old = dev_scores(dialogues, old_pred)
    delta, ci = paired_f2_difference(dialogue_counts(dialogues, new_pred), dialogue_counts(dialogues, old_pred),
                                     n_boot=n_boot, seed=seed, confidence=confidence)
    f2 = f"dev F2 {new.f2:.3f} vs {old.f2:.3f} (difference {delta:+.3f}, {confidence:.0%} CI {ci[0]:+.3f} to {ci[1]:+.3f})"
    problems = []
    if ci[0] <= 0:
        problems.append(f"{f2}: not better, the interval reaches 0")
    if new.numbers_removed > old.numbers_removed:
        problems.append(f"removes more number tokens outside gold ({new.numbers_removed} vs {old.numbers_removed})")
    if new.numeric_fp > old.numeric_fp:
        problems.append(f"more numeric false positives ({new.numeric_fp} vs {old.numeric_fp})")
    reasons = tuple(problems) if problems else (f"{f2}; numbers removed {new.numbers_removed} vs "
                                               f"{old.numbers_removed}, numeric false positives "
                                               f"{new.numeric_fp} vs {old.numeric_fp}",)
    return Comparison(**base, old=old, delta_f2=delta, ci=ci, better=not problems, reasons=reasons)
