"""Writes of adjudication: finished items become gold automatically when annotators agree; the
rest enter a queue ordered by risk, and an adjudicator's decision becomes gold with provenance.

Every gold span records how it was reached (unanimous / majority / adjudicated), which annotators
had it (pseudonyms) under which condition, and whether a model prediction matched it. Every merge,
queueing and decision leaves an ``AuditEvent``. The merging rules themselves are pure functions in
:mod:`pipeline.adjudication`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from django.db import DatabaseError, InterfaceError, OperationalError, transaction
from django.utils import timezone

from annotator import task_names as names
from annotator.dispatch import enqueue
from annotator.models import (
    AdjudicationDecision,
    AdjudicationItem,
    AuditEvent,
    GoldSpan,
    Message,
    Project,
)
from annotator.selectors import adjudication as sel
from annotator.services.audit import audit_event, audit_record
from pipeline.adjudication import (
    ADJUDICATED,
    LEAK,
    MAJORITY,
    UNANIMOUS,
    SettledItem,
    assess_risk,
    merge_candidates,
    model_favour,
)
from pipeline.types import Span, SpanError

Outcome = AdjudicationDecision.Outcome
BATCH = 500
MERGE_FAILED = sel.MERGE_FAILED
# Errors that can succeed on retry: a lost connection, "too many clients", a pool timeout.
TRANSIENT_DB_ERRORS = (OperationalError, InterfaceError)
logger = logging.getLogger(__name__)


class AdjudicationError(Exception):
    """A refused decision, with a message for the adjudicator and an HTTP status for the view."""

    status = 400

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status


def decision_risk(level: int) -> int:
    """``AdjudicationDecision.risk`` keeps the coarse scale: 2 possible leak, 1 label/boundary."""
    return 2 if level >= LEAK else (1 if level > 0 else 0)


def _who(key: tuple, ev: sel.ItemEvidence) -> list[dict]:
    return [{"annotator": name, "condition": ev.conditions[name]}
            for name in ev.order if any(s.key() == key for s in ev.spans[name])]


# ----------------------------------------------------------------------------------- auto-merge


def gold_merge_ready(*, project: Project, user=None, message_ids: Iterable[int] | None = None) -> dict:
    """Merge every finished item: agreement (by the project's rule) becomes gold, disagreement
    goes to the queue. Idempotent and safe to run twice at once: each batch locks its messages
    and looks again at which are still unmerged."""
    rule = project.merge_rule
    merged = queued = 0
    ids = list(sel.messages_ready_to_merge(project, message_ids).values_list("pk", flat=True))
    for i in range(0, len(ids), BATCH):
        with transaction.atomic():
            batch = list(Message.objects.select_for_update().filter(pk__in=ids[i:i + BATCH])
                         .values_list("pk", flat=True))
            messages = list(sel.messages_ready_to_merge(project, batch))
            m, q = _merge_batch(project, rule, sel.evidence_for(project, messages), user)
        merged, queued = merged + m, queued + q
    if merged:
        _gold_grew(project)
    return {"merged": merged, "queued": queued}


def _gold_grew(project: Project) -> None:
    """Gold grew: an event, not a call into the tagger area. The ``retrain_check`` task (after
    commit) lets the model in the loop decide whether ``retrain_every`` new messages arrived."""
    enqueue(names.TAGGER_RETRAIN_CHECK, project.pk)


def gold_merge_sweep(*, projects: Iterable[Project] | None = None) -> dict[str, dict]:
    """Merge every finished item that is not in gold yet, project by project: the safety net
    for merges that failed or were killed half-way (each batch commits on its own, so a rerun
    merges exactly what is left). A project whose merge fails for a reason other than the
    database is recorded and the sweep goes on; database errors propagate, for the task to
    retry the whole (idempotent) sweep."""
    out: dict[str, dict] = {}
    for project in projects if projects is not None else Project.objects.order_by("pk"):
        try:
            out[project.slug] = gold_merge_ready(project=project)
        except TRANSIENT_DB_ERRORS:
            raise
        except Exception as exc:  # recorded for the admins; the next project still merges
            logger.exception("gold merge sweep failed for project %s", project.slug)
            gold_merge_failure_record(project=project, error=_describe(exc))
            out[project.slug] = {"error": _describe(exc)}
    return out


def gold_merge_request(*, project: Project, message_ids: list[int] | None = None) -> None:
    """Queue a merge of finished items (all of the project's, or these messages') after commit;
    the merge is idempotent, so asking twice is harmless."""
    enqueue(names.ADJUDICATION_GOLD_MERGE, project.pk, message_ids)


def gold_merge_failure_record(*, project: Project | int, error: str, message_ids: Iterable[int] | None = None,
                              retries: int = 0) -> AuditEvent | None:
    """Keep the last merge failure where admins see it (an ``AuditEvent``; the dashboard shows
    the latest with the count of items still unmerged). When the database itself is what
    failed, this may fail too: it is then logged, and the sweep still recovers the items."""
    project_id = project if isinstance(project, int) else project.pk
    try:
        return AuditEvent.objects.create(
            project_id=project_id, action=MERGE_FAILED, object_type="Project", object_id=str(project_id),
            details={"error": error[:2000], "retries": retries,
                     "messages": None if message_ids is None else list(message_ids)[:100]},
        )
    except DatabaseError:
        logger.exception("could not record a gold merge failure for project %s: %s", project_id, error)
        return None


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".strip()


def _merge_batch(project, rule, evidence: list[sel.ItemEvidence], user) -> tuple[int, int]:
    """Bulk writes: one insert per table per batch (decisions and items get their ids back)."""
    items: list[tuple[AdjudicationItem, sel.ItemEvidence]] = []
    decisions: list[tuple[AdjudicationDecision, sel.ItemEvidence, tuple]] = []
    for ev in evidence:
        risk = assess_risk(ev.spans)
        cands = merge_candidates(ev.spans, rule)
        if cands is None or ev.uncertain:  # a disagreement, or an annotator asked for a person
            items.append((AdjudicationItem.for_message(ev.message, risk=risk.level,
                                                        risk_weight=risk.weight, risk_details=risk.to_dict()), ev))
            continue
        outcome = Outcome.MAJORITY if any(c.provenance == MAJORITY for c in cands) else Outcome.UNANIMOUS
        if outcome == Outcome.UNANIMOUS and risk.level:  # majority rule settled a disagreement
            outcome = Outcome.MAJORITY
        decisions.append((AdjudicationDecision(
            message=ev.message, outcome=outcome, risk=decision_risk(risk.level),
            details={"rule": rule, "risk": risk.to_dict(), "annotators": [
                {"annotator": n, "condition": ev.conditions[n]} for n in ev.order], "evidence": _evidence(ev)},
        ), ev, cands))
    AdjudicationItem.objects.bulk_create([it for it, _ in items])
    AdjudicationDecision.objects.bulk_create([d for d, _, _ in decisions])
    gold = [
        GoldSpan(message=ev.message, start=c.span.start, end=c.span.end, label=c.span.label,
                 provenance=UNANIMOUS if c.provenance == UNANIMOUS else MAJORITY,
                 annotators=_who(c.span.key(), ev), model_matched=c.span.key() in ev.model, decision=d)
        for d, ev, cands in decisions for c in cands
    ]
    events = [audit_event(user=user, action="adjudication.queue", obj=it, project=project, message=ev.message.pk,
                          risk=it.risk_details["kind"], annotators=len(ev.order)) for it, ev in items]
    events += [audit_event(user=user, action="gold.merge", obj=d, project=project, message=ev.message.pk,
                           outcome=d.outcome, spans=len(cands)) for d, ev, cands in decisions]
    GoldSpan.objects.bulk_create(gold)
    AuditEvent.objects.bulk_create(events)
    return len(decisions), len(items)


def _evidence(ev: sel.ItemEvidence) -> list:
    """What a decision was based on, to tell later whether the annotations changed since."""
    return [[name, [list(s.key()) for s in ev.spans[name]]] for name in ev.order]


@transaction.atomic
def gold_remerge_message(*, message: Message, user=None) -> str:
    """Merge a message again after an annotator changed an item they had submitted (reopen,
    edit, submit). Returns what happened, for the caller and the tests.

    Gold from an automatic merge is recomputed from the current annotations (it may now be a
    disagreement for the queue, or flagged uncertain: then it joins the queue with its gold). Gold an adjudicator decided is never overwritten: the item goes
    back to the queue, *changed after decision*, and the decision stands until it is revised.
    An undecided queue item gets its risk again. Imported gold does not come from annotations
    and stays. Nothing happens while another annotator of the message is still at work (their
    submit merges) or when the annotations are what the decision was based on.
    """
    list(Message.objects.select_for_update().filter(pk=message.pk).values_list("pk"))
    project = message.project
    if sel.message_has_open_assignments(message):
        return "waiting"
    decision = AdjudicationDecision.objects.filter(message=message).first()
    item = AdjudicationItem.objects.select_for_update().filter(message=message).first()
    if decision is None and item is None:
        return "unmerged"  # the ordinary merge takes it
    if decision is not None and decision.outcome == Outcome.IMPORTED:
        return "imported"
    ev = sel.evidence_for(project, [message])[0]
    flagged = ev.uncertain and item is None  # merged automatically, now flagged uncertain: a person decides
    if decision is not None and not flagged and decision.details.get("evidence") == _evidence(ev) and (
            item is None or item.status == AdjudicationItem.Status.SETTLED):
        return "unchanged"
    if flagged or (decision is not None and decision.outcome == Outcome.ADJUDICATED) or (item is not None and (
            item.decision_id is not None or ev.uncertain
            or merge_candidates(ev.spans, project.merge_rule) is None)):
        return _requeue(project, message, item, decision, ev, user)
    if item is not None:
        item.delete()
    if decision is not None:
        decision.delete()  # and its gold spans
    merged, _ = _merge_batch(project, project.merge_rule, [ev], user)
    audit_record(user=user, action="gold.remerge", obj=message, project=project, outcome="gold" if merged else "queue",
                 replaced=decision.outcome if decision is not None else None)
    return "merged" if merged else "queued"


def _requeue(project, message, item, decision, ev, user) -> str:
    """Put a message (back) in the adjudication queue with the risk of the current annotations;
    a decided one keeps its decision and gold until the adjudicator revises it."""
    risk = assess_risk(ev.spans)
    if item is None:
        item = AdjudicationItem.for_message(message, decision=decision, version=0)
    was_settled = item.status == AdjudicationItem.Status.SETTLED
    item.status, item.settled_at = AdjudicationItem.Status.OPEN, None
    item.risk, item.risk_weight, item.risk_details = risk.level, risk.weight, risk.to_dict()
    item.version += 1  # an adjudicator looking at the old evidence is told to reload
    item.save()
    action = "adjudication.changed_after_decision" if item.decision_id else "adjudication.requeue"
    audit_record(user=user, action=action, obj=item, project=project, message=message.pk,
                 risk=risk.to_dict()["kind"], was_settled=was_settled)
    return "requeued"


# ----------------------------------------------------------------------------------- deciding


def _validate(project: Project, text: str, spans: Sequence[tuple[int, int, str]]) -> list[Span]:
    labels = set(project.labels)
    out: list[Span] = []
    for start, end, label in spans:
        if label not in labels:
            raise AdjudicationError(f"Unknown label {label!r}.")
        try:
            span = Span(start, end, label).check(text)
        except SpanError as exc:
            raise AdjudicationError(f"Span {start}..{end} does not fit the message: {exc}.") from None
        out.append(span)
    out = sorted(set(out))
    for a, b in zip(out, out[1:], strict=False):
        if a.overlaps(b):
            raise AdjudicationError(
                f"“{text[a.start:a.end]}” ({a.label}) and “{text[b.start:b.end]}” ({b.label}) overlap: "
                "keep one.", 422)
    return out


def _decision_write(locked: AdjudicationItem, **fields) -> AdjudicationDecision:
    """The item's decision, created, or revised in place with its old gold spans gone (the caller
    writes the new ones). A revised automatic merge (an item flagged uncertain after it merged)
    becomes adjudicated like any other."""
    if locked.decision_id is None:
        return AdjudicationDecision.objects.create(message=locked.message, risk=decision_risk(locked.risk),
                                                   **fields)
    decision = locked.decision
    GoldSpan.objects.filter(message=locked.message).delete()
    for name, value in fields.items():
        setattr(decision, name, value)
    decision.save()
    return decision


@transaction.atomic
def adjudication_submit(*, item: AdjudicationItem, user, spans: Sequence[tuple[int, int, str]],
                        version: int | None, notes: str = "", reply: str = "",
                        confirm_drop: bool = False) -> AdjudicationDecision:
    """Record the adjudicator's gold for one item (a second decision revises the first).

    ``notes`` stay with the adjudicators; ``reply`` is addressed to the item's annotators, who see
    it with the gold spans on their own submitted item (:func:`selectors.workspace.decision_for`).

    Text an annotator marked that no gold span covers is a possible leak: it is refused unless
    ``confirm_drop`` says the adjudicator dropped it on purpose.
    """
    locked = AdjudicationItem.objects.select_for_update().select_related("project", "message").get(pk=item.pk)
    if version is not None and locked.version != version:
        raise AdjudicationError(
            "Someone decided this item while you were looking at it. Reload to see their decision.", 409)
    project, message = locked.project, locked.message
    gold = _validate(project, message.text, spans)
    ev = sel.evidence_for(project, [message])[0]
    dropped = sorted({s for name in ev.order for s in ev.spans[name] if not any(s.overlaps(g) for g in gold)})
    if dropped and not confirm_drop:
        shown = ", ".join(f"“{message.text[s.start:s.end]}” ({s.label})" for s in dropped[:3])
        raise AdjudicationError(
            f"{shown} {'was' if len(dropped) == 1 else 'were'} marked by an annotator and no gold span covers "
            f"{'it' if len(dropped) == 1 else 'them'}. If that is not PII, confirm the drop (Shift+Enter).", 422)
    favour = model_favour([SettledItem(ev.spans, [Span(*k) for k in ev.model], gold)])
    model_favoured = (favour["settled_for_model"] == favour["disputed"]) if favour["disputed"] else None
    revised = locked.decision_id is not None
    details = {
        "risk": locked.risk_details, "model_favour": favour,
        "dropped": [s.to_dict(with_score=False) for s in dropped],
        "annotators": [{"annotator": n, "condition": ev.conditions[n]} for n in ev.order],
        "evidence": _evidence(ev),
    }
    decision = _decision_write(locked, outcome=Outcome.ADJUDICATED, decided_by=user, notes=notes, reply=reply,
                               model_favoured=model_favoured, details=details)
    GoldSpan.objects.bulk_create([
        GoldSpan(message=message, start=s.start, end=s.end, label=s.label, provenance=ADJUDICATED,
                 annotators=_who(s.key(), ev), model_matched=s.key() in ev.model, decision=decision)
        for s in gold
    ])
    locked.status = AdjudicationItem.Status.SETTLED
    locked.settled_at = timezone.now()
    locked.version += 1
    locked.decision = decision
    locked.save(update_fields=["status", "settled_at", "version", "decision"])
    audit_record(user=user, action="adjudication.revise" if revised else "adjudication.submit", obj=decision,
                 project=project, message=message.pk, spans=[s.to_dict(with_score=False) for s in gold],
                 risk=locked.risk_details.get("kind", ""), model_favoured=model_favoured,
                 dropped=[s.to_dict(with_score=False) for s in dropped], notes=notes[:500],
                 reply=reply[:500])
    item.version, item.status, item.decision = locked.version, locked.status, decision
    if not revised:
        _gold_grew(project)
    return decision
