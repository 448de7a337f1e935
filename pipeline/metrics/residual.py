"""Residual risk of a release: how much PII its spans miss, estimated from an audit sample.

A leak check can only look for originals that something detected, so on a release built from a
detector's spans it passes by construction. What it cannot see is estimated here from reviewed
messages: each has gold spans, and a gold span the release's spans do not cover is a *miss*.

Released messages fall into strata (``flagged``: the detector or plan flagged them, usually all
reviewed; ``unflagged``: an audit sample drawn at rate ``r``). Within a stratum the reviewed
messages drawn at random stand for its unreviewed ones, i.e. each weighs ``1/r`` in all (itself,
counted exactly, plus ``1/r - 1`` unreviewed messages). The one-sided upper bound on the
unreviewed messages' misses is the gamma bound of Fay & Feuer (1997) for a weighted sum of counts:
misses are counts (one message can hide three names), and for one stratum it is exactly the
Poisson (Garwood) bound, the count analogue of Clopper-Pearson — "0 found in 400" gives
``-ln(0.05) / 400``, 7.5 per 1,000, where Clopper-Pearson gives 7.46. Squared misses per message
enter its variance, so clustered misses widen the bound instead of being assumed away.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from pipeline.types import Span

CONFIDENCE = 0.95
METHOD = ("stratified by flagged / unflagged, weighted by 1/sampling rate; one-sided gamma "
          "(Fay-Feuer) upper bound, the exact Poisson bound for one stratum")


def uncovered(gold: Iterable[Span], spans: Iterable[Span]) -> list[Span]:
    """Gold spans whose characters the ``spans`` (any label) do not cover entirely: the misses."""
    intervals = sorted((s.start, s.end) for s in spans)
    merged: list[list[int]] = []
    for a, b in intervals:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [g for g in gold if not any(a <= g.start and g.end <= b for a, b in merged)]


@dataclass(frozen=True, slots=True)
class Stratum:
    """Released messages of one stratum and the reviewed messages drawn from it at random.

    ``missed`` counts what the release's own spans miss in the sampled messages (exact);
    ``missed_if_unreviewed`` what an unreviewed message's spans would have missed on them (a
    release from gold gives unreviewed messages no spans at all); ``missed_sq`` sums that per
    message, squared (defaults assume at most one miss per message).
    """

    name: str
    released: int
    sampled: int
    gold: int = 0
    missed: int = 0
    missed_if_unreviewed: int | None = None
    missed_sq: int | None = None
    rate: float | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.sampled <= self.released:
            raise ValueError(f"stratum {self.name}: sampled must be between 0 and released")
        if not 0 <= self.missed <= self.gold:
            raise ValueError(f"stratum {self.name}: missed must be between 0 and gold")

    @property
    def unknown(self) -> int:
        """Released messages not reviewed, whose misses are estimated."""
        return self.released - self.sampled

    @property
    def weight(self) -> float:
        """How many unreviewed messages each sampled one stands for."""
        return self.unknown / self.sampled if self.sampled else math.inf

    @property
    def x(self) -> int:
        return self.missed if self.missed_if_unreviewed is None else self.missed_if_unreviewed

    @property
    def x_sq(self) -> int:
        return self.x if self.missed_sq is None else self.missed_sq


@dataclass(frozen=True, slots=True)
class ResidualEstimate:
    available: bool
    sentence: str
    released: int
    sampled: int
    gold_found: int = 0
    missed_found: int = 0
    recall: float | None = None
    recall_lower: float | None = None
    residual_spans: float | None = None
    residual_spans_upper: float | None = None
    per_1000: float | None = None
    per_1000_upper: float | None = None
    census: bool = False
    confidence: float = CONFIDENCE
    method: str = METHOD
    strata: tuple[Stratum, ...] = ()

    def to_dict(self) -> dict:
        out = asdict(self)
        out["strata"] = [{**asdict(s), "rate": s.rate if s.rate is not None else
                          (round(s.sampled / s.released, 6) if s.released else None)} for s in self.strata]
        return out


def gamma_upper(y: float, v: float, w_max: float, *, confidence: float = CONFIDENCE) -> float:
    """One-sided upper bound of a weighted sum of counts ``y`` with variance ``v`` (Fay-Feuer)."""
    from scipy.stats import gamma  # scikit-learn depends on scipy

    a, b = y + w_max, v + w_max**2
    return float(gamma.ppf(confidence, a * a / b, scale=b / a))


def estimate_residual(strata: Sequence[Stratum], *, confidence: float = CONFIDENCE) -> ResidualEstimate:
    """Recall and residual PII per 1,000 released messages, with a one-sided upper bound."""
    strata = tuple(s for s in strata if s.released)
    released = sum(s.released for s in strata)
    sampled = sum(s.sampled for s in strata)
    gold, missed = sum(s.gold for s in strata), sum(s.missed for s in strata)
    base = {"released": released, "sampled": sampled, "gold_found": gold, "missed_found": missed,
            "confidence": confidence, "strata": strata}
    if not released:
        return ResidualEstimate(available=False, sentence="Nothing was released.", **base)
    blind = [s for s in strata if not s.sampled]
    if blind:
        names = " and ".join(f"{s.released:,} {s.name}" for s in blind)
        return ResidualEstimate(available=False, sentence=(
            f"No audit sample to estimate from: none of the {names} released messages was reviewed, "
            "so the PII the release's spans miss is unknown (draw an audit sample of unflagged "
            "messages with a flagged + audit plan and review it)."), **base)
    open_ = [s for s in strata if s.unknown]
    y = sum(s.weight * s.x for s in open_)
    total_missed = missed + y
    total_gold = gold + sum(s.weight * s.gold for s in open_)
    if open_:
        v = sum(s.weight**2 * s.x_sq for s in open_)
        upper = missed + gamma_upper(y, v, max(s.weight for s in open_), confidence=confidence)
    else:
        upper = float(missed)
    recall = 1 - total_missed / total_gold if total_gold else None
    detected = total_gold - total_missed
    recall_lower = detected / (detected + upper) if detected + upper > 0 else None
    per, per_up = 1000 * total_missed / released, 1000 * upper / released
    pct = f"{confidence:.0%}".replace("%", " %")
    recall_txt = f"estimated recall {recall:.1%}" if recall is not None else "no gold PII found in the sample"
    if not open_:
        sentence = (f"Every one of the {released:,} released messages was reviewed: {missed} gold PII span(s) "
                    f"are not covered by the release's spans ({per:.1f} per 1,000 messages; {recall_txt}).")
    else:
        sentence = (f"Estimated from {sampled:,} reviewed messages of {released:,} released ({missed} miss(es) "
                    f"found): about {per:.1f} residual PII spans per 1,000 released messages, at most "
                    f"{per_up:.1f} ({pct} upper bound); {recall_txt}.")
    return ResidualEstimate(available=True, sentence=sentence, recall=recall, recall_lower=recall_lower,
                            residual_spans=total_missed, residual_spans_upper=upper, per_1000=per,
                            per_1000_upper=per_up, census=not open_, **base)
