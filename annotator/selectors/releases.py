"""Reads for releases: the evidence behind a release and the audit sample its residual risk uses.

The sampling design comes from :func:`annotator.selectors.assignments.audit_sample_weights`, the one
reader of the plans' design (shared with the circularity and detector reports): a reviewed message
drawn by a plan is part of the random sample of its stratum; a reviewed message no plan drew
(a hand-made queue) is counted exactly but stands for nothing else. Gold imported from a file
is its own evidence: nobody reviewed it in Blindspot, so it counts as unreviewed, for the
acknowledgement and for the estimate alike, until people review it in the app.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from annotator.models import AdjudicationDecision, Assignment, GoldSpan, Prediction, Project
from annotator.selectors.assignments import SampleWeight, audit_sample_weights
from pipeline.metrics.residual import ResidualEstimate, Stratum, estimate_residual, uncovered
from pipeline.types import Span

CHUNK = 2000


def _chunks(ids: Sequence[int]):
    for i in range(0, len(ids), CHUNK):
        yield ids[i:i + CHUNK]


def _spans(queryset) -> dict[int, list[Span]]:
    out: dict[int, list[Span]] = defaultdict(list)
    for mid, s, e, lab in queryset.values_list("message_id", "start", "end", "label"):
        out[mid].append(Span(s, e, lab))
    return out


def release_evidence(*, project: Project, source: str, run_id: int | None,
                     message_ids: Sequence[int]) -> dict[str, Any]:
    """What a release's spans rest on (gold, and how much of it) and its residual-risk estimate."""
    ids = list(message_ids)
    decisions: Counter = Counter()
    reviewed: set[int] = set()
    imported: set[int] = set()
    imported_from: Counter = Counter()
    gold: dict[int, list[Span]] = {}
    released_spans: dict[int, list[Span]] = {}
    annotators: set[int] = set()
    done_per_message: Counter = Counter()
    for chunk in _chunks(ids):
        for mid, outcome, notes in (AdjudicationDecision.objects.filter(message_id__in=chunk)
                                    .values_list("message_id", "outcome", "notes")):
            decisions[outcome] += 1
            if outcome == AdjudicationDecision.Outcome.IMPORTED:
                imported.add(mid)
                imported_from[notes.removeprefix("imported from ").strip() or "a file"] += 1
            else:
                reviewed.add(mid)
        gold.update(_spans(GoldSpan.objects.filter(message_id__in=chunk)))
        if source == "run":
            released_spans.update(_spans(Prediction.objects.filter(run_id=run_id, message_id__in=chunk)))
        for mid, user in (Assignment.objects.filter(message_id__in=chunk, status=Assignment.Status.DONE)
                          .values_list("message_id", "annotator_id")):
            annotators.add(user)
            done_per_message[mid] += 1
    if source == "gold":  # messages in gold carry their gold spans; the others go out without any
        released_spans = {mid: gold.get(mid, []) for mid in reviewed | imported}
    design = audit_sample_weights(project)
    estimate = residual_estimate(ids=ids, reviewed=reviewed, gold=gold, released_spans=released_spans,
                                 design=design, gold_source=source == "gold")
    n, r = len(ids), len(reviewed)
    share = r / n if n else 0.0
    by_people = sum(done_per_message[m] > 0 for m in reviewed)
    per_message = (sum(done_per_message[m] for m in reviewed) / by_people) if by_people else 0.0
    unreviewed = source == "run" or r < n
    statement = _evidence_statement(source=source, run_id=run_id, n=n, r=r, share=share, annotators=len(annotators),
                                    per_message=per_message, decisions=decisions, imported=len(imported),
                                    imported_from=imported_from)
    return {
        "evidence": {
            "kind": source, "run": run_id, "unreviewed": unreviewed, "needs_acknowledgement": unreviewed,
            "messages": n, "reviewed_messages": r, "reviewed_share": round(share, 6),
            "decisions": dict(sorted(decisions.items())), "annotators": len(annotators),
            "imported_messages": len(imported), "imported_from": dict(imported_from.most_common(10)),
            "annotators_per_annotated_message": round(per_message, 3),
            "messages_drawn_by_plans": sum(1 for m in ids if m in design), "statement": statement,
        },
        "residual_risk": estimate.to_dict(),
    }


def _evidence_statement(*, source: str, run_id: int | None, n: int, r: int, share: float, annotators: int,
                        per_message: float, decisions: Counter, imported: int, imported_from: Counter) -> str:
    """The sentence a release's evidence is summed up in (``n`` messages released, ``r`` reviewed)."""
    files = ", ".join(name for name, _ in imported_from.most_common(3)) + (", …" if len(imported_from) > 3 else "")
    imported_note = (f" {imported:,} message(s) carry gold imported from {files}, not reviewed in Blindspot: "
                     "they count as unreviewed." if imported else "")
    if source == "run":
        statement = (f"Built from detector run #{run_id}: its spans are released unreviewed. "
                     f"{share:.0%} of the {n:,} released messages have gold to measure them against.")
    else:
        statement = (f"Built from gold: {share:.0%} of the {n:,} released messages reviewed"
                     + (f" by {annotators} annotator(s), {per_message:.1f} per message annotated"
                        if annotators else "")
                     + f" ({', '.join(f'{k} {v}' for k, v in sorted(decisions.items())) or 'no decisions'})"
                     + (f"; {n - r - imported:,} unreviewed message(s) go out without any span."
                        if r + imported < n else ".")
                     + imported_note)
    return statement.replace("%", " %")


def residual_estimate(*, ids: Sequence[int], reviewed: set[int], gold: dict[int, list[Span]],
                      released_spans: dict[int, list[Span]], design: Mapping[int, SampleWeight],
                      gold_source: bool) -> ResidualEstimate:
    """Strata of the released messages and their audit samples, then the pure estimate.

    Stratified by the plans' flags when a plan with detector runs drew any released message,
    otherwise by whether the release's own spans flag the message.
    """
    by_design = any(design[m].flagged is not None for m in ids if m in design)
    counts: dict[str, Counter] = defaultdict(Counter)
    rates: dict[str, list[float]] = defaultdict(list)
    for mid in ids:
        d = design.get(mid)
        if mid in reviewed and d is None:
            name = "reviewed outside a sampling plan"  # counted exactly, stands for nothing else
        elif by_design:
            name = "flagged" if d is not None and d.flagged else "unflagged"
        else:
            name = "flagged" if released_spans.get(mid) else "unflagged"
        c = counts[name]
        c["released"] += 1
        if mid not in reviewed:
            continue
        g = gold.get(mid, [])
        missed = len(uncovered(g, released_spans.get(mid, [])))
        would = len(g) if gold_source else missed  # an unreviewed message of a gold release has no spans
        c["sampled"] += 1
        c["gold"] += len(g)
        c["missed"] += missed
        c["would"] += would
        c["would_sq"] += would * would
        if d is not None:
            rates[name].append(d.inclusion_probability)
    strata = [
        Stratum(name, released=c["released"], sampled=c["sampled"], gold=c["gold"], missed=c["missed"],
                missed_if_unreviewed=c["would"], missed_sq=c["would_sq"],
                rate=round(sum(rates[name]) / len(rates[name]), 6) if rates[name] else None)
        for name, c in sorted(counts.items())
    ]
    return estimate_residual(strata)
