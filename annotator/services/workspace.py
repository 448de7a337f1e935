"""Writes of the annotation workspace: every span decision an annotator makes on one item.

Each service locks the assignment row (``select_for_update``), checks the optimistic ``version``
the page was rendered with, changes what it must, bumps the version, keeps an inverse for undo,
and records an ``AuditEvent``. A stale version raises :class:`ConflictError` ("this item changed
in another tab"), so a double submit or two tabs never duplicate or lose a span; the unique
constraint on ``Annotation`` is the last line of defence.

Every annotation stores the assignment's condition (blind or aware). Suggestions exist only for
aware assignments: for a blind one a prediction id is answered exactly like an unknown id.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from annotator import task_names as names
from annotator.dispatch import enqueue
from annotator.models import Annotation, Assignment, Prediction
from annotator.selectors.keymap import key_name
from annotator.selectors.workspace import pending_suggestions
from annotator.services.adjudication import gold_remerge_message
from annotator.services.audit import audit_record
from pipeline.text import word_bounds

UNDO_DEPTH = 50
MAX_ACTIVE_REPORT = 300.0  # seconds of active time one request may add (the page reports every 30 s)

Origin = Annotation.Origin


class WorkspaceError(Exception):
    """A refused action, with a message for the annotator and an HTTP status for the view."""

    status = 400

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class ConflictError(WorkspaceError):
    status = 409


class OverlapError(WorkspaceError):
    status = 422


class NotFoundError(WorkspaceError):
    status = 404


class ReadOnlyError(WorkspaceError):
    """A submitted item is read-only until its annotator reopens it (423 Locked)."""

    status = 423


CONFLICT_MESSAGE = "This item changed in another tab. Reload to see the latest version; nothing was saved."
READ_ONLY_MESSAGE = f"This item is submitted: press Reopen ({key_name('reopen')}) to change it; nothing was saved."


# ----------------------------------------------------------------------------------- helpers

# Everything an action may change: re-read under the row lock onto the caller's instance, so the
# view can render the result without fetching the assignment again.
_LOCKED_FIELDS = ("annotator_id", "condition", "status", "version", "no_pii", "uncertain", "comment",
                  "undo_log", "active_seconds", "started_at", "submitted_at", "order", "timed_at", "created_at")


def _lock(assignment: Assignment, version: int | None, *, edit: bool = True) -> Assignment:
    """Lock and re-read the row; refuse a stale version and, for an edit, a submitted item."""
    row = (
        Assignment.objects.select_for_update().filter(pk=assignment.pk).values(*_LOCKED_FIELDS).first()
    )
    if row is None or row["annotator_id"] != assignment.annotator_id:
        raise NotFoundError("No such item in your queue.")
    for field, value in row.items():
        setattr(assignment, field, value)
    if version is not None and assignment.version != int(version):
        raise ConflictError(CONFLICT_MESSAGE)
    if edit and assignment.status == Assignment.Status.DONE:
        raise ReadOnlyError(READ_ONLY_MESSAGE)
    return assignment


def _save(a: Assignment, *, undo: dict | None = None, active: float = 0.0, fields: tuple[str, ...] = ()) -> None:
    """Bump the version, push the undo entry, count active time, mark the item started."""
    a.version += 1
    update = {"version", *fields}
    if undo is not None:
        a.undo_log = [*(a.undo_log or []), undo][-UNDO_DEPTH:]
        update.add("undo_log")
    _add_time(a, active, update)
    a.save(update_fields=sorted(update))


def _add_time(a: Assignment, active: float, update: set[str]) -> None:
    seconds = _credit(a, active)
    update.add("timed_at")
    if seconds:
        a.active_seconds = (a.active_seconds or 0) + seconds
        update.add("active_seconds")
    if a.started_at is None:
        a.started_at = timezone.now()
        update.add("started_at")
    if a.status == Assignment.Status.PENDING:
        a.status = Assignment.Status.IN_PROGRESS
        update.add("status")


def _credit(a: Assignment, active) -> float:
    """The seconds to credit for one report, and the clock moved on (the row must be locked).

    The client's figure is capped per request and by the wall-clock time since the item was
    opened or time was last credited, so a client that posts ``active=300`` twenty times a second
    is credited no more time than passed."""
    now = timezone.now()
    since = a.timed_at or a.created_at or now
    a.timed_at = now
    return min(_clamp(active), max((now - since).total_seconds(), 0.0))


def _clamp(active) -> float:
    try:
        seconds = float(active or 0)
    except (TypeError, ValueError):
        return 0.0
    if seconds != seconds or seconds <= 0:  # NaN or nothing
        return 0.0
    return min(seconds, MAX_ACTIVE_REPORT)


def _label(a: Assignment, label: str) -> str:
    if label not in a.project.labels:
        raise WorkspaceError(f"Unknown label {label!r}.")
    return label


def _annotations(a: Assignment) -> list[Annotation]:
    return list(a.annotations.all())


def _spans(annotations: list[Annotation]) -> list[Annotation]:
    return [x for x in annotations if x.origin != Origin.REJECTED]


def _check_overlap(a: Assignment, annotations: list[Annotation], start: int, end: int) -> None:
    for s in _spans(annotations):
        if s.start < end and start < s.end:
            text = a.message.text
            raise OverlapError(
                f"That overlaps your {s.label} span “{text[s.start:s.end]}”. Delete or undo it first."
            )


def _suggestion(a: Assignment, annotations: list[Annotation], prediction_id) -> Prediction:
    """A pending suggestion of this aware item; anything else is 'no such suggestion'."""
    if a.condition != Assignment.Condition.AWARE:
        raise NotFoundError("Not found.")  # a blind item: not even the word "suggestion"
    try:
        pid = int(prediction_id)
    except (TypeError, ValueError):
        raise NotFoundError("No such suggestion.") from None
    for p in pending_suggestions(a, annotations):
        if p.pk == pid:
            return p
    raise NotFoundError("No such suggestion (it may already be decided).")


# Sentence punctuation and quotes name nobody: a selection's ends drop them.
_EDGE = frozenset("?!.,;:…\"“”«»¿¡")


def _snap(text: str, start: int, end: int) -> tuple[int, int]:
    """Whole words, as the annotator meant: the punctuation and quotes at either end stay out (a
    drag past the end of "What is 9755 x 468?" takes the "?"), and so does a possessive 's they
    did not select."""
    s, e = word_bounds(text, start, end)
    while s < e and (text[s] in _EDGE or text[s].isspace()):
        s += 1
    while e > s and (text[e - 1] in _EDGE or text[e - 1].isspace()):
        e -= 1
    tail = text[e - 2:e] if e - s > 2 else ""
    if tail in ("'s", "’s", "'S", "’S") and end <= e - 2:
        e -= 2
    return s, e


def _create(a: Assignment, **fields) -> Annotation:
    # No savepoint: an IntegrityError leaves the service's transaction, which rolls back whole.
    try:
        return Annotation.objects.create(assignment=a, condition=a.condition, **fields)
    except IntegrityError:
        raise ConflictError("That decision is already saved (double click or another tab).") from None


def _audit(user, action: str, a: Assignment, **details) -> None:
    audit_record(user=user, action=action, obj=a, project=a.project,
                 message=a.message_id, condition=a.condition, **details)


def _ann_dict(ann: Annotation) -> dict:
    return {"id": ann.pk, "start": ann.start, "end": ann.end, "label": ann.label, "origin": ann.origin,
            "prediction": ann.prediction_id, "comment": ann.comment}


# ----------------------------------------------------------------------------------- spans

@transaction.atomic
def span_add(*, assignment: Assignment, user, version: int | None, start: int, end: int, label: str,
             exact: bool = False, active: float = 0.0) -> Annotation:
    """Add a span from a selection, widened to whole words unless ``exact``.

    In the aware condition a span that matches a pending suggestion accepts it, and one that
    overlaps a suggestion records an edit of it, so the accept-without-edit rate stays honest.
    """
    a = _lock(assignment, version)
    label = _label(a, label)
    text = a.message.text
    if not (0 <= start < end <= len(text)):
        raise WorkspaceError(f"The selection {start}–{end} is outside the message.")
    if not exact:
        start, end = _snap(text, start, end)
    if start >= end:
        raise WorkspaceError("The selection holds no word.")
    annotations = _annotations(a)
    _check_overlap(a, annotations, start, end)
    origin, prediction = Origin.ADDED, None
    if a.condition == Assignment.Condition.AWARE:
        best = 0
        for p in pending_suggestions(a, annotations):
            overlap = min(end, p.end) - max(start, p.start)
            if overlap > best:
                best, prediction = overlap, p
        if prediction is not None:
            same = (prediction.start, prediction.end, prediction.label) == (start, end, label)
            origin = Origin.ACCEPTED if same else Origin.EDITED
    ann = _create(a, start=start, end=end, label=label, origin=origin, prediction=prediction)
    undo = {"op": "add", "id": ann.pk}
    fields: tuple[str, ...] = ()
    if a.no_pii:
        undo["no_pii"] = True
        a.no_pii = False
        fields = ("no_pii",)
    _save(a, undo=undo, active=active, fields=fields)
    _audit(user, "annotation.add", a, annotation=ann.pk, start=start, end=end, label=label,
           origin=origin, exact=bool(exact), prediction=ann.prediction_id)
    return ann


def _own(a: Assignment, annotation_id) -> Annotation:
    try:
        return a.annotations.exclude(origin=Origin.REJECTED).get(pk=int(annotation_id))
    except (Annotation.DoesNotExist, TypeError, ValueError):
        raise NotFoundError("No such span (it may already be deleted).") from None


@transaction.atomic
def span_delete(*, assignment: Assignment, user, version: int | None, annotation_id, active: float = 0.0) -> None:
    a = _lock(assignment, version)
    ann = _own(a, annotation_id)
    data = _ann_dict(ann)
    ann.delete()
    _save(a, undo={"op": "delete", "ann": data}, active=active)
    _audit(user, "annotation.delete", a, annotation=int(annotation_id), **data)


@transaction.atomic
def span_relabel(*, assignment: Assignment, user, version: int | None, annotation_id, label: str,
                 active: float = 0.0) -> Annotation:
    a = _lock(assignment, version)
    label = _label(a, label)
    ann = _own(a, annotation_id)
    if ann.label == label:
        raise WorkspaceError(f"That span is already {label}.")
    undo = {"op": "relabel", "id": ann.pk, "label": ann.label, "origin": ann.origin}
    old = ann.label
    ann.label = label
    if ann.origin == Origin.ACCEPTED:
        ann.origin = Origin.EDITED
    elif ann.origin == Origin.EDITED and ann.prediction is not None and (
        (ann.start, ann.end, label) == (ann.prediction.start, ann.prediction.end, ann.prediction.label)
    ):
        ann.origin = Origin.ACCEPTED
    try:
        ann.save(update_fields=["label", "origin", "updated_at"])
    except IntegrityError:
        raise ConflictError("That decision is already saved (double click or another tab).") from None
    _save(a, undo=undo, active=active)
    _audit(user, "annotation.relabel", a, annotation=ann.pk, old=old, label=label, origin=ann.origin)
    return ann


# ----------------------------------------------------------------------------------- suggestions

@transaction.atomic
def suggestion_accept(*, assignment: Assignment, user, version: int | None, prediction_id,
                      active: float = 0.0) -> Annotation:
    a = _lock(assignment, version)
    annotations = _annotations(a)
    p = _suggestion(a, annotations, prediction_id)
    _check_overlap(a, annotations, p.start, p.end)
    ann = _create(a, start=p.start, end=p.end, label=p.label, origin=Origin.ACCEPTED, prediction=p)
    _save(a, undo={"op": "add", "id": ann.pk}, active=active)
    _audit(user, "annotation.accept", a, annotation=ann.pk, prediction=p.pk, label=p.label)
    return ann


@transaction.atomic
def suggestion_reject(*, assignment: Assignment, user, version: int | None, prediction_id,
                      active: float = 0.0) -> Annotation:
    """Reject a suggestion. Rejecting the last undecided one of an item with no span of its own is
    the decision 'no PII here', as ``n`` would record it (undo takes both back; a span added
    later clears it, as after ``n``)."""
    a = _lock(assignment, version)
    annotations = _annotations(a)
    p = _suggestion(a, annotations, prediction_id)
    ann = _create(a, start=p.start, end=p.end, label=p.label, origin=Origin.REJECTED, prediction=p)
    undo: dict = {"op": "add", "id": ann.pk}
    fields: tuple[str, ...] = ()
    if not a.no_pii and not _spans(annotations) and not pending_suggestions(a, [*annotations, ann]):
        undo["no_pii"] = False
        a.no_pii = True
        fields = ("no_pii",)
    _save(a, undo=undo, active=active, fields=fields)
    _audit(user, "annotation.reject", a, annotation=ann.pk, prediction=p.pk, label=p.label, no_pii=a.no_pii)
    return ann


@transaction.atomic
def suggestion_relabel(*, assignment: Assignment, user, version: int | None, prediction_id, label: str,
                       active: float = 0.0) -> Annotation:
    a = _lock(assignment, version)
    label = _label(a, label)
    annotations = _annotations(a)
    p = _suggestion(a, annotations, prediction_id)
    _check_overlap(a, annotations, p.start, p.end)
    origin = Origin.ACCEPTED if label == p.label else Origin.EDITED
    ann = _create(a, start=p.start, end=p.end, label=label, origin=origin, prediction=p)
    _save(a, undo={"op": "add", "id": ann.pk}, active=active)
    _audit(user, "annotation.relabel_suggestion", a, annotation=ann.pk, prediction=p.pk,
           old=p.label, label=label)
    return ann


# ----------------------------------------------------------------------------------- item flags

@transaction.atomic
def item_no_pii_set(*, assignment: Assignment, user, version: int | None, value: bool = True,
               active: float = 0.0) -> Assignment:
    """'No PII here': refused while the item has spans; rejects the pending suggestions (aware)."""
    a = _lock(assignment, version)
    value = bool(value)
    if value == a.no_pii:
        _save(a, active=active)
        return a
    rejected: list[int] = []
    if value:
        annotations = _annotations(a)
        if _spans(annotations):
            raise WorkspaceError("This item has spans: delete them before marking it as having no PII.")
        if a.condition == Assignment.Condition.AWARE:
            for p in pending_suggestions(a, annotations):
                rejected.append(_create(a, start=p.start, end=p.end, label=p.label,
                                        origin=Origin.REJECTED, prediction=p).pk)
    a.no_pii = value
    _save(a, undo={"op": "no_pii", "value": not value, "rejected": rejected}, active=active, fields=("no_pii",))
    _audit(user, "assignment.no_pii", a, value=value, rejected=len(rejected))
    return a


@transaction.atomic
def item_flag_set(*, assignment: Assignment, user, version: int | None, uncertain: bool, comment: str,
             active: float = 0.0) -> Assignment:
    a = _lock(assignment, version)
    comment = (comment or "").strip()[:4000]
    if (a.uncertain, a.comment) == (bool(uncertain), comment):
        _save(a, active=active)
        return a
    undo = {"op": "flag", "uncertain": a.uncertain, "comment": a.comment}
    a.uncertain, a.comment = bool(uncertain), comment
    _save(a, undo=undo, active=active, fields=("uncertain", "comment"))
    _audit(user, "assignment.flag", a, uncertain=a.uncertain, comment=bool(comment))
    return a


@transaction.atomic
def item_undo(*, assignment: Assignment, user, version: int | None, active: float = 0.0) -> Assignment:
    """Reverse the last edit of this item (spans, suggestion decisions, flags)."""
    a = _lock(assignment, version)
    if not a.undo_log:
        raise WorkspaceError("Nothing to undo on this item.")
    entry = a.undo_log[-1]
    a.undo_log = a.undo_log[:-1]
    op = entry.get("op")
    fields = ["undo_log"]
    if op == "add":
        a.annotations.filter(pk=entry["id"]).delete()
        if "no_pii" in entry:  # the add changed the flag (a span cleared it, a last reject set it)
            a.no_pii = entry["no_pii"]
            fields.append("no_pii")
    elif op == "delete":
        d = entry["ann"]
        _create(a, id=d.get("id"), start=d["start"], end=d["end"], label=d["label"], origin=d["origin"],
                prediction_id=d.get("prediction"), comment=d.get("comment", ""))
    elif op == "relabel":
        a.annotations.filter(pk=entry["id"]).update(label=entry["label"], origin=entry["origin"])
    elif op == "no_pii":
        a.annotations.filter(pk__in=entry.get("rejected", [])).delete()
        a.no_pii = entry["value"]
        fields.append("no_pii")
    elif op == "flag":
        a.uncertain, a.comment = entry["uncertain"], entry["comment"]
        fields += ["uncertain", "comment"]
    _save(a, active=active, fields=tuple(fields))
    _audit(user, "annotation.undo", a, undone=op)
    return a


# ----------------------------------------------------------------------------------- item status

@transaction.atomic
def item_submit(*, assignment: Assignment, user, version: int | None, active: float = 0.0) -> Assignment:
    """Finish the item. A repeated submit of a finished item (double Enter, a second tab) is a no-op.

    Submitting an item whose message is already merged (a reopened item, or one reassigned after
    the merge) merges it again, now (``gold_remerge_message``): gold that annotators agreed on is
    recomputed, and gold an adjudicator decided goes back to their queue.
    """
    try:
        a = _lock(assignment, version, edit=False)
    except ConflictError:
        if assignment.status == Assignment.Status.DONE:  # _lock has read the current row
            return assignment
        raise
    if a.status == Assignment.Status.DONE:
        return a
    annotations = _annotations(a)
    if a.condition == Assignment.Condition.AWARE:
        left = len(pending_suggestions(a, annotations))
        if left:
            raise WorkspaceError(
                f"{left} suggestion{'s' if left > 1 else ''} still undecided: accept ({key_name('accept')}) "
                f"or reject ({key_name('reject')}) each."
            )
    if not a.no_pii and not _spans(annotations):
        raise WorkspaceError(f"Add a span, or mark the item as having no PII ({key_name('no-pii-next')}), "
                             "before submitting.")
    resubmit = a.submitted_at is not None  # submitted before, then reopened
    a.status = Assignment.Status.DONE
    a.submitted_at = timezone.now()
    _save(a, active=active, fields=("status", "submitted_at"))
    _audit(user, "assignment.submit", a, spans=len(_spans(annotations)), no_pii=a.no_pii,
           uncertain=a.uncertain, active_seconds=round(a.active_seconds, 1), resubmit=resubmit)
    gold_remerge_message(message=a.message, user=user)  # a no-op unless the message is merged already
    # The last of the k annotators to finish turns the item into gold or a queue item.
    enqueue(names.ADJUDICATION_GOLD_MERGE, a.project_id, [a.message_id])
    return a


@transaction.atomic
def item_no_pii_submit(*, assignment: Assignment, user, version: int | None, active: float = 0.0) -> Assignment:
    """'No PII here, next': most messages of a tutoring chat have none, so marking one and
    submitting it is one key and one request, with the refusals of both steps."""
    a = item_no_pii_set(assignment=assignment, user=user, version=version, value=True, active=active)
    return item_submit(assignment=a, user=user, version=a.version)


@transaction.atomic
def item_reopen(*, assignment: Assignment, user, version: int | None, active: float = 0.0) -> Assignment:
    """Make a submitted item editable again (audited). Its gold stays as it is until the item is
    submitted again, which merges it again."""
    a = _lock(assignment, version, edit=False)
    if a.status != Assignment.Status.DONE:
        raise WorkspaceError("Only a submitted item can be reopened.")
    a.status = Assignment.Status.IN_PROGRESS
    _save(a, active=active, fields=("status",))
    _audit(user, "assignment.reopen", a, submitted_at=a.submitted_at.isoformat() if a.submitted_at else None)
    return a


def item_open(*, assignment: Assignment) -> None:
    """The annotator opened the item's page: active time reported later is capped from now."""
    Assignment.objects.filter(pk=assignment.pk).update(timed_at=timezone.now())


@transaction.atomic
def item_skip(*, assignment: Assignment, user, version: int | None, active: float = 0.0) -> Assignment:
    a = _lock(assignment, version)
    if a.status == Assignment.Status.DONE:
        raise WorkspaceError("This item is already submitted.")
    if a.submitted_at is not None:
        raise WorkspaceError(f"This item was submitted before and reopened: submit it again ({key_name('submit')}) "
                             f"to keep your changes, or undo them ({key_name('undo')}) first.")
    if a.started_at is None:
        a.started_at = timezone.now()
    a.status = Assignment.Status.SKIPPED
    _save(a, active=active, fields=("status", "started_at"))
    _audit(user, "assignment.skip", a)
    return a


@transaction.atomic
def item_time_add(*, assignment: Assignment, active: float) -> float:
    """Count active seconds without touching the version (a heartbeat must never cause a conflict);
    returns the seconds credited (capped by the wall clock, see ``_credit``)."""
    a = Assignment.objects.select_for_update().filter(pk=assignment.pk).only("pk", "timed_at", "created_at").first()
    if a is None:
        return 0.0
    seconds = _credit(a, active)
    Assignment.objects.filter(pk=a.pk).update(active_seconds=F("active_seconds") + seconds, timed_at=a.timed_at)
    return seconds


__all__ = [
    "ConflictError", "NotFoundError", "OverlapError", "ReadOnlyError", "WorkspaceError", "item_flag_set",
    "item_no_pii_set", "item_no_pii_submit", "item_open", "item_reopen", "item_skip", "item_submit", "item_time_add", "item_undo",
    "span_add", "span_delete", "span_relabel", "suggestion_accept", "suggestion_reject", "suggestion_relabel",
]
