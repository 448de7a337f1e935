"""Score detector runs against the project's current gold set (the table a paper prints).

Scoring a run takes seconds at corpus scale (a thousand bootstrap replicates), so the run page
never computes it: :func:`run_scores` reads the newest scoring job of the run computed under the
current :func:`annotator.selectors.reports.scoring_state` (the cache, keyed by that state) and
otherwise queues one, which the page polls. When gold, the plans, the segment run or the labels
change, the key changes, and the next job deletes the run's older scores (explicit invalidation).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from annotator.dispatch import enqueue
from annotator.models import BackgroundJob, DetectorRun, Project
from annotator.selectors import assignments as sampling
from annotator.selectors import reports as sel
from annotator.selectors.dialogues import gold_texts_and_spans
from annotator.services import jobs
from pipeline.metrics.evaluation import EvaluationReport, evaluate

Key = tuple[str, int]


@dataclass(frozen=True)
class GoldInputs:
    """What scoring any run against the current gold set takes, read once for all runs: gold
    messages' texts and spans, their MATH / NON-MATH segments and sampling weights."""

    texts: dict[Key, str]
    gold: dict[Key, list]
    segments: dict[Key, str] | None
    weights: dict[Key, float]
    labels: tuple[str, ...]


def gold_inputs(project: Project) -> GoldInputs | None:
    """The gold set as scoring reads it (through the one read path); None without gold."""
    texts, gold, _keys = gold_texts_and_spans(project)
    if not texts:
        return None
    return GoldInputs(texts=texts, gold=gold, segments=sel.segments_by_key(project, texts),
                      weights=sampling.weights_by_key(sampling.audit_sample_weights(project)),
                      labels=tuple(project.labels))


def score_run(run: DetectorRun, inputs: GoldInputs, *, n_boot: int = 1000, seed: int = 0) -> EvaluationReport:
    """One run against gold with the evaluation metrics, weighted by the sampling design: the one
    scoring that the run page and the detectors-versus-gold report both show."""
    pred = {k: v for k, v in sel.run_predictions(run).items() if k in inputs.texts}
    return evaluate(texts=inputs.texts, gold=inputs.gold, pred=pred, segments=inputs.segments, n_boot=n_boot,
                    seed=seed, labels=list(inputs.labels), weights=inputs.weights)


def evaluate_run(run: DetectorRun, *, n_boot: int = 1000) -> dict[str, Any] | None:
    """The run page's evaluation (None for a segments-only run or without gold)."""
    if run.detector == "math_segments":
        return None
    inputs = gold_inputs(run.project)
    if inputs is None:
        return None
    return score_run(run, inputs, n_boot=n_boot, seed=0).to_dict()


EVALUATION = BackgroundJob.Kind.EVALUATION


@dataclass(frozen=True)
class RunScores:
    """What the run page shows of a run's scores: the cached ``evaluation`` (None: not scored,
    no gold or a segments-only run), or the job that is computing it, or the one that failed."""

    evaluation: dict[str, Any] | None = None
    pending: BackgroundJob | None = None
    failed: BackgroundJob | None = None


def scoring_key(state: dict) -> str:
    """The cache key of scores against gold: a digest of :func:`sel.scoring_state`."""
    return hashlib.sha256(json.dumps(state, sort_keys=True, default=str).encode()).hexdigest()[:32]


def run_scores(run: DetectorRun) -> RunScores:
    """The run page's scores against gold, never computed here: the cached ones when they are
    current, else a scoring job (queued once per run and state). Without gold nothing is queued."""
    if run.detector == "math_segments" or not run.is_finished:
        return RunScores()
    state = sel.scoring_state(run.project)
    key = scoring_key(state)
    job = (BackgroundJob.objects.filter(project_id=run.project_id, kind=EVALUATION, params__run=run.pk,
                                        params__key=key).order_by("-created_at", "-pk").first())
    if job is None:
        if not state["gold"]["decisions"]:
            return RunScores()
        job = evaluation_request(run=run, key=key)
    if job.status == BackgroundJob.Status.SUCCEEDED:
        return RunScores(evaluation=job.result.get("evaluation"))
    if job.status == BackgroundJob.Status.FAILED:
        return RunScores(failed=job)
    return RunScores(pending=job)


def evaluation_request(*, run: DetectorRun, key: str, user=None) -> BackgroundJob:
    """Queue the scoring of ``run`` against the gold of state ``key``."""
    job = BackgroundJob.objects.create(project_id=run.project_id, kind=EVALUATION, created_by=user,
                                       params={"run": run.pk, "key": key})
    enqueue("annotator.evaluation_job", job.pk)
    return job


def evaluation_job_run(*, job: BackgroundJob) -> None:
    """Score the job's run against gold and keep the result (the cache the run page reads); the
    run's scores under any other state are deleted. Retry-safe: a finished job is left alone."""
    if not jobs.job_start(job):
        return
    with jobs.job_failing(job):
        run = DetectorRun.objects.filter(pk=job.params.get("run"), project_id=job.project_id).first()
        if run is None:
            jobs.job_fail(job, "The run no longer exists.")
            return
        key = scoring_key(sel.scoring_state(run.project))  # the state the scores are computed under, if it moved
        if key != job.params.get("key"):
            BackgroundJob.objects.filter(pk=job.pk).update(params={**job.params, "key": key})
        evaluation = evaluate_run(run)
        jobs.job_finish(job, result={"evaluation": json.loads(json.dumps(evaluation, default=str))})
    (BackgroundJob.objects.filter(project_id=job.project_id, kind=EVALUATION, params__run=run.pk)
     .exclude(params__key=key).exclude(status__in=[BackgroundJob.Status.QUEUED, BackgroundJob.Status.RUNNING])
     .delete())


LEVEL_NAMES = {"token": "Token (IO)", "span_exact": "Span, exact", "span_overlap": "Span, overlap",
               "span_overlap_untyped": "Span, overlap, any label"}


def evaluation_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Flatten an evaluation report into table rows (overall first, then per label)."""
    rows = []
    for level in ("token", "span_exact", "span_overlap", "span_overlap_untyped"):
        if level not in report:
            continue
        items = [("ALL", report[level])] + sorted(report.get(f"{level}_by_label", {}).items())
        for label, score in items:
            ci = score.get("ci", {})
            rows.append({
                "level": LEVEL_NAMES[level], "label": label, "overall": label == "ALL",
                **{m: score.get(m) for m in ("precision", "recall", "f1", "f2", "tp", "fp", "fn")},
                **{f"{m}_ci": ci.get(m) for m in ("precision", "recall", "f1", "f2")},
            })
    return rows


def ambiguity_rows(report: dict[str, Any]) -> list[tuple[str, int, int]]:
    """False positives by the detector's own label, with how many contain a number."""
    amb = report.get("ambiguity", {})
    numeric = amb.get("numeric_fp_by_source", {})
    return sorted(((src, n, numeric.get(src, 0)) for src, n in amb.get("fp_by_source", {}).items()),
                  key=lambda r: -r[1])
