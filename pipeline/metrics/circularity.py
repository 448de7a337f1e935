"""The circularity check: does seeing the model's suggestions inflate the model's own score?

A detector scored against gold that annotators built while looking at the detector's output is
partly scored against itself. In randomized mode the same item is labelled blind by one annotator
and aware by another, so the detector can be scored against both golds on the same items; the
difference ``ΔF1 = F1(aware gold) − F1(blind gold)`` estimates the inflation. Everything is
resampled by dialogue with the same weights, so the interval of ΔF1 is paired; the dialogue is
also the cluster that contains the unit of randomization, (annotator, dialogue), so the interval
accounts for items that share an annotator's condition.

Two threats are reported, not assumed away:

* *cross-condition exposure*: a blind item whose annotator saw the model's suggestions on another
  message of the same dialogue (plans randomizing per item allowed it) pulls blind gold towards
  the model and biases ΔF1 towards zero;
* *the sampling design*: an audit sample of unflagged messages drawn with probability ``r`` must
  weigh ``1/r`` (flagged messages 1), or recall is overstated. ``weights`` carries those.

The report is flagged only when the interval of ΔF1 lies above zero *and* its point estimate
exceeds the threshold.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from pipeline.adjudication import FavourTally, SettledItem
from pipeline.assignment import cross_condition_exposure
from pipeline.metrics.agreement import (
    AWARE,
    BLIND,
    CONDITIONS,
    AnnotatedItem,
    bootstrap_weights,
    match_spans,
    percentile_ci,
    resampled_sums,
)
from pipeline.types import Span

DEFAULT_THRESHOLD = 0.02
MIN_DIALOGUES = 20  # fewer paired dialogues than this: say the interval is not trustworthy
CLUSTER_UNIT = "dialogue"  # what the bootstrap resamples
WEIGHT_RULE = "each item weighs 1/p, p its probability of being sampled: 1/r for audit items, 1 for flagged ones"

Key = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Estimate:
    value: float
    ci_low: float
    ci_high: float

    def to_dict(self) -> dict[str, float | None]:
        return {k: _clean(v) for k, v in asdict(self).items()}

    def contains(self, x: float) -> bool:
        return self.ci_low <= x <= self.ci_high

    def __str__(self) -> str:
        return f"{self.value:.3f} [{self.ci_low:.3f}, {self.ci_high:.3f}]"


def _clean(x: float) -> float | None:
    return None if x is None or math.isnan(x) else round(float(x), 6)


@dataclass(frozen=True, slots=True)
class Scores:
    precision: Estimate
    recall: Estimate
    f1: Estimate
    n_pred: int
    n_gold: int

    def to_dict(self) -> dict[str, Any]:
        return {"precision": self.precision.to_dict(), "recall": self.recall.to_dict(),
                "f1": self.f1.to_dict(), "n_pred": self.n_pred, "n_gold": self.n_gold}


@dataclass
class CircularityReport:
    run: str
    match: str
    threshold: float
    n_items: int
    n_paired_items: int
    n_dialogues: int
    blind: Scores | None
    aware: Scores | None
    delta_f1: Estimate | None
    delta_precision: Estimate | None
    delta_recall: Estimate | None
    flagged: bool
    agreement_by_condition: dict[str, Estimate] = field(default_factory=dict)
    accept_without_edit: dict[str, float | None] = field(default_factory=dict)
    median_seconds: dict[str, float | None] = field(default_factory=dict)
    adjudication: dict[str, float | int | None] = field(default_factory=dict)
    n_boot: int = 1000
    confidence: float = 0.95
    summary: str = ""
    n_paired_dialogues: int = 0
    randomization_unit: str | None = None  # annotator_dialogue | item | mixed; None: not known
    cluster_unit: str = CLUSTER_UNIT
    exposure: dict[str, int] = field(default_factory=dict)
    weighting: dict[str, Any] = field(default_factory=dict)

    @property
    def significant(self) -> bool:
        """The interval of ΔF1 lies above zero."""
        return self.delta_f1 is not None and self.delta_f1.ci_low > 0

    def to_dict(self) -> dict[str, Any]:
        def est(e):
            return None if e is None else e.to_dict()

        return {
            "run": self.run, "match": self.match, "threshold": self.threshold,
            "n_items": self.n_items, "n_paired_items": self.n_paired_items,
            "n_dialogues": self.n_dialogues, "n_paired_dialogues": self.n_paired_dialogues,
            "blind_gold": None if self.blind is None else self.blind.to_dict(),
            "aware_gold": None if self.aware is None else self.aware.to_dict(),
            "delta_f1": est(self.delta_f1), "delta_precision": est(self.delta_precision),
            "delta_recall": est(self.delta_recall), "flagged": self.flagged,
            "significant": self.significant,
            "agreement_by_condition": {k: v.to_dict()
                                       for k, v in self.agreement_by_condition.items()},
            "accept_without_edit": {k: _clean(v) if v is not None else None
                                    for k, v in self.accept_without_edit.items()},
            "median_seconds": dict(self.median_seconds),
            "adjudication": {k: (_clean(v) if isinstance(v, float) else v)
                             for k, v in self.adjudication.items()},
            "n_boot": self.n_boot, "confidence": self.confidence, "summary": self.summary,
            "randomization_unit": self.randomization_unit, "cluster_unit": self.cluster_unit,
            "exposure": dict(self.exposure), "weighting": dict(self.weighting),
        }

    def csv_rows(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []

        def add(name: str, e: Estimate | None, n: int | str = "") -> None:
            if e is not None:
                rows.append({"figure": name, **e.to_dict(), "n": n})

        for cond, sc in (("blind_gold", self.blind), ("aware_gold", self.aware)):
            if sc is not None:
                add(f"{cond}_precision", sc.precision, sc.n_pred)
                add(f"{cond}_recall", sc.recall, sc.n_gold)
                add(f"{cond}_f1", sc.f1, sc.n_gold)
        add("delta_f1", self.delta_f1, self.n_paired_items)
        add("delta_precision", self.delta_precision, self.n_paired_items)
        add("delta_recall", self.delta_recall, self.n_paired_items)
        for cond, e in self.agreement_by_condition.items():
            add(f"annotator_model_f1_{cond}", e)
        return rows


# --------------------------------------------------------------------------- gold per condition


def vote_gold(spans_by_annotator: Mapping[str, Sequence[Span]]) -> tuple[Span, ...]:
    """Gold from same-condition annotators: spans marked by at least half of them.

    A tie keeps the span (recall first: a doubtful span is kept, not leaked); overlapping
    survivors are resolved by votes, then length.
    """
    k = len(spans_by_annotator)
    votes: dict[tuple[int, int, str], int] = {}
    for spans in spans_by_annotator.values():
        for key in {s.key() for s in spans}:
            votes[key] = votes.get(key, 0) + 1
    kept = sorted((key for key, v in votes.items() if 2 * v >= k),
                  key=lambda key: (-votes[key], key[0] - key[1], key))
    chosen: list[Span] = []
    for key in kept:
        s = Span(*key)
        if not any(s.overlaps(c) for c in chosen):
            chosen.append(s)
    return tuple(sorted(chosen))


def condition_gold(item: AnnotatedItem, condition: str) -> tuple[Span, ...] | None:
    """The gold of ``item`` from its ``condition`` annotations only; None when it has none."""
    anns = {a: al.spans for a, al in item.annotations.items() if al.condition == condition}
    if not anns:
        return None
    if len(anns) == 1:
        return tuple(sorted(next(iter(anns.values()))))
    return vote_gold(anns)


# --------------------------------------------------------------------------- scoring


def _counts(pred: Sequence[Span], gold: Sequence[Span], match: str) -> tuple[int, int, int, int]:
    """``(n_pred, pred matched, n_gold, gold matched)``."""
    g_hit, p_hit = match_spans(list(gold), list(pred), match=match)
    return len(pred), p_hit, len(gold), g_hit


def _prf(n_pred, tp_pred, n_gold, tp_gold) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n_pred, tp_pred, n_gold, tp_gold = (np.asarray(x, float) for x in
                                        (n_pred, tp_pred, n_gold, tp_gold))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(n_pred > 0, tp_pred / n_pred, np.nan)
        r = np.where(n_gold > 0, tp_gold / n_gold, np.nan)
        f = np.where((p + r) > 0, 2 * p * r / (p + r), 0.0)
        f = np.where(np.isnan(p) | np.isnan(r), np.where(n_pred + n_gold > 0, 0.0, np.nan), f)
    return p, r, f


def _estimate(point: np.ndarray, boot: np.ndarray, confidence: float) -> Estimate:
    lo, hi = percentile_ci(np.asarray(boot).reshape(-1, 1), confidence)
    return Estimate(float(point), float(lo[0]), float(hi[0]))


@dataclass(frozen=True, slots=True)
class CircularityItem:
    """One item as the circularity check reads it: every annotator's decision, the run's spans
    on it, and the final gold when an adjudicator settled it (None when no one did)."""

    item: AnnotatedItem
    predictions: tuple[Span, ...] = ()
    adjudicated: tuple[Span, ...] | None = None


def with_predictions(items: Sequence[AnnotatedItem], predictions: Mapping[Key, Sequence[Span]],
                     adjudicated: Mapping[Key, Sequence[Span]] | None = None) -> Iterator[CircularityItem]:
    """Items held in memory joined to the run's spans and the adjudicated gold, both keyed by
    ``(dialogue_id, index)``, and put in the order :func:`circularity_report` reads: the items
    of a dialogue together, dialogues in the order they first appear."""
    adjudicated = adjudicated or {}
    first: dict[str, int] = {}
    for it in items:
        first.setdefault(it.dialogue_id, len(first))
    for it in sorted(items, key=lambda it: first[it.dialogue_id]):
        gold = adjudicated.get(it.key)
        yield CircularityItem(it, tuple(predictions.get(it.key, ())), None if gold is None else tuple(gold))


PAIRED_COLUMNS = 7  # pred, blind-matched pred, blind gold, blind gold matched, aware ×3
AGREE_COLUMNS = 4  # n_ann, ann matched, n_model, model matched


class _Tally:
    """What one pass over the items counts. The bootstrap needs counts per dialogue: a
    dialogue's are added in short lists while its items pass, then appended to flat arrays of
    doubles, so a million items leave a few numbers per dialogue, not the items. The
    items of a dialogue must come together (the exposure is counted per dialogue too)."""

    def __init__(self, match: str, weights: Mapping[Key, float]):
        self.match, self.weights = match, weights
        self.paired = array("d")
        self.agree = {c: array("d") for c in CONDITIONS}
        self.raw = [0] * PAIRED_COLUMNS  # unweighted span counts, for the "n" columns
        self.accepted = {c: [0, 0] for c in CONDITIONS}
        self.seconds = {c: array("d") for c in CONDITIONS}
        self.n_items = self.n_paired = self.n_paired_dialogues = self.n_weighted = 0
        self.favour = FavourTally()
        self.exposure = {"blind": 0, "exposed": 0, "mixed_clusters": 0, "clusters": 0}
        self.closed: set[str] = set()
        self._dialogue: str | None = None
        self._paired_row = self._agree_rows = self._conditions = None
        self._paired_items = 0

    @property
    def n_dialogues(self) -> int:
        return len(self.closed) + (self._dialogue is not None)

    def add(self, row: CircularityItem) -> None:
        it = row.item
        if it.dialogue_id != self._dialogue:
            self._close()
            if it.dialogue_id in self.closed:
                raise ValueError(f"The items of dialogue {it.dialogue_id!r} do not come together: "
                                 "the circularity check reads each dialogue's items in one run.")
            self._open(it.dialogue_id)
        self.n_items += 1
        wt = float(self.weights.get(it.key, 1.0))
        self.n_weighted += wt != 1.0
        self._add_annotations(it, wt, row.predictions)
        self._add_paired(it, wt, row.predictions)
        if row.adjudicated is not None:
            self.favour.add(SettledItem(annotations={a: al.spans for a, al in it.annotations.items()},
                                        model_spans=row.predictions, gold=row.adjudicated))

    def finish(self) -> None:
        self._close()

    def _open(self, dialogue: str) -> None:
        self._dialogue = dialogue
        self._paired_row, self._paired_items = [0.0] * PAIRED_COLUMNS, 0
        self._agree_rows = {c: [0.0] * AGREE_COLUMNS for c in CONDITIONS}
        self._conditions: list[tuple[str, str, str]] = []

    def _close(self) -> None:
        if self._dialogue is None:
            return
        self.paired.extend(self._paired_row)
        for c in CONDITIONS:
            self.agree[c].extend(self._agree_rows[c])
        self.n_paired_dialogues += self._paired_items > 0
        for key, n in cross_condition_exposure(self._conditions).items():
            self.exposure[key] += n
        self.closed.add(self._dialogue)
        self._dialogue = None

    def _add_annotations(self, it: AnnotatedItem, wt: float, pred: tuple[Span, ...]) -> None:
        """Annotator-model agreement per condition, accept-without-edit, time on task, exposure."""
        for a, al in it.annotations.items():
            self._conditions.append((a, it.dialogue_id, al.condition))
            if al.condition not in self._agree_rows:
                continue
            np_, pm, ng, gm = _counts(pred, al.spans, self.match)
            _add(self._agree_rows[al.condition], wt, (ng, gm, np_, pm))
            if pred:
                self.accepted[al.condition][1] += 1
                self.accepted[al.condition][0] += {s.key() for s in al.spans} == {s.key() for s in pred}
            if al.seconds is not None:
                self.seconds[al.condition].append(float(al.seconds))

    def _add_paired(self, it: AnnotatedItem, wt: float, pred: tuple[Span, ...]) -> None:
        """The paired comparison: items with both a blind and an aware gold."""
        gb, ga = condition_gold(it, BLIND), condition_gold(it, AWARE)
        if gb is None or ga is None:
            return
        self.n_paired += 1
        self._paired_items += 1
        np_, pb, ngb, gbm = _counts(pred, gb, self.match)
        _, pa, nga, gam = _counts(pred, ga, self.match)
        counts = (np_, pb, ngb, gbm, pa, nga, gam)
        _add(self._paired_row, wt, counts)
        _add(self.raw, 1, counts)


def _add(row: list, weight: float, counts: Sequence[int]) -> None:
    """``row += weight × counts``, in place."""
    for i, n in enumerate(counts):
        row[i] += weight * n


def _per_dialogue(values: array, width: int) -> np.ndarray:
    return np.frombuffer(values, dtype=np.float64).reshape(-1, width)


def _paired_scores(t: _Tally, w: Any, confidence: float) -> tuple:
    """Blind and aware scores and the aware − blind differences (P, R, F1); Nones without pairs."""
    if not t.n_paired:
        return None, None, None, None, None
    paired = _per_dialogue(t.paired, PAIRED_COLUMNS)
    pt, bt = paired.sum(0), resampled_sums(w, paired)
    res = {}
    for name, cols in (("blind", (0, 1, 2, 3)), ("aware", (0, 4, 5, 6))):
        res[name] = (_prf(*(pt[c] for c in cols)), _prf(*(bt[:, c] for c in cols)))
    blind, aware = (
        Scores(*(_estimate(res[n][0][i], res[n][1][i], confidence) for i in range(3)),
               n_pred=int(t.raw[0]), n_gold=int(t.raw[2] if n == "blind" else t.raw[5]))
        for n in ("blind", "aware")
    )
    delta_p, delta_r, delta_f1 = (
        _estimate(res["aware"][0][i] - res["blind"][0][i], res["aware"][1][i] - res["blind"][1][i], confidence)
        for i in range(3))
    return blind, aware, delta_p, delta_r, delta_f1


def _agreement_by_condition(t: _Tally, w: Any, confidence: float) -> dict[str, Estimate]:
    agreement = {}
    for c, rows in t.agree.items():
        arr = _per_dialogue(rows, AGREE_COLUMNS)
        if arr[:, 0].sum() + arr[:, 2].sum() == 0:
            continue
        pt, bt = arr.sum(0), resampled_sums(w, arr)
        agreement[c] = _estimate(_prf(pt[2], pt[3], pt[0], pt[1])[2],
                                 _prf(bt[:, 2], bt[:, 3], bt[:, 0], bt[:, 1])[2], confidence)
    return agreement


def _median(xs: array) -> float | None:
    return round(float(np.median(np.frombuffer(xs, dtype=np.float64))), 3) if len(xs) else None


def circularity_report(
    items: Iterable[CircularityItem],
    *,
    run: str = "",
    match: str = "exact",
    threshold: float = DEFAULT_THRESHOLD,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    weights: Mapping[Key, float] | None = None,
    randomization_unit: str | None = None,
) -> CircularityReport:
    """Score the run against blind-only and aware-only gold on the same items, and more.

    ``items`` carry the run's spans on each item and, where an adjudicator settled it, the final
    gold (to count decisions that went the model's way); they are read once, a dialogue's items
    together, and none is kept (:func:`with_predictions` builds them from items in memory).
    ``weights`` maps an item's key to ``1/p``, its sampling weight (absent: 1), which multiplies
    its counts in precision, recall and F1; ``randomization_unit`` is what the plans randomized.
    """
    t = _Tally(match, weights or {})
    for row in items:
        t.add(row)
    t.finish()
    w = bootstrap_weights(t.n_dialogues, n_boot, seed)
    blind, aware, delta_p, delta_r, delta_f1 = _paired_scores(t, w, confidence)
    flagged = delta_f1 is not None and delta_f1.ci_low > 0 and delta_f1.value > threshold
    report = CircularityReport(
        run=run, match=match, threshold=threshold, n_items=t.n_items,
        n_paired_items=t.n_paired, n_dialogues=t.n_dialogues, blind=blind, aware=aware,
        delta_f1=delta_f1, delta_precision=delta_p, delta_recall=delta_r, flagged=flagged,
        agreement_by_condition=_agreement_by_condition(t, w, confidence),
        accept_without_edit={c: (v[0] / v[1] if v[1] else None) for c, v in t.accepted.items()},
        median_seconds={c: _median(v) for c, v in t.seconds.items()},
        adjudication=t.favour.figures(), n_boot=n_boot, confidence=confidence,
        n_paired_dialogues=t.n_paired_dialogues, randomization_unit=randomization_unit,
        exposure=t.exposure,
        weighting={"weighted": t.n_weighted > 0, "items_weighted": t.n_weighted, "rule": WEIGHT_RULE},
    )
    report.summary = explain(report)
    return report


def explain(r: CircularityReport) -> str:
    """A plain-language paragraph on what the figures mean."""
    pct = f"{100 * r.confidence:.0f}%"
    if r.delta_f1 is None or r.blind is None or r.aware is None:
        return (
            f"No item was labelled both blind and aware ({r.n_items} items examined), so the "
            "inflation cannot be measured. Use the randomized visibility mode, which gives each "
            "item a blind and an aware annotator, and run the report again."
        )
    d = r.delta_f1
    parts = [
        f"On {r.n_paired_items} items labelled both blind and aware, the detector"
        f"{' ' + r.run if r.run else ''} scores F1 {r.aware.f1.value:.3f} against gold built "
        f"by annotators who saw its suggestions and {r.blind.f1.value:.3f} against gold built by "
        f"annotators who did not. The difference, {d.value:+.3f} ({pct} interval "
        f"{d.ci_low:+.3f} to {d.ci_high:+.3f}),",
    ]
    parts.append(_verdict(r))
    if r.n_paired_dialogues < MIN_DIALOGUES:
        parts.append(
            f" These items come from only {r.n_paired_dialogues} dialogue"
            f"{'' if r.n_paired_dialogues == 1 else 's'}; the interval resamples whole dialogues and "
            "is not trustworthy until more are labelled in randomized mode."
        )
    parts.append(_design(r))
    parts.extend(_behaviour(r))
    return " ".join(p.strip() if i else p for i, p in enumerate(parts) if p).replace("  ", " ")


def _verdict(r: CircularityReport) -> str:
    """How the measured difference stands against the threshold, and what to do about it."""
    d = r.delta_f1
    if r.flagged:
        return (
            f"exceeds the {r.threshold:.2f} threshold and its interval lies above zero: seeing the "
            "model's suggestions pulled the gold towards the model, so scores measured against "
            "aware gold overstate the detector. Report the blind-gold figures."
        )
    if d.value > r.threshold:
        return (
            f"exceeds the {r.threshold:.2f} threshold, but its interval reaches zero, so it is not "
            "flagged: the data do not yet show inflation with confidence; label more items in "
            "randomized mode before trusting aware-gold scores."
        )
    if d.ci_high > r.threshold:
        return (
            f"is below the {r.threshold:.2f} threshold, but the interval reaches above it, so an "
            "inflation of that size cannot be ruled out yet."
        )
    return (
        f"stays below the {r.threshold:.2f} threshold across its interval: no sign that the "
        "suggestions shaped the gold."
    )


def _behaviour(r: CircularityReport) -> list[str]:
    """Sentences on how annotators acted: kept suggestions, decision times, adjudication."""
    parts = []
    acc = r.accept_without_edit.get(AWARE)
    base = r.accept_without_edit.get(BLIND)
    if acc is not None:
        line = (f" Where the model suggested something, aware annotators kept its suggestions "
                f"exactly as they were {100 * acc:.0f}% of the time")
        if base is not None:
            line += (f", against {100 * base:.0f}% of blind annotators who arrived at exactly the "
                     "same spans on their own")
        parts.append(line + ".")
    ms_a, ms_b = r.median_seconds.get(AWARE), r.median_seconds.get(BLIND)
    if ms_a is not None and ms_b is not None:
        parts.append(f" Median decision time was {ms_a:.1f} s aware and {ms_b:.1f} s blind.")
    disputed = r.adjudication.get("disputed", 0)
    if disputed:
        parts.append(
            f" Of {disputed} disputed span{'' if disputed == 1 else 's'} settled by an adjudicator, "
            f"{r.adjudication['settled_for_model']} went the way the model had them."
        )
    return parts


def _design(r: CircularityReport) -> str:
    """What the plans randomized, what the interval resamples, exposure and weighting, in words."""
    unit = {"annotator_dialogue": "(annotator, dialogue): every message of a dialogue that one "
                                  "annotator labelled had one condition",
            "item": "each (annotator, message) on its own, under the old rule",
            "mixed": "partly (annotator, dialogue), partly each message on its own (older plans)",
            }.get(r.randomization_unit or "")
    out = []
    if unit:
        out.append(f"Conditions were randomized per {unit};")
    else:
        out.append("Conditions:")
    e = r.exposure
    out.append(
        f"{e.get('exposed', 0)} of {e.get('blind', 0)} blind annotations were made by annotators who "
        "saw the model's suggestions on another message of the same dialogue"
        + (" (measured: none)." if not e.get("exposed") else
           ", which pulls blind gold towards the model and biases the difference towards zero.")
    )
    out.append(f"Intervals resample whole {r.cluster_unit}s.")
    if r.weighting.get("weighted"):
        out.append(
            f"Scores are weighted by the sampling design ({r.weighting['items_weighted']} audit "
            "items weigh 1/r, the inverse of their audit rate; flagged items weigh 1).")
    else:
        out.append("Every item counts once (no item was sampled with a probability below 1).")
    return " ".join(out)
