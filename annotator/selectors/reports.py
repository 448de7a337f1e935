"""Reads of the reports: the inputs of the agreement, circularity and detectors-versus-gold
computations (as :mod:`pipeline` dataclasses), and the newest report jobs.

Annotators appear here only under the project's pseudonyms (``Membership.pseudonym``).
"""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Count, Max

from annotator.models import (
    AdjudicationDecision,
    Assignment,
    AssignmentPlan,
    BackgroundJob,
    DetectorRun,
    GoldSpan,
    Message,
    MessageSegment,
    Prediction,
    Project,
)
from annotator.selectors.adjudication import (
    DONE,
    evidence_for,
    model_run_ids,
    predictions_by_message,
    spans_by_assignment,
)
from annotator.selectors.exports import gold_state_cached
from annotator.selectors.projects import pseudonyms, segment_run
from pipeline.adjudication import SettledItem
from pipeline.metrics.agreement import AnnotatedItem, AnnotatorLabels
from pipeline.types import Span

Key = tuple[str, int]


# ----------------------------------------------------------------------------------- report inputs


def agreement_items(project: Project) -> list[AnnotatedItem]:
    """Every message with finished assignments, as the agreement functions take it."""
    names = pseudonyms(project)
    assignments = list(
        Assignment.objects.filter(project=project, status=DONE)
        .values_list("pk", "message_id", "annotator_id", "condition", "active_seconds")
        .iterator(chunk_size=5000)
    )
    spans = spans_by_assignment([a[0] for a in assignments])
    by_msg: dict[int, dict[str, AnnotatorLabels]] = defaultdict(dict)
    for aid, mid, uid, cond, secs in assignments:
        by_msg[mid][names.get(uid, f"user{uid}")] = AnnotatorLabels(
            tuple(sorted(spans.get(aid, ()))), cond, secs or None)
    seg_run = segment_run(project)
    segments = {}
    if seg_run is not None:
        segments = dict(MessageSegment.objects.filter(run=seg_run).values_list("message_id", "segment"))
    items = []
    rows = (Message.objects.filter(pk__in=list(by_msg)).order_by("dialogue_id", "position")
            .values_list("pk", "dialogue__external_id", "position", "text", "speaker_role"))
    for mid, did, pos, text, role in rows.iterator(chunk_size=5000):
        items.append(AnnotatedItem(did, pos, text, role, segments.get(mid), by_msg[mid]))
    return items


def run_predictions(run: DetectorRun) -> dict[Key, tuple[Span, ...]]:
    out: dict[Key, list[Span]] = defaultdict(list)
    rows = Prediction.objects.filter(run=run).values_list(
        "message__dialogue__external_id", "message__position", "start", "end", "label", "score", "source_label")
    for did, pos, start, end, label, score, source in rows.iterator(chunk_size=5000):
        out[(did, pos)].append(Span(start, end, label, score or 1.0, source or ""))
    return {k: tuple(sorted(v)) for k, v in out.items()}


def settled_items(project: Project, run: DetectorRun | None = None) -> list[SettledItem]:
    """Adjudicated items with each annotator's spans, the model's spans and the final gold."""
    decisions = list(
        AdjudicationDecision.objects.filter(message__project=project,
                                            outcome=AdjudicationDecision.Outcome.ADJUDICATED)
        .values_list("message_id", flat=True)
    )
    if not decisions:
        return []
    messages = list(Message.objects.filter(pk__in=decisions))
    evidence = evidence_for(project, messages)
    run_ids = [run.pk] if run is not None else model_run_ids(project)
    preds = predictions_by_message(decisions, run_ids)
    gold: dict[int, list[Span]] = defaultdict(list)
    for mid, s, e, lab in GoldSpan.objects.filter(message_id__in=decisions).values_list(
            "message_id", "start", "end", "label"):
        gold[mid].append(Span(s, e, lab))
    return [
        SettledItem(annotations=ev.spans, model_spans=[Span(*k) for k in preds.get(ev.message.pk, {})],
                    gold=gold.get(ev.message.pk, []))
        for ev in evidence
    ]


def scorable_runs(project: Project):
    return list(DetectorRun.objects.filter(project=project, status=DetectorRun.Status.SUCCEEDED)
                .order_by("-created_at"))


def scoring_state(project: Project) -> dict:
    """Everything a run's scores against gold rest on besides the run itself, in a few indexed
    queries: the gold decisions (:func:`annotator.selectors.exports.gold_state`: new, revised,
    removed or reopened; cached per project revision), the sampling plans (the design weights),
    the segment run and the labels. Scores computed under an equal state are still right."""
    plans = AssignmentPlan.objects.filter(project=project).aggregate(n=Count("pk"), last=Max("pk"))
    seg = segment_run(project)
    return {"gold": gold_state_cached(project), "plans": [plans["n"], plans["last"]],
            "segments": seg.pk if seg is not None else None, "labels": list(project.labels)}


def latest_job(project: Project, kind: str, **params) -> BackgroundJob | None:
    qs = BackgroundJob.objects.filter(project=project, kind=kind)
    for k, v in params.items():
        qs = qs.filter(**{f"params__{k}": v})
    return qs.order_by("-created_at").first()


def latest_result(project: Project, kind: str, **params) -> BackgroundJob | None:
    qs = BackgroundJob.objects.filter(project=project, kind=kind, status=BackgroundJob.Status.SUCCEEDED)
    for k, v in params.items():
        qs = qs.filter(**{f"params__{k}": v})
    return qs.order_by("-finished_at", "-pk").first()


def segments_by_key(project: Project, keys) -> dict[Key, str] | None:
    """MATH / NON-MATH of the given messages from the newest segment run; None without one."""
    run = segment_run(project)
    if run is None:
        return None
    wanted = set(keys)
    rows = MessageSegment.objects.filter(run=run).values_list(
        "message__dialogue__external_id", "message__position", "segment")
    return {(d, p): seg for d, p, seg in rows.iterator(chunk_size=5000) if (d, p) in wanted}
