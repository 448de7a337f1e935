"""Reads of adjudication: which items are ready to merge, the risk-ordered queue (filtered by the
annotators' notes), and one item's evidence (each annotator's spans and note, the model's).

Annotators appear here only under pseudonyms: the project's ``Membership.pseudonym`` in
provenance, "Annotator 1, 2, 3" (per item) in the adjudication workspace. Model predictions
reach the workspace only when the project shows them to adjudicators.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.db.models import Count, Exists, OuterRef, Q

from annotator.models import (
    AdjudicationDecision,
    AdjudicationItem,
    Annotation,
    Assignment,
    AuditEvent,
    DetectorRun,
    GoldSpan,
    Message,
    Prediction,
    Project,
)
from annotator.rendering import Mark, highlight, taxonomy_colors
from annotator.selectors import ordered_keyset_page
from annotator.selectors.figures import cached, figure
from annotator.selectors.projects import message_window, pseudonyms
from pipeline.types import Span

DONE = Assignment.Status.DONE
MERGE_FAILED = "gold.merge_failed"  # the audit action that records a failed merge


# ----------------------------------------------------------------------------------- spans


def spans_by_assignment(assignment_ids) -> dict[int, list[Span]]:
    """Each finished assignment's spans (rejections are decisions, not spans)."""
    out: dict[int, list[Span]] = defaultdict(list)
    rows = (
        Annotation.objects.filter(assignment_id__in=assignment_ids)
        .exclude(origin=Annotation.Origin.REJECTED)
        .values_list("assignment_id", "start", "end", "label")
    )
    for aid, start, end, label in rows.iterator(chunk_size=5000):
        out[aid].append(Span(start, end, label))
    return out


def model_run_ids(project: Project) -> list[int]:
    """Runs whose output counts as "the model" for provenance: the suggestion runs, else every
    succeeded detector run (imported spans are not a model)."""
    ids = list(project.suggestion_runs.values_list("pk", flat=True))
    if not ids:
        ids = list(
            DetectorRun.objects.filter(project=project, status=DetectorRun.Status.SUCCEEDED,
                                       source=DetectorRun.Source.DETECTOR).values_list("pk", flat=True)
        )
    return ids


def predictions_by_message(message_ids, run_ids) -> dict[int, dict[tuple, list[int]]]:
    """message id -> {(start, end, label): [run ids that predicted it]}."""
    out: dict[int, dict[tuple, list[int]]] = defaultdict(lambda: defaultdict(list))
    if not run_ids:
        return out
    rows = Prediction.objects.filter(message_id__in=message_ids, run_id__in=run_ids).values_list(
        "message_id", "start", "end", "label", "run_id"
    )
    for mid, start, end, label, rid in rows.iterator(chunk_size=5000):
        out[mid][(start, end, label)].append(rid)
    return out


# ----------------------------------------------------------------------------------- merging inputs


def messages_ready_to_merge(project: Project, message_ids=None):
    """Messages whose every assignment is finished, with at least ``overlap_k`` done, and that
    have neither gold nor a place in the adjudication queue."""
    qs = Message.objects.filter(project=project, decision__isnull=True, adjudication_item__isnull=True)
    if message_ids is not None:
        qs = qs.filter(pk__in=message_ids)
    return (
        qs.annotate(
            n_done=Count("assignments", filter=Q(assignments__status=DONE)),
            n_open=Count("assignments", filter=Q(assignments__status__in=[
                Assignment.Status.PENDING, Assignment.Status.IN_PROGRESS])),
        )
        .filter(n_done__gte=max(project.overlap_k, 1), n_open=0)
        .order_by("pk")
    )


def message_has_open_assignments(message: Message) -> bool:
    """Someone still labels it (not started, in progress or reopened): it cannot merge yet."""
    return message.assignments.filter(
        status__in=[Assignment.Status.PENDING, Assignment.Status.IN_PROGRESS]).exists()


@dataclass(frozen=True)
class Note:
    """What an annotator told the adjudicator on an item: a comment, an "uncertain" flag, or both."""

    text: str
    uncertain: bool


@dataclass
class ItemEvidence:
    """What annotators did on one message, keyed by their project pseudonym."""

    message: Message
    spans: dict[str, list[Span]] = field(default_factory=dict)
    conditions: dict[str, str] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)  # pseudonyms in assignment order
    model: dict[tuple, list[int]] = field(default_factory=dict)
    notes: dict[str, Note] = field(default_factory=dict)  # only annotators who left one

    @property
    def uncertain(self) -> bool:
        """Someone flagged the item uncertain: it goes to a person even when everyone agrees."""
        return any(n.uncertain for n in self.notes.values())


def evidence_for(project: Project, messages: list[Message]) -> list[ItemEvidence]:
    names = pseudonyms(project)
    ids = [m.pk for m in messages]
    assignments = list(
        Assignment.objects.filter(message_id__in=ids, status=DONE)
        .order_by("message_id", "pk")
        .values_list("pk", "message_id", "annotator_id", "condition", "comment", "uncertain")
    )
    spans = spans_by_assignment([a[0] for a in assignments])
    preds = predictions_by_message(ids, model_run_ids(project))
    by_msg = {m.pk: ItemEvidence(message=m, model=dict(preds.get(m.pk, {}))) for m in messages}
    for aid, mid, uid, cond, comment, uncertain in assignments:
        ev = by_msg[mid]
        name = names.get(uid, f"user{uid}")
        ev.spans[name] = sorted(spans.get(aid, []))
        ev.conditions[name] = cond
        ev.order.append(name)
        if comment or uncertain:
            ev.notes[name] = Note(comment, uncertain)
    return [by_msg[m.pk] for m in messages]


# ----------------------------------------------------------------------------------- the queue


@figure
def ready_to_merge_count(project: Project, *, use_cache: bool = False) -> int:
    """How many messages :func:`messages_ready_to_merge` holds. With ``use_cache`` (pages; the
    merge itself always asks the database), as counted at the project's revision
    (:mod:`annotator.selectors.figures`): a submit, a merge and a merge failure each record an
    audit event, so each recounts."""
    if use_cache:
        return cached(project, ready_to_merge_count)
    return messages_ready_to_merge(project).count()


@figure
def queue_counts(project: Project, *, use_cache: bool = False) -> dict[str, int]:
    """Open, leak, settled and gold counts and the items ready to merge; with ``use_cache`` as
    counted at the project's revision."""
    if use_cache:
        return cached(project, queue_counts)
    agg = AdjudicationItem.objects.filter(project=project).aggregate(
        open=Count("pk", filter=Q(status=AdjudicationItem.Status.OPEN)),
        leaks=Count("pk", filter=Q(status=AdjudicationItem.Status.OPEN, risk=3)),
        settled=Count("pk", filter=Q(status=AdjudicationItem.Status.SETTLED)),
    )
    agg["gold"] = AdjudicationDecision.objects.filter(message__project=project).count()
    agg["ready"] = ready_to_merge_count(project)
    return agg


def merge_health(project: Project, *, use_cache: bool = False) -> dict:
    """For admins: how many finished items are still out of gold, and the last merge failure
    (``recovered`` once nothing waits any more)."""
    unmerged = ready_to_merge_count(project, use_cache=use_cache)
    event = (AuditEvent.objects.filter(project=project, action=MERGE_FAILED)
             .order_by("-created_at", "-pk").first())
    failure = None
    if event is not None:
        failure = {"at": event.created_at, "error": event.details.get("error", ""),
                   "retries": event.details.get("retries", 0), "recovered": unmerged == 0}
    return {"unmerged": unmerged, "last_failure": failure}


NOTE_FILTERS = {
    "notes": Q(comment__gt=""),  # an annotator wrote a comment
    "uncertain": Q(uncertain=True),  # an annotator flagged the item uncertain
}


def _noted(flag: str) -> Exists:
    """A finished assignment of the item's message carries this kind of note (the notes the item
    page shows are the finished assignments' too)."""
    return Exists(Assignment.objects.filter(NOTE_FILTERS[flag], message_id=OuterRef("message_id"), status=DONE))


def queue_page(project: Project, *, status: str = "open", flag: str = "", q: str = "", after: str = "",
               before: str = "", per_page: int = 50) -> dict:
    """One page of the queue in risk order (:data:`AdjudicationItem.QUEUE_ORDER`: risk, weight,
    then the message's dialogue and position, carried by the item), after or before a cursor
    (:func:`~annotator.selectors.ordered_keyset_page`: the index ``adjudication_queue_order``
    serves any page, however deep, from its own rows). ``flag`` ("notes", "uncertain") keeps the
    items an annotator commented on or flagged uncertain, ``q`` the items whose dialogue id or
    message text contains it. Each row knows whether it has notes or an uncertain flag.
    Unfiltered, ``total`` is the queue's count at the project's revision (:func:`queue_counts`);
    filtered, the matches when they fit on one page, else None (counting them would read the
    whole queue, as the annotator's queue does)."""
    qs = AdjudicationItem.objects.filter(project=project, status=status)
    if flag:
        qs = qs.filter(_noted(flag))
    if q:
        qs = qs.filter(Q(message__dialogue__external_id__icontains=q) | Q(message__text__icontains=q))
    out = ordered_keyset_page(
        qs, AdjudicationItem.QUEUE_ORDER, after=after, before=before, per_page=per_page,
        rows=AdjudicationItem.objects.select_related("message", "message__dialogue").annotate(
            has_notes=_noted("notes"), has_uncertain=_noted("uncertain")),
    )
    if not flag and not q and status in (AdjudicationItem.Status.OPEN, AdjudicationItem.Status.SETTLED):
        out["total"] = queue_counts(project, use_cache=True)[status]
    else:
        out["total"] = None if out["has_next"] or out["has_prev"] else len(out["rows"])
    return out


def next_open_item(project: Project, *, exclude: int | None = None) -> AdjudicationItem | None:
    """The riskiest open item, in the queue's order (the item page's "Save gold and next")."""
    qs = AdjudicationItem.objects.filter(project=project, status=AdjudicationItem.Status.OPEN)
    if exclude is not None:
        qs = qs.exclude(pk=exclude)
    return qs.order_by(*AdjudicationItem.QUEUE_ORDER).first()


def item_context(item: AdjudicationItem) -> dict:
    """The adjudication workspace for one item: anonymised annotators with their spans and notes
    (comment, "uncertain"), candidate spans, and the model's predictions only when the project
    shows them to adjudicators."""
    project = item.project
    message = item.message
    ev = evidence_for(project, [message])[0]
    colors = taxonomy_colors(project.taxonomy)
    number = {name: i + 1 for i, name in enumerate(ev.order)}  # Annotator 1, 2, 3 on this item
    rows = []
    for name in ev.order:
        marks = [Mark(s.start, s.end, s.label) for s in ev.spans[name]]
        rows.append({"n": number[name], "html": highlight(message.text, marks, colors),
                     "count": len(ev.spans[name]), "note": ev.notes.get(name)})
    who: dict[tuple, list[int]] = defaultdict(list)
    for name in ev.order:
        for s in ev.spans[name]:
            who[s.key()].append(number[name])
    k = len(ev.order)
    current = None
    if item.decision_id:
        current = {g.key() for g in _gold_spans(message)}
    candidates = []
    show_model = project.show_predictions_to_adjudicators
    keys = set(who)
    if current:
        keys |= current
    for i, key in enumerate(sorted(keys)):
        start, end, label = key
        marked = who.get(key, [])
        checked = (key in current) if current is not None else (2 * len(marked) > k)
        candidates.append({
            "i": i + 1, "value": f"{start}:{end}:{label}", "start": start, "end": end, "label": label,
            "text": message.text[start:end], "annotators": marked, "checked": checked,
            "model": show_model and key in ev.model, "color": colors.get(label, "#fde68a"),
        })
    model_html = None
    if show_model:
        model_html = highlight(message.text, [Mark(s, e, lab, css="suggestion") for (s, e, lab) in ev.model],
                               colors)
    return {
        "item": item, "project": project, "message": message,
        "window": message_window(message, project.context_window),
        "annotator_rows": rows, "candidates": candidates, "show_model": show_model,
        "model_html": model_html, "risk": item.risk_details, "noted": bool(ev.notes),
        "target_html": highlight(message.text, [], colors),
    }


def _gold_spans(message: Message) -> list[Span]:
    return [Span(s, e, lab) for s, e, lab in
            GoldSpan.objects.filter(message=message).values_list("start", "end", "label")]
