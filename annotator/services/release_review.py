"""The release review: recording what a build's self-audit left, and people's verdicts on it.

A build writes its candidates to the private directory (:mod:`pipeline.surrogates.audit`);
:func:`candidates_record` turns them into the release's queue. A reviewer's verdict
(:func:`candidate_decide`) is a :class:`~annotator.models.CandidateDecision` of the project,
keyed by the candidate's fingerprint, so it settles the same place in every release that finds
it, this one and later ones:

- *confirm* (it is PII): a gold span, audited (provenance ``audited``), on a message in the gold
  set; every later build adds the span whatever its source, so the release that asked is stale
  and must be rebuilt before it can be published;
- *dismiss* (not PII): recorded, and no later build asks again.

A kept bare number (:data:`~pipeline.surrogates.candidates.NUMBER_REASONS`) is confirmed only with
the label the reviewer chose for it. A reviewer takes back their last verdicts one by one
(:func:`candidate_undo`, audited): the place waits again, and no later build obeys the verdict.
Skipping is the reviewer's own: :func:`candidate_skip` keeps the skipped candidates in their
session, per release, so a reload does not bring them back first.

Two reviewers deciding the same candidate at once: the first wins, the second is told
(:class:`ReviewConflict`), never silently overwritten.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from django.db import transaction

from annotator.models import (
    AdjudicationDecision,
    CandidateDecision,
    Export,
    GoldSpan,
    Message,
    ReleaseCandidate,
)
from annotator.selectors.release_review import candidate_text, last_verdict, skipped_key
from annotator.services.audit import audit_record
from pipeline.surrogates.candidates import NUMBER_REASONS, Candidate

BATCH = 2000
Verdict = CandidateDecision.Verdict
Status = ReleaseCandidate.Status


class ReviewError(ValueError):
    """A verdict that cannot be recorded as asked; the message is for the reviewer."""


class ReviewConflict(ReviewError):
    """Somebody else decided the candidate first."""


def _read(path: Path) -> Iterable[Candidate]:
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield Candidate.from_dict(json.loads(line))


def candidates_record(export: Export, path: Path, dialogue_pks: dict[str, int]) -> dict[str, int]:
    """The release's review queue from its private candidates file (replacing any rows an earlier
    try of the same build wrote, so a redelivered build is idempotent). ``dialogue_pks`` maps the
    released dialogues' ids to their rows. A candidate outside the messages (the word problem) has
    no message to review it on and is counted as ``outside_messages``."""
    rows: list[ReleaseCandidate] = []
    outside = 0
    wanted: dict[tuple[int, int], list[Candidate]] = {}
    for c in _read(path):
        if (c.index < 0 and not c.field) or c.dialogue_id not in dialogue_pks:
            outside += 1
            continue
        # a place outside the messages (the anchor, a metadata value) is reviewed on the first message
        wanted.setdefault((dialogue_pks[c.dialogue_id], 0 if c.field else c.index), []).append(c)
    keys = list(wanted)
    with transaction.atomic():
        export.candidates.all().delete()
        for i in range(0, len(keys), BATCH):
            chunk = keys[i:i + BATCH]
            dialogue_ids = {d for d, _ in chunk}
            for pk, did, pos in (Message.objects.filter(dialogue_id__in=dialogue_ids)
                                 .values_list("pk", "dialogue_id", "position")):
                for c in wanted.get((did, pos), ()):
                    rows.append(ReleaseCandidate(export=export, message_id=pk, start=c.start, end=c.end,
                                                 label=c.label, key=c.key, reason=c.reason, source=c.source[:120],
                                                 field=c.field))
            ReleaseCandidate.objects.bulk_create(rows, batch_size=BATCH, ignore_conflicts=True)
            rows = []
    return {"recorded": sum(len(v) for v in wanted.values()), "outside_messages": outside}


def candidate_decide(*, candidate_id: int, export: Export, user, verdict: str, label: str | None = None,
                     ) -> ReleaseCandidate:
    """Record ``verdict`` (confirmed / dismissed) on a pending candidate of ``export``, with the label
    a confirmation gives its span (default: the candidate's; a kept number has none: the reviewer
    names it). Pending candidates of the project's other releases at the same place are settled
    with it."""
    if verdict not in Verdict.values:
        raise ReviewError("Choose PII (confirm) or not PII (dismiss).")
    project = export.project
    with transaction.atomic():
        candidate = (ReleaseCandidate.objects.select_for_update().select_related("message")
                     .filter(pk=candidate_id, export=export).first())
        if candidate is None:
            raise ReviewError("No such candidate in this release.")
        if candidate.status != Status.PENDING:
            raise ReviewConflict(f"Somebody already decided this one ({candidate.get_status_display()}).")
        if verdict == Verdict.CONFIRMED and not label and candidate.reason in NUMBER_REASONS:
            raise ReviewError("A number is confirmed with its label: press its label's key (or choose it), "
                              "since it may be the maths.")
        label = label or candidate.label
        if label not in project.labels:
            raise ReviewError(f"{label!r} is not a label of {project.name}.")
        msg = candidate.message
        text = candidate_text(candidate)
        if text is None or not 0 <= candidate.start < candidate.end <= len(text):
            raise ReviewError("The dialogue changed since this release was built; build a new version.")
        decision, created = CandidateDecision.objects.get_or_create(
            project=project, key=candidate.key,
            defaults={"verdict": verdict, "message": msg, "start": candidate.start, "end": candidate.end,
                      "label": label, "reason": candidate.reason, "field": candidate.field, "decided_by": user},
        )
        if not created:  # decided through another release meanwhile: that verdict stands
            _settle(project, decision)
            raise ReviewConflict(f"Somebody already decided this place ({decision.get_verdict_display()}).")
        if verdict == Verdict.CONFIRMED and not candidate.field:  # a field's confirmation is read by builds
            _gold_span(msg, candidate.start, candidate.end, label)
        _settle(project, decision)
        audit_record(user=user, action=f"release.candidate.{verdict.removesuffix('ed')}", obj=export,
                     project=project, version=export.version, candidate=candidate.pk, message=msg.pk,
                     start=candidate.start, end=candidate.end, label=label, reason=candidate.reason,
                     field=candidate.field or "text")
    candidate.refresh_from_db()
    return candidate


def _settle(project, decision: CandidateDecision) -> None:
    status = Status.CONFIRMED if decision.verdict == Verdict.CONFIRMED else Status.DISMISSED
    ReleaseCandidate.objects.filter(export__project=project, key=decision.key, status=Status.PENDING).update(
        status=status, decision=decision)


def _gold_span(msg: Message, start: int, end: int, label: str) -> None:
    """The confirmed span in gold, on a message that is in the gold set (one without a decision is
    not gold; the builds add the confirmation to it all the same)."""
    decision = AdjudicationDecision.objects.filter(message=msg).first()
    if decision is None:
        return
    GoldSpan.objects.get_or_create(message=msg, start=start, end=end, label=label,
                                   defaults={"provenance": AdjudicationDecision.Outcome.AUDITED,
                                             "decision": decision})


def candidate_undo(*, export: Export, user) -> ReleaseCandidate:
    """Take back ``user``'s last verdict on a candidate of ``export`` (audited; again: the one
    before). The verdict is deleted, so no later build obeys it (an un-confirmed number is kept and
    asked about again); the candidates it settled wait again in every release of the project, and
    a confirmation's audited gold span goes unless another confirmation holds it. Returns the
    candidate of ``export``, waiting again."""
    with transaction.atomic():
        candidate = last_verdict(export, user)
        if candidate is None:
            raise ReviewError("You have no verdict in this release to undo.")
        decision = CandidateDecision.objects.select_for_update().filter(pk=candidate.decision_id).first()
        if decision is None:
            raise ReviewConflict("That verdict was already undone.")
        ReleaseCandidate.objects.filter(decision=decision).update(status=Status.PENDING, decision=None)
        if decision.verdict == Verdict.CONFIRMED and not decision.field and not (  # a field's holds no gold
                CandidateDecision.objects.filter(project=decision.project, message=decision.message_id,
                                                 start=decision.start, end=decision.end, label=decision.label,
                                                 field="", verdict=Verdict.CONFIRMED).exclude(pk=decision.pk).exists()):
            GoldSpan.objects.filter(message=decision.message_id, start=decision.start, end=decision.end,
                                    label=decision.label, provenance=AdjudicationDecision.Outcome.AUDITED).delete()
        decision.delete()
        audit_record(user=user, action="release.candidate.undo", obj=export, project=export.project,
                     version=export.version, candidate=candidate.pk, message=decision.message_id,
                     verdict=decision.verdict, start=decision.start, end=decision.end, label=decision.label,
                     reason=decision.reason)
    candidate.refresh_from_db()
    return candidate


SKIPPED_KEPT = 500  # a session holds the last skips of a release, not an unbounded list


def candidate_skip(*, session, export: Export, candidate_id: int) -> None:
    """Remember that the reviewer skipped a candidate of ``export`` (``session``: theirs), so the
    queue brings it back only when the rest are done, after a reload too."""
    key = skipped_key(export)
    skipped = [pk for pk in session.get(key, []) if pk != candidate_id]
    session[key] = (skipped + [candidate_id])[-SKIPPED_KEPT:]
