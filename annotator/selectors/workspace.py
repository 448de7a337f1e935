"""Reads of the annotation workspace: the queue, the item window, suggestions, statistics.

Blindness is decided here, once: :func:`item_context` only ever reads predictions when the
assignment's condition is aware, so a blind item's context holds nothing of the model; and the
adjudicator's decision it shows (:func:`decision_for`) is the gold spans and the reply only.
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from django.db import connection
from django.db.models import Aggregate, Count, FloatField, Q

from annotator.models import (
    AdjudicationDecision,
    Annotation,
    Assignment,
    AssignmentPlan,
    GoldSpan,
    Prediction,
    Project,
    QueueCount,
)
from annotator.rendering import Mark, context, highlight, overlapping, taxonomy_colors
from annotator.selectors import keyset_page
from annotator.selectors.figures import cached, figure
from annotator.selectors.keymap import workspace_keymap
from annotator.selectors.projects import message_window, pseudonyms

Status = Assignment.Status
Origin = Annotation.Origin
OPEN = (Status.PENDING, Status.IN_PROGRESS)


# ----------------------------------------------------------------------------------- queue

def next_assignment(user, project: Project) -> Assignment | None:
    """The first unfinished item in queue (dialogue) order; skipped items wait for the list."""
    return (
        Assignment.objects.filter(annotator=user, project=project, status__in=OPEN)
        .order_by("order").only("public_id").first()
    )


def queue_progress(user, project: Project, *, order: int | None = None) -> dict:
    """Counts of the annotator's queue (``user`` is a user or a user id), from the counters kept
    with every write (:class:`~annotator.models.QueueCount`: one row, not the queue counted); with
    ``order``, the item's queue number, the # the queue list shows (counting the items before it
    would read the queue up to it on every item opened)."""
    uid = getattr(user, "pk", user)
    row = QueueCount.objects.filter(project=project, annotator_id=uid).first() or QueueCount()
    agg = {"total": row.total, "done": row.done, "skipped": row.skipped}
    agg["left"] = agg["total"] - agg["done"] - agg["skipped"]
    agg["percent"] = round(100 * agg["done"] / agg["total"]) if agg["total"] else 0
    if order is not None:
        agg["position"] = order + 1
    return agg


def queue_page(user, project: Project, *, status: str = "", q: str = "", after: str = "", before: str = "",
               per_page: int = 50) -> dict:
    """A page of the annotator's own queue in queue order, after or before a cursor
    (:func:`~annotator.selectors.keyset_page`), optionally of one status and matching ``q`` (in the
    dialogue id or the message text). ``total`` is the queue's or the status's size from the
    counters; with ``q``, the matches when they fit on one page, else None (counting them all
    would read the whole queue)."""
    qs = Assignment.objects.filter(annotator=user, project=project)
    if status:
        qs = qs.filter(status=status)
    if q:
        qs = qs.filter(Q(message__dialogue__external_id__icontains=q) | Q(message__text__icontains=q))
    out = keyset_page(
        qs.select_related("message", "message__dialogue")
        .only("public_id", "status", "order", "uncertain", "no_pii", "active_seconds",
              "message__position", "message__text", "message__dialogue__external_id"),
        after=after, before=before, per_page=per_page,
    )
    if q:
        out["total"] = None if out["has_next"] or out["has_prev"] else len(out["rows"])
        return out
    counts = QueueCount.objects.filter(project=project, annotator=user).first() or QueueCount()
    out["total"] = getattr(counts, status) if status else counts.total
    return out


# ----------------------------------------------------------------------------------- one item

def suggestion_run_ids(project: Project) -> list[int]:
    """Runs whose predictions an aware annotator sees (the project's choice)."""
    return list(project.suggestion_runs.values_list("pk", flat=True))


def suggestions(assignment: Assignment, annotations=None) -> tuple[list[Prediction], set[int]]:
    """The item's suggestions (one per distinct span and label) and the ids already decided.

    Empty for anything but an aware assignment: this is the only reader of predictions for
    annotators. ``annotations`` (the assignment's, if already loaded) saves a query.
    """
    if assignment.condition != Assignment.Condition.AWARE:
        return [], set()
    runs = Project.suggestion_runs.through.objects.filter(project_id=assignment.project_id).values("detectorrun_id")
    preds = list(
        Prediction.objects.filter(message_id=assignment.message_id, run_id__in=runs)
        .only("pk", "start", "end", "label", "score", "run_id", "message_id").order_by("start", "-score", "pk")
    )
    if annotations is None:
        annotations = list(assignment.annotations.all())
    decided_pids = {a.prediction_id for a in annotations if a.prediction_id}
    decided_keys = {(p.start, p.end, p.label) for p in preds if p.pk in decided_pids}
    unique: dict[tuple[int, int, str], Prediction] = {}
    for p in preds:
        unique.setdefault((p.start, p.end, p.label), p)
    rows = sorted(unique.values(), key=lambda p: (p.start, p.end))
    return rows, {p.pk for p in rows if (p.start, p.end, p.label) in decided_keys}


def pending_suggestions(assignment: Assignment, annotations=None) -> list[Prediction]:
    rows, decided = suggestions(assignment, annotations)
    return [p for p in rows if p.pk not in decided]


def mark_overlaps(text: str, marks: list[Mark]) -> dict[tuple[str, int], list[dict]]:
    """("s" suggestion | "a" span, pk) -> what it overlaps in the text: focus key, kind, label,
    offsets and text of each, so the lists say what overlaps what (the highlight nests them).
    Decided suggestions are not in the text (an accepted one is a span now) and are left out."""
    def key(m: Mark) -> tuple[str, int]:
        attrs = m.attrs or {}
        return ("s", int(attrs["data-suggestion"])) if "data-suggestion" in attrs else ("a", int(attrs["data-id"]))

    def row(m: Mark) -> dict:
        kind, pk = key(m)
        return {"focus": f"{kind}{pk}", "kind": "suggestion" if kind == "s" else "your span", "label": m.label,
                "start": m.start, "end": m.end, "text": text[m.start:m.end]}

    return {key(marks[i]): [row(marks[j]) for j in others]
            for i, others in enumerate(overlapping(marks)) if others}


def item_context(assignment: Assignment, *, page: bool = False) -> dict:
    """Everything the item fragment shows (and, for the whole page, the queue progress).
    Predictions are read only for aware items."""
    project = assignment.project
    aware = assignment.condition == Assignment.Condition.AWARE
    colors = taxonomy_colors(project.taxonomy)
    annotations = list(assignment.annotations.order_by("start", "pk"))
    spans = [a for a in annotations if a.origin != Origin.REJECTED]
    shown, decided = suggestions(assignment, annotations) if aware else ([], set())
    pending = [p for p in shown if p.pk not in decided]
    decisions = {a.prediction_id: a for a in annotations if a.prediction_id}
    marks = [Mark(s.start, s.end, s.label, css="span own", attrs={"data-id": str(s.pk)}) for s in spans]
    marks += [Mark(p.start, p.end, p.label, css="suggestion", attrs={"data-suggestion": str(p.pk)})
              for p in pending]
    text = assignment.message.text
    target_html = highlight(text, marks, colors)
    overlaps = mark_overlaps(text, marks)
    suggestion_rows = []
    if aware:
        for p in shown:
            d = decisions.get(p.pk)
            suggestion_rows.append({
                "pk": p.pk, "label": p.label, "text": text[p.start:p.end], "start": p.start, "end": p.end,
                "state": "pending" if p.pk not in decided else (d.get_origin_display() if d else "decided"),
                "color": colors.get(p.label, "#fde68a"), "context": context(text, p.start, p.end),
                "overlaps": overlaps.get(("s", p.pk), []),
            })
    window = message_window(assignment.message, assignment.project.context_window)
    return {
        "assignment": assignment,
        "project": project,
        "aware": aware,
        "window": window,
        "target_html": target_html,
        "spans": [{"pk": s.pk, "label": s.label, "text": text[s.start:s.end], "start": s.start, "end": s.end,
                   "color": colors.get(s.label, "#fde68a"), "overlaps": overlaps.get(("a", s.pk), [])}
                  for s in spans],
        # the undecided ones above the annotator's spans, the decided ones below them: a span just
        # added then shows under the work left to do, never under a long list of what is done
        "suggestions": [r for r in suggestion_rows if r["state"] == "pending"],
        "decided": [r for r in suggestion_rows if r["state"] != "pending"],
        "pending_count": len(pending),
        "can_undo": bool(assignment.undo_log),
        "decision": decision_for(assignment),
        **({"progress": queue_progress(assignment.annotator_id, project, order=assignment.order),
            "keymap": workspace_keymap(project.taxonomy, aware=aware)} if page else {}),
    }


def decision_for(assignment: Assignment) -> dict | None:
    """The adjudicator's decision on this submitted item, for its annotator: the gold spans (label
    and text) and the reply. Only an adjudicated decision (an automatic merge has nothing to
    explain, and a majority's gold would tell who disagreed) that rested on this annotator's
    submitted work (``details["annotators"]``: someone assigned the message later never sees the
    answer before labelling), and only while the item is submitted. Nothing else of the decision
    leaves here: not the other annotators' spans or notes, not the adjudicator's own notes, not
    which spans a model matched (a blind annotator sees no trace of the model)."""
    if assignment.status != Status.DONE:
        return None
    decision = (AdjudicationDecision.objects.filter(
        message_id=assignment.message_id, outcome=AdjudicationDecision.Outcome.ADJUDICATED)
        .only("pk", "reply", "details", "decided_at").first())
    if decision is None:
        return None
    me = pseudonyms(assignment.project).get(assignment.annotator_id)
    if me is None or me not in {a.get("annotator") for a in decision.details.get("annotators", [])}:
        return None
    text = assignment.message.text
    gold = GoldSpan.objects.filter(decision=decision).order_by("start", "end").values_list("start", "end", "label")
    return {"reply": decision.reply, "decided_at": decision.decided_at,
            "spans": [{"label": lab, "text": text[s:e]} for s, e, lab in gold]}


# ----------------------------------------------------------------------------------- admin

def plans(project: Project, limit: int = 20):
    return list(AssignmentPlan.objects.filter(project=project).select_related("created_by")[:limit])


class Median(Aggregate):
    """The median of a column, in the database (PostgreSQL's ``percentile_cont(0.5)``: the mean of
    the two middle values for an even count, as :func:`statistics.median`)."""

    function = "percentile_cont"
    template = "%(function)s(0.5) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()


@figure
def annotator_stats(project: Project, *, use_cache: bool = False) -> list[dict]:
    """Per annotator: items, done, skipped, median active seconds per done item, and in the aware
    condition the share of decided suggestions accepted without edit.

    With ``use_cache``, as computed at the project's revision (:mod:`annotator.selectors.figures`). Two grouped
    queries; on PostgreSQL the median is an aggregate of the first, elsewhere it is computed here
    from the done items' seconds (a third query)."""
    if use_cache:
        return cached(project, annotator_stats)
    in_db = connection.vendor == "postgresql"
    rows: dict[int, dict] = {}
    for r in (
        Assignment.objects.filter(project=project)
        .values("annotator_id", "annotator__username")
        .annotate(
            total=Count("pk"),
            done=Count("pk", filter=Q(status=Status.DONE)),
            skipped=Count("pk", filter=Q(status=Status.SKIPPED)),
            aware=Count("pk", filter=Q(condition=Assignment.Condition.AWARE)),
            uncertain=Count("pk", filter=Q(uncertain=True)),
            **({"median": Median("active_seconds", filter=Q(status=Status.DONE))} if in_db else {}),
        )
        .order_by("annotator__username")
    ):
        median = r.pop("median", None)
        rows[r["annotator_id"]] = {**r, "username": r["annotator__username"],
                                   "median_seconds": round(median, 1) if median is not None else None,
                                   "accept_rate": None, "decided": 0}
    if not in_db:
        times: dict[int, list[float]] = defaultdict(list)
        for uid, sec in Assignment.objects.filter(project=project, status=Status.DONE).values_list(
            "annotator_id", "active_seconds"
        ):
            times[uid].append(sec)
        for uid, values in times.items():
            if uid in rows:
                rows[uid]["median_seconds"] = round(statistics.median(values), 1)
    for r in (
        Annotation.objects.filter(assignment__project=project, condition=Assignment.Condition.AWARE,
                                  prediction__isnull=False)
        .values("assignment__annotator_id")
        .annotate(decided=Count("pk"), accepted=Count("pk", filter=Q(origin=Origin.ACCEPTED)))
    ):
        row = rows.get(r["assignment__annotator_id"])
        if row is not None and r["decided"]:
            row["decided"] = r["decided"]
            row["accept_rate"] = round(100 * r["accepted"] / r["decided"], 1)
    return list(rows.values())
