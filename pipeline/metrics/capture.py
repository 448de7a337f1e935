"""What every detector missed: capture–recapture over two independent sources of spans.

Two sources (gold and a detector, or two detectors) look at the same messages. A mention found by
both is a *recapture*; how often the second source recaptures what the first found tells how
much of the whole both see, hence how many mentions neither saw. With ``n1`` and ``n2`` mentions
found by each and ``m`` by both, Chapman's bias-corrected estimator of all mentions is

    N̂ = (n1 + 1)(n2 + 1) / (m + 1) − 1,

and the mentions both missed are ``f0 = N̂ − (n1 + n2 − m)``. Its variance is Seber's for
Chapman's estimator, ``(n1+1)(n2+1)(n1−m)(n2−m) / ((m+1)²(m+2))``; the interval is Chao's (1987)
log-normal one for ``f0``, so it never goes below what was seen:
``[r + f0/C, r + f0·C]`` with ``r = n1 + n2 − m`` and ``C = exp(z·sqrt(ln(1 + var/f0²)))``.

**Assumption, stated plainly:** the two sources miss mentions *independently* (a mention one
misses is no likelier to be missed by the other). Detectors trained on the same kind of data,
or a gold set seeded by the very detector it is compared to, share blind spots; then recaptures
are too frequent and the estimate is *too low*. Read it as a lower bound on what both miss.

Matching: a span of one source and a span of the other are the same mention when they overlap
and carry the same label (each span is matched at most once, greedily by position). A span that
matches nothing counts as a mention the other source missed — a false positive too, which makes
the estimate larger, never smaller. So it is no check of a release against gold: gold is the
reference, and the release's false positives are not mentions that gold missed.

It is a *secondary* check: its own denominator (the messages both sources read, not the released
ones) and its own assumption; a release's headline is the residual-risk estimate
(:mod:`pipeline.metrics.residual`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.types import Span

Z95 = 1.959964
ASSUMPTION = ("Capture-recapture assumes the two sources miss mentions independently; sources that "
              "share blind spots (one trained on or seeded by the other) make it an underestimate.")


@dataclass(frozen=True, slots=True)
class Chapman:
    """One capture–recapture estimate: counts in, mentions both missed with a 95 % interval out."""

    n1: int
    n2: int
    m: int
    z: float = Z95

    @property
    def seen(self) -> int:
        return self.n1 + self.n2 - self.m

    @property
    def total(self) -> float:
        return (self.n1 + 1) * (self.n2 + 1) / (self.m + 1) - 1

    @property
    def missed(self) -> float:
        return max(self.total - self.seen, 0.0)

    @property
    def variance(self) -> float:
        n1, n2, m = self.n1, self.n2, self.m
        return (n1 + 1) * (n2 + 1) * (n1 - m) * (n2 - m) / ((m + 1) ** 2 * (m + 2))

    def interval(self) -> tuple[float, float]:
        """Chao's log-normal interval for the total (never below what was seen)."""
        f0 = self.missed
        if f0 <= 0:
            return float(self.seen), float(self.seen)
        c = math.exp(self.z * math.sqrt(math.log(1 + self.variance / f0**2)))
        return self.seen + f0 / c, self.seen + f0 * c

    def to_dict(self) -> dict[str, Any]:
        lo, hi = self.interval()
        return {
            "first": self.n1,
            "second": self.n2,
            "both": self.m,
            "seen": self.seen,
            "estimated_total": round(self.total, 2),
            "estimated_missed_by_both": round(self.missed, 2),
            "missed_ci95": [round(lo - self.seen, 2), round(hi - self.seen, 2)],
            "total_ci95": [round(lo, 2), round(hi, 2)],
            # no recapture: the sources never agree, and the estimate says nothing
            "reliable": self.m > 0,
        }


def match_count(first: Sequence[Span], second: Sequence[Span]) -> Counter:
    """Recaptures per label between two span lists of one message (overlap and same label)."""
    used: set[int] = set()
    found: Counter = Counter()
    for a in sorted(first):
        for j, b in enumerate(sorted(second)):
            if j not in used and a.label == b.label and a.overlaps(b):
                used.add(j)
                found[a.label] += 1
                break
    return found


class CaptureTally:
    """Accumulate two sources over the same messages; :meth:`to_dict` is the estimate.

    ``names`` say what the two sources are (shown with the estimate); ``labels``, when given,
    restricts both sources to the labels the narrower one can find at all (a rules detector finds
    no names, so names would look "missed by the detector" by construction).
    """

    def __init__(self, names: tuple[str, str], *, labels: Iterable[str] | None = None) -> None:
        self.names = names
        self.labels = frozenset(labels) if labels is not None else None
        self.first: Counter = Counter()
        self.second: Counter = Counter()
        self.both: Counter = Counter()
        self.messages = 0

    def add(self, first: Sequence[Span], second: Sequence[Span]) -> None:
        """The two sources' spans of one message (offsets into the same text)."""
        if self.labels is not None:
            first = [s for s in first if s.label in self.labels]
            second = [s for s in second if s.label in self.labels]
        self.messages += 1
        self.first.update(s.label for s in first)
        self.second.update(s.label for s in second)
        self.both.update(match_count(first, second))

    def counts(self) -> dict[str, Any]:
        """The tally so far as plain JSON (what :meth:`merge` adds to another tally)."""
        return {"first": dict(self.first), "second": dict(self.second), "both": dict(self.both),
                "messages": self.messages}

    def merge(self, counts: dict[str, Any]) -> None:
        """Add a tally of other messages (:meth:`counts`): tallies of slices of a corpus, merged,
        are the tally of the whole."""
        self.first.update(counts["first"])
        self.second.update(counts["second"])
        self.both.update(counts["both"])
        self.messages += counts["messages"]

    def to_dict(self) -> dict[str, Any]:
        labels = sorted(set(self.first) | set(self.second))
        overall = Chapman(sum(self.first.values()), sum(self.second.values()), sum(self.both.values()))
        est = overall.to_dict()
        per_1k = (lambda x: round(1000 * x / self.messages, 3)) if self.messages else (lambda x: 0.0)
        return {
            "available": True,
            "sources": list(self.names),
            "messages": self.messages,
            "secondary": True,
            "denominator": "messages both sources read",
            "matching": ("same label and overlapping spans; a span the other source does not match counts as "
                         "a mention it missed, a false positive too (the estimate errs high)"),
            "method": "Chapman's estimator; Chao (1987) log-normal 95 % interval",
            "overall": est,
            "missed_per_1000_messages": per_1k(overall.missed),
            "missed_per_1000_messages_ci95": [per_1k(x) for x in est["missed_ci95"]],
            "by_label": {lab: Chapman(self.first[lab], self.second[lab], self.both[lab]).to_dict()
                         for lab in labels},
            "assumes": ASSUMPTION,
            "sentence": self.sentence(overall),
        }

    def sentence(self, est: Chapman) -> str:
        lo, hi = est.interval()
        a, b = self.names
        check = f"Secondary check (capture-recapture, {a} against {b}, over the {self.messages:,} messages both read): "
        if not est.m:
            return check + "no mention in common, so it cannot estimate what both missed."
        return (check + f"{est.seen:,} mentions found ({est.m:,} by both); an estimated {est.missed:,.1f} more "
                f"(95 % CI {lo - est.seen:,.1f} to {hi - est.seen:,.1f}) missed by both, assuming they miss "
                "independently.")


def capture_recapture(
    pairs: Iterable[tuple[Sequence[Span], Sequence[Span]]],
    *,
    names: tuple[str, str] = ("first source", "second source"),
    labels: Iterable[str] | None = None,
) -> dict[str, Any]:
    """The estimate from ``(first spans, second spans)`` per message (the Django side's entry point)."""
    tally = CaptureTally(names, labels=labels)
    for first, second in pairs:
        tally.add(first, second)
    return tally.to_dict()
