"""Residual risk of a release: how much PII its spans miss, estimated from an audit sample.

A leak check can only look for originals that something detected, so on a release built from a
detector's spans it passes by construction. What it cannot see is estimated here from reviewed
messages: each has gold spans, and a gold span the release's spans do not cover is a *miss*.

Released messages fall into strata (``flagged``: the detector or plan flagged them, usually all
reviewed; ``unflagged``: an audit sample drawn at rate ``r``; or one stratum for a sample of whole
dialogues). Within a stratum the reviewed messages stand for its unreviewed ones: the point
estimate is the ratio estimator, misses per sampled message times the unreviewed messages.

The *sampling unit* is what the design drew: a whole dialogue (a dialogue sample, a gold file of
dialogues) or one message (an audit of unflagged messages drawn one by one). Misses cluster by
dialogue — one lesson's student is named forty times, most lessons never — so sampled messages of
one dialogue are not independent, and a bound that treats them so covers the truth in 72 % of
audits instead of 95 %. The upper bound here is a gamma–Poisson (negative-binomial) prediction
bound over dialogues: a dialogue of ``e`` messages hides Poisson misses at a rate that varies from
dialogue to dialogue as a gamma with shape ``k·e/ē`` (``ē`` the mean dialogue length), so the
sampled and the unreviewed misses are negative-binomial with a common odds, and given their sum
the sampled ones are beta-binomial with ``α = k·(sampled dialogues)``, ``β = k·(unreviewed
messages)/ē``, whatever the miss rate. The bound is the largest unreviewed total under which
finding as few as were found still has 5 % chance (an exact test, inverted). ``k`` is the
clustering: the smaller, the more misses crowd into few dialogues; it is the smaller of
:data:`ASSUMED_DISPERSION` (what "most dialogues clean, a few with many" means here) and the
moment estimate from the sampled dialogues, so a sample more clustered than assumed widens the
bound and a sample that looks less clustered never narrows it. Messages drawn one by one are
independent by design: there ``k`` is infinite and the test is binomial (the exact Poisson
prediction bound). Several open strata share the confidence (Bonferroni), so their bounds add up.

Too few reviewed: with ``α`` small, finding nothing is likely however many misses the rest holds
(one clean dialogue: ``α = 0.3``, and the bound is about ``20^(1/0.3) ≈ 22,000`` times ``β``),
so one dialogue bounds a release at millions per 1,000 messages: honest, and useless. A bound
wider than one miss per unreviewed message of its stratum (:data:`USABLE_PER_MESSAGE`) is not
stated and no upper number is kept: the estimate keeps its point value and says how many
dialogues (or messages) a bound needs (:func:`units_needed`: the smallest audit like this one —
dialogues as long, as clustered, misses at the same rate — whose bound is narrower). Every bound
stated is therefore within one miss per message.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from pipeline.types import Span

CONFIDENCE = 0.95
# Gamma shape of one average dialogue's miss rate: at k = 0.3 and one miss per dialogue on average,
# 64 % of dialogues hold none and one in ten holds four or more. The classroom measurement that
# motivated it (69 misses in 63 lessons, 24 of them in two) has k of about 0.35.
ASSUMED_DISPERSION = 0.3
# The widest bound stated: one residual miss per unreviewed message. A wider one cannot tell the
# release from one whose every message leaks, so it says nothing a reader can act on; it is also
# no count a release holds (names are a few in a hundred messages, not several in each). One clean
# dialogue of 120 in 1,396 messages bounds the rest at 44 misses per message: such an audit is too
# small, and the headline says how many units would state a bound instead.
USABLE_PER_MESSAGE = 1.0
METHOD = ("ratio estimator per stratum over the sampled units (dialogues, or messages drawn one by one); "
          "one-sided gamma-Poisson (negative-binomial) prediction bound over dialogues, exact given the "
          f"total (beta-binomial), clustering k = min({ASSUMED_DISPERSION}, the sample's moment estimate)")


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
    release's spans are gold where people reviewed, the source's elsewhere). ``units`` is the
    number of sampled dialogues (None: the sampled messages were drawn one by one), and
    ``clustered_sq`` sums, over them, a dialogue's would-be misses squared over its sampled
    messages (the between-dialogue variance's input; zero-miss dialogues add nothing).
    """

    name: str
    released: int
    sampled: int
    gold: int = 0
    missed: int = 0
    missed_if_unreviewed: int | None = None
    units: int | None = None
    clustered_sq: float = 0.0
    rate: float | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.sampled <= self.released:
            raise ValueError(f"stratum {self.name}: sampled must be between 0 and released")
        if not 0 <= self.missed <= self.gold:
            raise ValueError(f"stratum {self.name}: missed must be between 0 and gold")
        if self.units is not None and not (0 < self.units <= self.sampled or self.units == self.sampled == 0):
            raise ValueError(f"stratum {self.name}: units must be between 1 and sampled")

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
    def dispersion(self) -> float:
        """The clustering ``k`` the bound uses: infinite for messages drawn one by one, else the
        smaller of the assumed one and the sampled dialogues' moment estimate (Pearson's
        overdispersion ``φ = 1 + μ·ē/k`` of counts whose mean is ``μ`` per message)."""
        if self.units is None:
            return math.inf
        if self.x == 0 or self.units < 2:
            return ASSUMED_DISPERSION
        mu = self.x / self.sampled
        phi = (self.clustered_sq / mu - self.x) / (self.units - 1)
        if phi <= 1:
            return ASSUMED_DISPERSION
        return min(ASSUMED_DISPERSION, mu * (self.sampled / self.units) / (phi - 1))


@dataclass(frozen=True, slots=True)
class ResidualEstimate:
    available: bool
    sentence: str
    released: int
    sampled: int
    sampled_dialogues: int | None = None
    gold_found: int = 0
    missed_found: int = 0
    recall: float | None = None
    recall_lower: float | None = None
    residual_spans: float | None = None
    residual_spans_upper: float | None = None
    per_1000: float | None = None
    per_1000_upper: float | None = None
    needed: dict[str, int] | None = None
    census: bool = False
    confidence: float = CONFIDENCE
    method: str = METHOD
    strata: tuple[Stratum, ...] = ()

    def to_dict(self) -> dict:
        out = asdict(self)
        out["strata"] = [{**asdict(s), "rate": s.rate if s.rate is not None else
                          (round(s.sampled / s.released, 6) if s.released else None)} for s in self.strata]
        return out


def prediction_upper(stratum: Stratum, *, tail: float) -> int:
    """The largest number of misses the stratum's unreviewed messages may hide such that finding
    as few as the sample found still has probability above ``tail`` (one-sided, exact given the
    total: binomial for messages drawn one by one, beta-binomial for dialogues)."""
    return _upper(stratum.x, k=stratum.dispersion, released=stratum.released, sampled=stratum.sampled,
                  units=stratum.units, tail=tail)


def _upper(x: int, *, k: float, released: int, sampled: int, units: int | None, tail: float) -> int:
    from scipy.stats import betabinom, binom  # scikit-learn depends on scipy

    if math.isinf(k):
        share = sampled / released

        def below(t: int) -> float:
            return float(binom.cdf(x, x + t, share))
    else:
        a, b = k * units, k * (released - sampled) / (sampled / units)

        def below(t: int) -> float:
            return float(betabinom.cdf(x, x + t, a, b))
    lo, hi = 0, 1
    while below(hi) > tail:
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if below(mid) > tail else (lo, mid)
    return lo


def unusable(stratum: Stratum, upper: int) -> bool:
    """Whether a bound of ``upper`` misses in the stratum's unreviewed messages is too wide to state
    (more than :data:`USABLE_PER_MESSAGE` per unreviewed message)."""
    return upper > USABLE_PER_MESSAGE * stratum.unknown


def units_needed(stratum: Stratum, *, tail: float) -> int:
    """The fewest sampled units (dialogues as long as those sampled, or messages drawn one by one)
    whose audit would state this stratum's bound, if it found misses at the rate this one did
    (none, if it found none) and as clustered: a census at worst, which needs no bound."""
    k, units = stratum.dispersion, stratum.units
    length = stratum.sampled / units if units else 1.0
    per_unit = stratum.x / (units or stratum.sampled)

    def fails(n: int) -> bool:
        if round(n * length) >= stratum.released:
            return False
        like = Stratum(stratum.name, released=stratum.released, sampled=round(n * length), units=n if units else None)
        return unusable(like, _upper(round(per_unit * n), k=k, released=like.released, sampled=like.sampled,
                                     units=like.units, tail=tail))

    lo = units or stratum.sampled
    hi = 2 * lo
    while fails(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fails(mid) else (lo, mid)
    return hi


def headline(*, released: int, sampled: int, dialogues: int | None, found: int, missed: int, per_1000: float,
             per_1000_upper: float | None, census: bool, confidence: float,
             needed: dict[str, tuple[int, str]] | None = None) -> str:
    """The one sentence a release's residual risk is stated in (and acknowledged with): what the
    review found and what is left, per 1,000 released messages. No recall: "100 %" from a sample
    that found nothing reads as safety it does not show. ``found`` counts the misses the estimate
    rests on (what the unreviewed messages' spans miss on the reviewed ones), ``missed`` those
    the release itself still holds among the reviewed messages. ``needed`` (stratum → how many
    units, and which: dialogues or messages), when the review was too small to bound the
    residual: then no bound is printed, only how large an audit would state one."""
    if census:
        if not missed:
            return f"Every one of the {released:,} released messages was reviewed; none holds a miss."
        return (f"Every one of the {released:,} released messages was reviewed: {missed:,} gold PII span(s) are "
                f"not covered by the release's spans ({per_1000:.1f} per 1,000 released messages).")
    where = f"{sampled:,} reviewed messages" + (f" ({dialogues:,} dialogue{'s' if dialogues != 1 else ''})"
                                                 if dialogues else "")
    pct = f"{confidence:.0%}".replace("%", " %")
    if needed:
        what = " and ".join(f"{n:,} reviewed {unit}" + (f" in {name}" if len(needed) > 1 else "")
                            for name, (n, unit) in needed.items())
        need = f"a bound needs at least {what}" + (", if they find misses at the same rate." if found else ".")
        if not found:
            return f"None found in {where}, too few to bound the residual PII: {need}"
        return (f"{found:,} miss(es) found in {where}: about {per_1000:.1f} residual PII spans per 1,000 released "
                f"messages, too few reviewed to bound it: {need}")
    if not found:
        return f"None found in {where}; at most {per_1000_upper:.1f} per 1,000 released messages ({pct})."
    return (f"{found:,} miss(es) found in {where}: about {per_1000:.1f} residual PII spans per 1,000 released "
            f"messages, at most {per_1000_upper:.1f} ({pct}).")


def no_audit_sentence(blind: Sequence[Stratum]) -> str:
    """Why nothing can be estimated, and what would let it be: strata of released messages none of
    which was reviewed. Imported gold is its own stratum only where no plan with detector runs drew
    a released message, and needs no run to be checked: a plan of "a random sample of whole
    dialogues" draws its messages too (plans include messages already in gold), and the reviewed
    ones that carried it tell what it misses. A flagged + audit plan needs a run, and once one drew
    messages the strata are its flags, not the imported gold."""
    names = " and ".join(f"{s.released:,} {s.name}" for s in blind)
    advice = []
    if any(s.name == "imported gold" for s in blind):
        advice.append("to check the imported gold, plan a random sample of whole dialogues and review it: plans "
                      "draw messages already in gold too, and what reviewers add there is what the file's gold "
                      "missed")
    if any(s.name != "imported gold" for s in blind):
        advice.append("draw an audit sample of unflagged messages with a flagged + audit plan and review it")
    return (f"No audit sample to estimate from: none of the {names} released messages was reviewed, so the PII "
            f"the release's spans miss is unknown ({'; '.join(advice)}).")


def estimate_residual(strata: Sequence[Stratum], *, dialogues: int | None = None,
                      confidence: float = CONFIDENCE) -> ResidualEstimate:
    """Recall and residual PII per 1,000 released messages, with a one-sided upper bound;
    ``dialogues`` is how many dialogues the reviewed messages belong to (said in the headline).
    Where an open stratum's bound is too wide to use (:func:`unusable`), no bound is kept at all,
    only the point estimate and how many units a bound needs (:func:`units_needed`)."""
    strata = tuple(s for s in strata if s.released)
    released = sum(s.released for s in strata)
    sampled = sum(s.sampled for s in strata)
    gold, missed = sum(s.gold for s in strata), sum(s.missed for s in strata)
    base = {"released": released, "sampled": sampled, "sampled_dialogues": dialogues, "gold_found": gold,
            "missed_found": missed, "confidence": confidence, "strata": strata}
    if not released:
        return ResidualEstimate(available=False, sentence="Nothing was released.", **base)
    blind = [s for s in strata if not s.sampled]
    if blind:
        return ResidualEstimate(available=False, sentence=no_audit_sentence(blind), **base)
    open_ = [s for s in strata if s.unknown]
    y = sum(s.weight * s.x for s in open_)
    total_missed = missed + y
    total_gold = gold + sum(s.weight * s.gold for s in open_)
    tail = (1 - confidence) / max(len(open_), 1)  # Bonferroni: the strata's bounds add up
    recall = 1 - total_missed / total_gold if total_gold else None
    per = 1000 * total_missed / released
    found = sum(s.x if s.unknown else s.missed for s in strata)
    uppers = [prediction_upper(s, tail=tail) for s in open_]
    needed = {s.name: (units_needed(s, tail=tail), "messages" if s.units is None else "dialogues of this length")
              for s, up in zip(open_, uppers, strict=True) if unusable(s, up)}
    common = {"released": released, "sampled": sampled, "dialogues": dialogues, "found": found, "missed": missed,
              "per_1000": per, "census": not open_, "confidence": confidence}
    if needed:
        return ResidualEstimate(available=True, sentence=headline(per_1000_upper=None, needed=needed, **common),
                                recall=recall, residual_spans=total_missed, per_1000=per,
                                needed={name: n for name, (n, _) in needed.items()}, **base)
    upper = float(missed + sum(uppers))
    detected = total_gold - total_missed
    recall_lower = detected / (detected + upper) if detected + upper > 0 else None
    per_up = 1000 * upper / released
    return ResidualEstimate(available=True, sentence=headline(per_1000_upper=per_up, **common), recall=recall,
                            recall_lower=recall_lower, residual_spans=total_missed, residual_spans_upper=upper,
                            per_1000=per, per_1000_upper=per_up, census=not open_, **base)
