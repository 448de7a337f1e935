"""Reads for releases: the evidence behind a release and the audit sample its residual risk uses.

The sampling design comes from :func:`annotator.selectors.assignments.audit_sample_weights`, the one
reader of the plans' design (shared with the circularity and detector reports): a reviewed message
drawn by a plan is part of the random sample of its stratum; a reviewed message no plan drew
(a hand-made queue) is counted exactly but stands for nothing else. Gold imported from a file
is its own evidence: nobody reviewed it in Blindspot, so it counts as unreviewed for the
acknowledgement, and a gold release carries its spans there (never "no spans"): what those would
miss is estimated like a run's, from the reviewed messages, against the gold imported with them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any, NamedTuple

from annotator.models import (
    AdjudicationDecision,
    Assignment,
    GoldSpan,
    Message,
    Prediction,
    Project,
)
from annotator.selectors.assignments import SampleWeight, audit_sample_weights
from annotator.selectors.ordered import InOrder, spans_in_order
from pipeline.metrics.residual import ResidualEstimate, Stratum, estimate_residual, uncovered
from pipeline.types import Span

CHUNK = 2000


def _spans_by_message(rows) -> InOrder:
    """The spans of ``rows`` (gold spans or predictions) message by message, in message order."""
    by_message = ("message__dialogue_id", "message__position")
    return InOrder(spans_in_order(rows.order_by(*by_message).values_list(*by_message, "start", "end", "label")
                                  .iterator(chunk_size=CHUNK), 2))


def release_evidence(*, project: Project, source: str, run_id: int | None,
                     dialogue_pks: Collection[int]) -> dict[str, Any]:
    """What a release of these dialogues' messages rests on (gold, and how much of it) and its
    residual-risk estimate.

    One pass over the messages in dialogue order, merged with the decisions, the gold spans (or
    the run's), the finished assignments and the sampling design, each read in the same order as
    it comes (:mod:`annotator.selectors.ordered`): at a million messages, the messages' ids in
    lists of 2,000 took 49 s and held the gold of every message."""
    released = set(dialogue_pks)
    reads = _ordered_reads(project=project, source=source, run_id=run_id)
    tally, reviews = ResidualStrata(), _Reviews()
    messages = (Message.objects.filter(project=project).order_by("dialogue_id", "position")
                .values_list("dialogue_id", "position"))
    for order in messages.iterator(chunk_size=CHUNK):
        if order[0] not in released:
            continue
        outcome, notes = reads.decisions.pop(order, (None, ""))
        spans, weight = list(reads.gold.pop(order, ())), reads.design.pop(order)
        reviewed = reviews.add(outcome=outcome, notes=notes, users=reads.done.pop(order, ()), drawn=weight is not None)
        # a gold release: messages in gold carry their gold spans; the others go out without any.
        # A run's: its spans, except where people reviewed (there gold: what they found is fixed)
        run_spans = list(reads.predicted.pop(order, ()))
        if source == "run":
            out, unreviewed_out = (spans if reviewed else run_spans), run_spans
        else:
            out, unreviewed_out = (spans if outcome is not None else []), list(reads.carried.pop(order, ()))
        tally.add(dialogue=order[0], reviewed=reviewed, gold=spans, released=out, unreviewed=unreviewed_out,
                  imported=source == "gold" and (outcome == AdjudicationDecision.Outcome.IMPORTED
                                                 or notes.startswith("imported from") or bool(unreviewed_out)),
                  design=weight)
    return {"evidence": reviews.evidence(source=source, run_id=run_id, released=tally.released,
                                         reviewed=tally.reviewed),
            "residual_risk": tally.estimate().to_dict()}


class _OrderedReads(NamedTuple):
    """Everything the evidence merges with the messages, each by (dialogue, position) in message order."""

    decisions: InOrder  # (outcome, notes) of each decided message
    gold: InOrder  # its gold spans
    carried: InOrder  # a gold release's: the gold imported with it, which it carries until reviewed
    predicted: InOrder  # a run's release: the run's spans
    done: InOrder  # who finished an assignment on it
    design: InOrder  # the plans' sampling design for it


def _ordered_reads(*, project: Project, source: str, run_id: int | None) -> _OrderedReads:
    by_message = ("message__dialogue_id", "message__position")
    return _OrderedReads(
        decisions=InOrder(((d, p), (outcome, notes)) for d, p, outcome, notes in (
            AdjudicationDecision.objects.filter(message__project=project).order_by(*by_message)
            .values_list(*by_message, "outcome", "notes").iterator(chunk_size=CHUNK))),
        gold=_spans_by_message(GoldSpan.objects.filter(message__project=project)),
        carried=_spans_by_message(GoldSpan.objects.filter(
            message__project=project, provenance=AdjudicationDecision.Outcome.IMPORTED))
        if source == "gold" else InOrder(()),
        predicted=_spans_by_message(Prediction.objects.filter(run_id=run_id)) if source == "run" else InOrder(()),
        done=InOrder((order, [user for *_, user in rows]) for order, rows in groupby(
            Assignment.objects.filter(project=project, status=Assignment.Status.DONE).order_by(*by_message)
            .values_list(*by_message, "annotator_id").iterator(chunk_size=CHUNK), key=lambda r: r[:2])),
        design=InOrder(audit_sample_weights(project)),
    )


@dataclass
class _Reviews:
    """How the released messages were reviewed, counted one message at a time: the decisions,
    the gold imported from files, the annotators, and the messages the plans drew."""

    decided: Counter = field(default_factory=Counter)
    imported_from: Counter = field(default_factory=Counter)
    annotators: set[int] = field(default_factory=set)
    imported: int = 0
    by_people: int = 0
    annotations: int = 0
    drawn: int = 0

    def add(self, *, outcome: str | None, notes: str, users: Collection[int], drawn: bool) -> bool:
        """One released message; whether people reviewed it (gold imported from a file is not)."""
        self.annotators.update(users)
        reviewed = outcome is not None and outcome != AdjudicationDecision.Outcome.IMPORTED
        if outcome is not None:
            self.decided[outcome] += 1
        if outcome == AdjudicationDecision.Outcome.IMPORTED:
            self.imported += 1
            self.imported_from[notes.removeprefix("imported from ").strip() or "a file"] += 1
        if reviewed and users:
            self.by_people += 1
            self.annotations += len(users)
        self.drawn += drawn
        return reviewed

    def evidence(self, *, source: str, run_id: int | None, released: int, reviewed: int) -> dict[str, Any]:
        """The evidence block of a release of ``released`` messages, ``reviewed`` of them by people."""
        n, r = released, reviewed
        share = r / n if n else 0.0
        per_message = self.annotations / self.by_people if self.by_people else 0.0
        unreviewed = r < n  # a run's reviewed messages go out with their gold: all reviewed, nothing is unreviewed
        statement = _evidence_statement(source=source, run_id=run_id, n=n, r=r, share=share,
                                        annotators=len(self.annotators), per_message=per_message,
                                        decisions=self.decided, imported=self.imported,
                                        imported_from=self.imported_from)
        return {
            "kind": source, "run": run_id, "unreviewed": unreviewed, "needs_acknowledgement": unreviewed,
            "messages": n, "reviewed_messages": r, "reviewed_share": round(share, 6),
            "decisions": dict(sorted(self.decided.items())), "annotators": len(self.annotators),
            "imported_messages": self.imported, "imported_from": dict(self.imported_from.most_common(10)),
            "annotators_per_annotated_message": round(per_message, 3),
            "messages_drawn_by_plans": self.drawn, "statement": statement,
        }


def _evidence_statement(*, source: str, run_id: int | None, n: int, r: int, share: float, annotators: int,
                        per_message: float, decisions: Counter, imported: int, imported_from: Counter) -> str:
    """The sentence a release's evidence is summed up in (``n`` messages released, ``r`` reviewed)."""
    files = ", ".join(name for name, _ in imported_from.most_common(3)) + (", …" if len(imported_from) > 3 else "")
    imported_note = (f" {imported:,} message(s) carry gold imported from {files}, not reviewed in Blindspot: "
                     "they count as unreviewed." if imported else "")
    if source == "run":
        statement = (f"Built from detector run #{run_id}: {r:,} of the {n:,} released messages ({share:.0%}) "
                     "were reviewed and go out with their gold spans; the run's spans go out unreviewed on the "
                     f"other {n - r:,}.")
    else:
        statement = (f"Built from gold: {share:.0%} of the {n:,} released messages reviewed"
                     + (f" by {annotators} annotator(s), {per_message:.1f} per message annotated"
                        if annotators else "")
                     + f" ({', '.join(f'{k} {v}' for k, v in sorted(decisions.items())) or 'no decisions'})"
                     + (f"; {n - r - imported:,} unreviewed message(s) go out without any span."
                        if r + imported < n else ".")
                     + imported_note)
    return statement.replace("%", " %")


class ResidualStrata:
    """The released messages' strata and their audit samples, counted one message at a time, then
    the pure estimate (:func:`pipeline.metrics.residual.estimate_residual`). The app's, by the
    plans' sampling design; ``manage.py deidentify --gold`` counts against a gold file with
    :class:`pipeline.surrogates.batch.ResidualTally`.

    Stratified by the plans' flags when a plan with detector runs drew any released message,
    otherwise one stratum of every released message: both are counted as messages come, and
    :meth:`estimate` takes the one that applies. The sampled unit is what the plans drew: a plan
    with detector runs draws its audit message by message (the message is the unit); a plan
    without draws whole dialogues (a dialogue sample, or a census), so a stratum any of whose
    sample came that way counts its misses per dialogue (:attr:`Stratum.units`)."""

    def __init__(self) -> None:
        self.by_design = False
        self.dialogues = 0
        self.released = self.reviewed = 0
        self.counts: dict[bool, dict[str, Counter]] = {True: defaultdict(Counter), False: defaultdict(Counter)}
        self.rates: dict[bool, dict[str, list[float]]] = {True: defaultdict(lambda: [0.0, 0]),
                                                          False: defaultdict(lambda: [0.0, 0])}
        self.dialogue: int | None = None
        self.in_dialogue: dict[tuple[bool, str], list[int]] = defaultdict(lambda: [0, 0])

    def add(self, *, dialogue: int, reviewed: bool, gold: list[Span], released: list[Span],
            unreviewed: list[Span], imported: bool, design: SampleWeight | None) -> None:
        """One released message (in dialogue order): its dialogue, whether people reviewed it, its
        gold spans, the release's spans, the spans it would carry had nobody reviewed it (a run's:
        the same; a gold release's: the gold imported with it, or none), whether it carries (or
        carried) imported gold, and the plans' design for it (None: no plan drew it)."""
        if dialogue != self.dialogue:
            self._close_dialogue()
            self.dialogue = dialogue
        self.released += 1
        self.reviewed += reviewed
        self.by_design = self.by_design or (design is not None and design.flagged is not None)
        missed = len(uncovered(gold, released)) if reviewed else 0
        would = len(uncovered(gold, unreviewed)) if reviewed else 0
        for by_design in (True, False):
            name = self._stratum(by_design=by_design, reviewed=reviewed, imported=imported, design=design)
            c = self.counts[by_design][name]
            c["released"] += 1
            if not reviewed:
                continue
            c["sampled"] += 1
            c["gold"] += len(gold)
            c["missed"] += missed
            c["would"] += would
            c["by_dialogue"] += design is None or design.flagged is None
            here = self.in_dialogue[(by_design, name)]
            here[0] += would
            here[1] += 1
            if design is not None:
                rate = self.rates[by_design][name]
                rate[0] += design.inclusion_probability
                rate[1] += 1

    @staticmethod
    def _stratum(*, by_design: bool, reviewed: bool, imported: bool, design: SampleWeight | None) -> str:
        """Imported gold is a stratum of its own: only reviewed messages that carried it tell what
        it misses (a dialogue sample of the corpus without gold stands for that corpus only)."""
        if reviewed and design is None:
            return "reviewed outside a sampling plan"  # counted exactly, stands for nothing else
        if by_design:
            return "flagged" if design is not None and design.flagged else "unflagged"
        return "imported gold" if imported else "released"

    def _close_dialogue(self) -> None:
        """The finished dialogue's sampled misses, per stratum: one unit of the between-dialogue variance."""
        self.dialogues += bool(self.in_dialogue)
        for (by_design, name), (would, sampled) in self.in_dialogue.items():
            c = self.counts[by_design][name]
            c["units"] += 1
            c["clustered_sq"] += would * would / sampled
        self.in_dialogue.clear()

    def estimate(self) -> ResidualEstimate:
        self._close_dialogue()
        counts, rates = self.counts[self.by_design], self.rates[self.by_design]
        return estimate_residual([
            Stratum(name, released=c["released"], sampled=c["sampled"], gold=c["gold"], missed=c["missed"],
                    missed_if_unreviewed=c["would"], units=c["units"] if c["by_dialogue"] else None,
                    clustered_sq=c["clustered_sq"],
                    rate=round(rates[name][0] / rates[name][1], 6) if rates[name][1] else None)
            for name, c in sorted(counts.items())], dialogues=self.dialogues)
