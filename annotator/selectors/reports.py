"""Reads of the reports: the inputs of the agreement, circularity and detectors-versus-gold
computations (as :mod:`pipeline` dataclasses), a run scored against the current gold set (the
one scoring the run page and the detectors-versus-gold report both show), and the newest report
jobs.

Annotators appear here only under the project's pseudonyms (``Membership.pseudonym``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Exists, Max, OuterRef, Sum

from annotator.models import (
    AdjudicationDecision,
    Annotation,
    Assignment,
    AssignmentPlan,
    BackgroundJob,
    DetectorRun,
    Message,
    MessageSegment,
    Prediction,
    Project,
    RunChunk,
)
from annotator.selectors import assignments as sampling
from annotator.selectors.adjudication import DONE
from annotator.selectors.dialogues import gold_messages
from annotator.selectors.exports import gold_state_cached
from annotator.selectors.ordered import InOrder, Order, spans_in_order
from annotator.selectors.projects import pseudonyms, segment_run
from pipeline.metrics.agreement import AnnotatedItem, AnnotatorLabels
from pipeline.metrics.circularity import CircularityItem
from pipeline.metrics.evaluation import (
    EvaluationReport,
    ScoredMessage,
    Scoring,
)
from pipeline.types import Span

Key = tuple[str, int]
DEFAULT_BOOT = 1000
CHUNK = 10_000  # rows per fetch of a streamed read


# ----------------------------------------------------------------------------------- report inputs


def agreement_items(project: Project) -> Iterator[AnnotatedItem]:
    """Every message with finished assignments, as the agreement functions take it, in dialogue
    order, one at a time (the agreement report keeps what it needs of each, not the items)."""
    for _order, item in _items_in_order(project):
        yield item


def _items_in_order(project: Project) -> Iterator[tuple[Order, AnnotatedItem]]:
    """:func:`agreement_items` with each item's order, ``(dialogue pk, position)``.

    Streamed reads whatever the gold's size, each joined in the database and all in one order:
    the finished assignments with their messages (a message's assignments come together and make
    one item), their spans and the messages' segments, merged here as they come. Nothing of the
    project is held: the spans were once read first into a dict of every assignment.
    The ids of 2 million assignments sent back as ``IN`` lists cost more than the rows themselves;
    reading the messages apart (``EXISTS`` a finished assignment) left the join's direction to the
    planner, and two report jobs on gold for 200 dialogues of a million messages took 63 s and 43 s."""
    names = pseudonyms(project)
    done = Assignment.objects.filter(project=project, status=DONE)
    spans = InOrder(spans_in_order(
        Annotation.objects.filter(assignment__in=done).exclude(origin=Annotation.Origin.REJECTED)
        .order_by("assignment__message__dialogue_id", "assignment__message__position", "assignment_id")
        .values_list("assignment__message__dialogue_id", "assignment__message__position", "assignment_id",
                     "start", "end", "label").iterator(chunk_size=CHUNK), 3))
    seg_run = segment_run(project)
    segments = _segments_in_order(seg_run, MessageSegment.objects.all())
    rows = (done.order_by("message__dialogue_id", "message__position", "pk")
            .values_list("message__dialogue_id", "message__position", "message__dialogue__external_id",
                         "message__text", "message__speaker_role", "pk", "annotator_id", "condition", "active_seconds"))
    item, order = None, None
    shared: dict[str, str] = {}  # one string per dialogue id, role and condition, not one per row
    for dpk, pos, did, text, role, aid, uid, cond, secs in rows.iterator(chunk_size=CHUNK):
        if order != (dpk, pos):
            if item is not None:
                yield order, item
            order = (dpk, pos)
            did, role = shared.setdefault(did, did), shared.setdefault(role, role)
            item = AnnotatedItem(did, pos, text, role, segments.pop(order), {})
        item.annotations[names.get(uid, f"user{uid}")] = AnnotatorLabels(
            spans.pop((dpk, pos, aid), ()), shared.setdefault(cond, cond), secs or None)
    if item is not None:
        yield order, item


def circularity_items(project: Project, run: DetectorRun) -> Iterator[CircularityItem]:
    """:func:`agreement_items` with the run's spans on each and, where an adjudicator settled
    it, the final gold: the circularity check's input, streamed in dialogue order (three more
    sorted reads merged as they come; the run's predictions and the gold are never held)."""
    finished = Exists(Assignment.objects.filter(message_id=OuterRef("message_id"), status=DONE))
    predictions = _predictions_in_order(Prediction.objects.filter(run=run).filter(finished))
    adjudicated = InOrder(spans_in_order(
        Message.objects.filter(project=project, decision__outcome=AdjudicationDecision.Outcome.ADJUDICATED)
        .order_by("dialogue_id", "position")
        .values_list("dialogue_id", "position", "gold_spans__start", "gold_spans__end", "gold_spans__label")
        .iterator(chunk_size=CHUNK), 2))
    for order, item in _items_in_order(project):
        yield CircularityItem(item, predictions.pop(order, ()), adjudicated.pop(order))


def _predictions_in_order(predictions) -> InOrder:
    """These predictions' spans per message, read in dialogue order for a merge join."""
    rows = (predictions.order_by("message__dialogue_id", "message__position")
            .values_list("message__dialogue_id", "message__position", "start", "end", "label", "score", "source_label"))
    return InOrder(spans_in_order(rows.iterator(chunk_size=CHUNK), 2, _predicted_span))


def _predicted_span(start: int, end: int, label: str, score: float | None, source: str | None) -> Span:
    return Span(start, end, label, score or 1.0, source or "")


def _segments_in_order(seg_run: DetectorRun | None, segments) -> InOrder:
    """MATH / NON-MATH of these segments of ``seg_run`` per message, in dialogue order for a merge
    join (none without a segment run)."""
    if seg_run is None:
        return InOrder(())
    rows = (segments.filter(run=seg_run).order_by("message__dialogue_id", "message__position")
            .values_list("message__dialogue_id", "message__position", "segment"))
    return InOrder(((d, p), seg) for d, p, seg in rows.iterator(chunk_size=CHUNK))


def scorable_runs(project: Project):
    return list(DetectorRun.objects.filter(project=project, status=DetectorRun.Status.SUCCEEDED)
                .order_by("-created_at"))


def scoring_state(run: DetectorRun) -> dict:
    """Everything a run's scores against gold rest on, in a few indexed queries: the gold
    decisions (:func:`annotator.selectors.exports.gold_state`: new, revised, removed or reopened;
    cached per project revision), the sampling plans (the design weights), the segment run, the
    labels, and what the run covered (:func:`coverage_state`). Scores computed under an equal
    state are still right."""
    project = run.project
    plans = AssignmentPlan.objects.filter(project=project).aggregate(n=Count("pk"), last=Max("pk"))
    seg = segment_run(project)
    return {"gold": gold_state_cached(project), "plans": [plans["n"], plans["last"]],
            "segments": seg.pk if seg is not None else None, "labels": list(project.labels),
            "coverage": coverage_state(run)}


def coverage_state(run: DetectorRun) -> list:
    """A fingerprint of the run's finished chunks (how many, their messages, the last finish):
    it moves when a resumed run covers more, so scores on the old coverage are not shown as current."""
    done = RunChunk.objects.filter(run=run, status=RunChunk.Status.DONE).aggregate(
        n=Count("pk"), messages=Sum("message_count"), last=Max("finished_at"))
    return [done["n"], done["messages"], done["last"]]


def covered_dialogues(run: DetectorRun) -> set[int] | None:
    """The pks of the dialogues ``run`` covered: those of its finished chunks (a detector run's
    slices; an imported run's one chunk holds the dialogues of its import). None for a run that
    records no chunks at all (one made outside the services): it claims the whole project, so it
    is scored on all of it."""
    chunks = list(RunChunk.objects.filter(run=run).values_list("status", "dialogue_ids"))
    if not chunks:
        return None
    return {pk for status, ids in chunks if status == RunChunk.Status.DONE for pk in ids}


def report_is_stale(job: BackgroundJob | None) -> bool:
    """Has gold changed since this report job computed its figures? It recorded the fingerprint of
    gold it read (:func:`annotator.selectors.exports.gold_state`); a report from before that was
    recorded cannot tell, and is not marked."""
    then = (job.result or {}).get("gold_state") if job is not None else None
    return then is not None and gold_state_cached(job.project) != then


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


def report_pending(project: Project, kind: str, **params) -> BackgroundJob | None:
    """The report job of ``kind`` still queued or running, if the newest one is."""
    job = latest_job(project, kind, **params)
    return job if job is not None and not job.is_finished else None


def report_failed(project: Project, kind: str, done_job: BackgroundJob | None, **params) -> BackgroundJob | None:
    """The newest job of ``kind`` if it failed after the result shown (``done_job``) was computed."""
    last = latest_job(project, kind, **params)
    if last is not None and last.status == BackgroundJob.Status.FAILED and (
            done_job is None or last.created_at > done_job.created_at):
        return last
    return None


# ----------------------------------------------------------------------------------- scoring against gold


@dataclass(frozen=True)
class GoldInputs:
    """What scoring any run against the current gold set reads once for all runs: how many gold
    messages there are, their sampling weights and the labels. The gold itself is streamed for
    the runs at once (:func:`score_runs`), never held."""

    project: Project
    n_messages: int
    weights: dict[Key, float]
    labels: tuple[str, ...]
    weighting: dict[str, Any]


def gold_inputs(project: Project) -> GoldInputs | None:
    """The gold set's size and design weights (one streamed read of its keys); None without gold."""
    weights = sampling.design_weights(project)
    n, used = 0, []
    keys = (Message.objects.filter(project=project, decision__isnull=False)
            .values_list("dialogue__external_id", "position").iterator(chunk_size=CHUNK))
    for key in keys:
        n += 1
        if weights.get(key, 1.0) != 1.0:
            used.append(weights[key])
    if not n:
        return None
    weighting = {"weighted": bool(used), "items_weighted": len(used),
                 "max_weight": round(max(used), 4) if used else 1.0}
    return GoldInputs(project=project, n_messages=n, weights=weights, labels=tuple(project.labels),
                      weighting=weighting)


@dataclass(frozen=True)
class RunScore:
    """A run scored on the gold messages it covered: ``report`` is None when it covered none;
    ``coverage`` says how many of the project's gold messages that was (what the pages show)."""

    report: EvaluationReport | None
    coverage: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {**(self.report.to_dict() if self.report else {}), "coverage": self.coverage}


def score_runs(runs: Sequence[DetectorRun], inputs: GoldInputs, *, n_boot: int = DEFAULT_BOOT,
               seed: int = 0) -> list[RunScore]:
    """Each run against the gold of the messages it covered (:func:`covered_dialogues`), with the
    evaluation metrics, weighted by the sampling design: the one scoring that the run page and the
    detectors-versus-gold report both show. Gold the run never saw is not charged as misses.

    One pass over the gold for all the runs: the gold messages, their segments and each run's
    predictions are sorted streamed reads merged as they come (they were dicts of every message,
    hundreds of MB at a million; the gold read once per run cost 10 s a run there)."""
    project = inputs.project
    seg_run = segment_run(project)
    scored = []
    for run in runs:
        predictions = _predictions_in_order(Prediction.objects.filter(run=run, message__decision__isnull=False))
        scored.append((covered_dialogues(run), predictions, Scoring(inputs.labels, segmented=seg_run is not None)))
    segments = _segments_in_order(seg_run, MessageSegment.objects.filter(message__decision__isnull=False))
    for order, key, text, gold in gold_messages(project):
        segment, weight = segments.pop(order), float(inputs.weights.get(key, 1.0))
        for dialogues, predictions, scoring in scored:
            if dialogues is None or order[0] in dialogues:
                scoring.add(ScoredMessage(key, text, gold, predictions.pop(order, ()), segment, weight))
    out = []
    for dialogues, _predictions, scoring in scored:
        coverage = {"gold_messages": scoring.n_messages, "gold_total": inputs.n_messages,
                    "whole_project": dialogues is None, "dialogues": None if dialogues is None else len(dialogues)}
        report = scoring.report(n_boot=n_boot, seed=seed) if scoring.n_messages else None
        out.append(RunScore(report, coverage))
    return out


def evaluate_run(run: DetectorRun, *, n_boot: int = DEFAULT_BOOT) -> dict[str, Any] | None:
    """The run page's evaluation (None for a segments-only run or without gold)."""
    if run.detector == "math_segments":
        return None
    inputs = gold_inputs(run.project)
    if inputs is None:
        return None
    return score_runs([run], inputs, n_boot=n_boot, seed=0)[0].to_dict()


def detectors_against_gold(*, project: Project, n_boot: int = DEFAULT_BOOT, seed: int = 0) -> list[dict]:
    """Every succeeded run scored against the current gold set with the evaluation metrics
    (:class:`pipeline.metrics.evaluation.Scoring`, all runs in one pass over the gold): rows for the table, the full report for JSON."""
    inputs = gold_inputs(project)
    if inputs is None:
        return []
    out = []
    runs = scorable_runs(project)
    for run, scored in zip(runs, score_runs(runs, inputs, n_boot=n_boot, seed=seed), strict=True):
        report = scored.report
        if report is None:
            out.append({"run": run.pk, "name": run.label, "coverage": scored.coverage,
                        "error": f"covered none of the {inputs.n_messages} gold messages: nothing to score"})
            continue
        rows = []
        for level, label, score in report.scores():
            if score.n_pred + score.n_gold == 0:
                continue
            d = score.to_dict()
            row = {"level": level, "label": label, "n_pred": d["n_pred"], "n_gold": d["n_gold"]}
            for m in ("precision", "recall", "f1", "f2"):
                lo, hi = d["ci"].get(m, [None, None])
                row[m] = {"value": d[m], "ci_low": lo, "ci_high": hi}
            rows.append(row)
        full = scored.to_dict()
        out.append({"run": run.pk, "name": run.label, "detector": run.detector, "coverage": scored.coverage,
                    "version": run.detector_version or run.model_version, "rows": rows,
                    "n_messages": report.n_messages, "n_dialogues": report.n_dialogues, "n_boot": n_boot,
                    "weighting": inputs.weighting,
                    "ambiguity": full["ambiguity"], "utility": full["utility"], "evaluation": full})
    return out
