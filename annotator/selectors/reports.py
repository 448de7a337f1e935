"""Reads of the reports: the inputs of the agreement, circularity and detectors-versus-gold
computations (as :mod:`pipeline` dataclasses), a run scored against the current gold set (the
one scoring the run page and the detectors-versus-gold report both show), and the newest report
jobs.

Annotators appear here only under the project's pseudonyms (``Membership.pseudonym``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from itertools import groupby
from typing import Any

from django.db.models import Count, Exists, Max, OuterRef, Sum

from annotator.models import (
    AdjudicationDecision,
    Annotation,
    Assignment,
    AssignmentPlan,
    BackgroundJob,
    DetectorRun,
    Dialogue,
    Message,
    MessageSegment,
    Prediction,
    Project,
    RunChunk,
)
from annotator.selectors import assignments as sampling
from annotator.selectors.adjudication import DONE
from annotator.selectors.dialogues import gold_texts_and_spans
from annotator.selectors.exports import gold_state_cached
from annotator.selectors.projects import pseudonyms, segment_run
from pipeline.metrics.agreement import AnnotatedItem, AnnotatorLabels
from pipeline.metrics.circularity import CircularityItem
from pipeline.metrics.evaluation import EvaluationError, EvaluationReport, evaluate
from pipeline.types import Span

Key = tuple[str, int]
DEFAULT_BOOT = 1000
CHUNK = 10_000  # rows per fetch of a streamed read


# ----------------------------------------------------------------------------------- report inputs


Order = tuple[int, ...]  # (dialogue pk, position[, assignment pk]): the order every streamed read shares


class _InOrder:
    """The values of a stream of ``(order, value)`` pairs sorted by order, asked for in
    increasing order: a merge join of two streamed reads in Python, which holds neither. Keys
    never asked for are passed over."""

    def __init__(self, pairs: Iterable[tuple[Order, Any]]):
        self._pairs = iter(pairs)
        self._next = next(self._pairs, None)

    def pop(self, order: Order, default: Any = None) -> Any:
        while self._next is not None and self._next[0] < order:
            self._next = next(self._pairs, None)
        if self._next is None or self._next[0] != order:
            return default
        value = self._next[1]
        self._next = next(self._pairs, None)
        return value


def _spans_in_order(rows: Iterable[tuple], width: int, make=Span) -> Iterator[tuple[Order, tuple[Span, ...]]]:
    """``rows`` sorted by their first ``width`` columns, the rest a span's fields (a row of
    Nones: a left join that found none): one sorted tuple of spans per order."""
    for order, group in groupby(rows, key=lambda r: r[:width]):
        yield order, tuple(sorted(make(*r[width:]) for r in group if r[width] is not None))


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
    project is held: the spans were once read first into a dict of every assignment (issue 26).
    The ids of 2 million assignments sent back as ``IN`` lists cost more than the rows themselves;
    reading the messages apart (``EXISTS`` a finished assignment) left the join's direction to the
    planner, and two report jobs on gold for 200 dialogues of a million messages took 63 s and 43 s."""
    names = pseudonyms(project)
    done = Assignment.objects.filter(project=project, status=DONE)
    spans = _InOrder(_spans_in_order(
        Annotation.objects.filter(assignment__in=done).exclude(origin=Annotation.Origin.REJECTED)
        .order_by("assignment__message__dialogue_id", "assignment__message__position", "assignment_id")
        .values_list("assignment__message__dialogue_id", "assignment__message__position", "assignment_id",
                     "start", "end", "label").iterator(chunk_size=CHUNK), 3))
    seg_run = segment_run(project)
    segments = _InOrder(
        () if seg_run is None else
        (((d, p), seg) for d, p, seg in MessageSegment.objects.filter(run=seg_run)
         .order_by("message__dialogue_id", "message__position")
         .values_list("message__dialogue_id", "message__position", "segment").iterator(chunk_size=CHUNK)))
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
    predictions = _InOrder(_spans_in_order(
        Prediction.objects.filter(run=run).filter(finished)
        .order_by("message__dialogue_id", "message__position")
        .values_list("message__dialogue_id", "message__position", "start", "end", "label", "score",
                     "source_label").iterator(chunk_size=CHUNK), 2, _predicted_span))
    adjudicated = _InOrder(_spans_in_order(
        Message.objects.filter(project=project, decision__outcome=AdjudicationDecision.Outcome.ADJUDICATED)
        .order_by("dialogue_id", "position")
        .values_list("dialogue_id", "position", "gold_spans__start", "gold_spans__end", "gold_spans__label")
        .iterator(chunk_size=CHUNK), 2))
    for order, item in _items_in_order(project):
        yield CircularityItem(item, predictions.pop(order, ()), adjudicated.pop(order))


def _predicted_span(start: int, end: int, label: str, score: float | None, source: str | None) -> Span:
    return Span(start, end, label, score or 1.0, source or "")


def run_predictions(run: DetectorRun) -> dict[Key, tuple[Span, ...]]:
    out: dict[Key, list[Span]] = defaultdict(list)
    rows = Prediction.objects.filter(run=run).values_list(
        "message__dialogue__external_id", "message__position", "start", "end", "label", "score", "source_label")
    for did, pos, *fields in rows.iterator(chunk_size=CHUNK):
        out[(did, pos)].append(_predicted_span(*fields))
    return {k: tuple(sorted(v)) for k, v in out.items()}


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


def covered_dialogues(run: DetectorRun) -> set[str] | None:
    """The external ids of the dialogues ``run`` covered: those of its finished chunks (a
    detector run's slices; an imported run's one chunk holds the dialogues of its import). None
    for a run that records no chunks at all (one made outside the services): it claims the whole
    project, so it is scored on all of it."""
    chunks = list(RunChunk.objects.filter(run=run).values_list("status", "dialogue_ids"))
    if not chunks:
        return None
    pks = {pk for status, ids in chunks if status == RunChunk.Status.DONE for pk in ids}
    rows = Dialogue.objects.filter(project_id=run.project_id).values_list("pk", "external_id")
    return {ext for pk, ext in rows.iterator(chunk_size=5000) if pk in pks}


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


def segments_by_key(project: Project, keys) -> dict[Key, str] | None:
    """MATH / NON-MATH of the given messages from the newest segment run; None without one."""
    run = segment_run(project)
    if run is None:
        return None
    wanted = set(keys)
    rows = MessageSegment.objects.filter(run=run).values_list(
        "message__dialogue__external_id", "message__position", "segment")
    return {(d, p): seg for d, p, seg in rows.iterator(chunk_size=5000) if (d, p) in wanted}


# ----------------------------------------------------------------------------------- scoring against gold


@dataclass(frozen=True)
class GoldInputs:
    """What scoring any run against the current gold set takes, read once for all runs: gold
    messages' texts and spans, their MATH / NON-MATH segments and sampling weights."""

    texts: dict[Key, str]
    gold: dict[Key, list]
    segments: dict[Key, str] | None
    weights: dict[Key, float]
    labels: tuple[str, ...]

    def covering(self, dialogues: set[str] | None) -> GoldInputs:
        """These inputs cut down to the messages of ``dialogues`` (None: all of them)."""
        if dialogues is None:
            return self
        return replace(self, texts={k: t for k, t in self.texts.items() if k[0] in dialogues},
                       gold={k: g for k, g in self.gold.items() if k[0] in dialogues})


def gold_inputs(project: Project) -> GoldInputs | None:
    """The gold set as scoring reads it (through the one read path); None without gold."""
    texts, gold = gold_texts_and_spans(project)
    if not texts:
        return None
    return GoldInputs(texts=texts, gold=gold, segments=segments_by_key(project, texts),
                      weights=sampling.design_weights(project),
                      labels=tuple(project.labels))


@dataclass(frozen=True)
class RunScore:
    """A run scored on the gold messages it covered: ``report`` is None when it covered none;
    ``coverage`` says how many of the project's gold messages that was (what the pages show)."""

    report: EvaluationReport | None
    coverage: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {**(self.report.to_dict() if self.report else {}), "coverage": self.coverage}


def score_run(run: DetectorRun, inputs: GoldInputs, *, n_boot: int = DEFAULT_BOOT, seed: int = 0) -> RunScore:
    """One run against the gold of the messages it covered (:func:`covered_dialogues`), with the
    evaluation metrics, weighted by the sampling design: the one scoring that the run page and the
    detectors-versus-gold report both show. Gold the run never saw is not charged as misses."""
    dialogues = covered_dialogues(run)
    covered = inputs.covering(dialogues)
    coverage = {"gold_messages": len(covered.texts), "gold_total": len(inputs.texts),
                "whole_project": dialogues is None, "dialogues": None if dialogues is None else len(dialogues)}
    if not covered.texts:
        return RunScore(None, coverage)
    pred = {k: v for k, v in run_predictions(run).items() if k in covered.texts}
    report = evaluate(texts=covered.texts, gold=covered.gold, pred=pred, segments=covered.segments, n_boot=n_boot,
                      seed=seed, labels=list(covered.labels), weights=covered.weights)
    return RunScore(report, coverage)


def evaluate_run(run: DetectorRun, *, n_boot: int = DEFAULT_BOOT) -> dict[str, Any] | None:
    """The run page's evaluation (None for a segments-only run or without gold)."""
    if run.detector == "math_segments":
        return None
    inputs = gold_inputs(run.project)
    if inputs is None:
        return None
    return score_run(run, inputs, n_boot=n_boot, seed=0).to_dict()


def detectors_against_gold(*, project: Project, n_boot: int = DEFAULT_BOOT, seed: int = 0) -> list[dict]:
    """Every succeeded run scored against the current gold set with the evaluation metrics
    (:func:`pipeline.metrics.evaluation.evaluate`): rows for the table, the full report for JSON."""
    inputs = gold_inputs(project)
    if inputs is None:
        return []
    weighting = design_weighting(inputs.weights, inputs.texts)
    out = []
    for run in scorable_runs(project):
        try:
            scored = score_run(run, inputs, n_boot=n_boot, seed=seed)
        except EvaluationError as exc:
            out.append({"run": run.pk, "name": run.label, "error": str(exc)})
            continue
        report = scored.report
        if report is None:
            out.append({"run": run.pk, "name": run.label, "coverage": scored.coverage,
                        "error": f"covered none of the {len(inputs.texts)} gold messages: nothing to score"})
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
                    "weighting": weighting,
                    "ambiguity": full["ambiguity"], "utility": full["utility"], "evaluation": full})
    return out


def design_weighting(weights: dict, keys) -> dict[str, Any]:
    """How the design weights apply to these messages, for the report pages."""
    used = [weights[k] for k in keys if k in weights and weights[k] != 1.0]
    return {"weighted": bool(used), "items_weighted": len(used),
            "max_weight": round(max(used), 4) if used else 1.0}
