"""Writes of the reports: the agreement report (with detectors against gold), the circularity
check and a run's scores against gold are computed as background jobs, each with its own job
function (:func:`agreement_job_run`, :func:`circularity_job_run`, :func:`evaluation_job_run`);
the latest succeeded job's ``result`` is the cache the pages read.

The figures themselves come from :mod:`pipeline.metrics`; the inputs, and a run scored against
gold, are read through :mod:`annotator.selectors.reports`; this module queues the jobs, runs the
computation and stores the result. Both reports weigh each message by the sampling design
(``1/p`` from :func:`annotator.selectors.assignments.design_weights`: audit messages drawn
at rate r count 1/r, flagged ones 1), so an audit sample does not overstate recall.

Scoring a run takes seconds at corpus scale (a thousand bootstrap replicates), so the run page
never computes it: :func:`run_scores` reads the newest scoring job of the run computed under the
current :func:`annotator.selectors.reports.scoring_state` (the cache, keyed by that state) and
otherwise queues one, which the page polls. A run is scored only on the gold messages it covered
(its finished chunks). When gold, the plans, the segment run, the labels or the run's coverage
change, the key changes, and the next job deletes the run's older scores (explicit invalidation).
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from annotator import task_names as names
from annotator.dispatch import enqueue
from annotator.models import BackgroundJob, DetectorRun, Project
from annotator.selectors import assignments as sampling
from annotator.selectors import reports as sel
from annotator.selectors.exports import gold_state
from annotator.selectors.reports import DEFAULT_BOOT
from annotator.services import jobs
from annotator.services.adjudication import gold_merge_ready
from annotator.services.audit import audit_record
from pipeline import csvsafe
from pipeline.metrics.agreement import agreement_report
from pipeline.metrics.circularity import DEFAULT_THRESHOLD, CircularityReport, circularity_report

Kind = BackgroundJob.Kind
EVALUATION = Kind.EVALUATION


class ReportError(ValueError):
    """The report cannot be computed with these inputs (shown to the user as is)."""


# ----------------------------------------------------------------------------------- requests


def agreement_request(*, project: Project, user, n_boot: int = DEFAULT_BOOT, seed: int = 0) -> BackgroundJob:
    """Queue a recomputation of the agreement report (and detectors against gold)."""
    job = BackgroundJob.objects.create(project=project, kind=Kind.AGREEMENT, created_by=user,
                                       params={"n_boot": n_boot, "seed": seed})
    audit_record(user=user, action="report.agreement.request", obj=job, project=project, n_boot=n_boot)
    enqueue(names.REPORTS_AGREEMENT, job.pk)
    return job


def circularity_request(*, project: Project, user, run: DetectorRun, threshold: float = DEFAULT_THRESHOLD,
                        match: str = "exact", n_boot: int = DEFAULT_BOOT, seed: int = 0) -> BackgroundJob:
    if run.project_id != project.pk:
        raise ReportError("That run belongs to another project.")
    job = BackgroundJob.objects.create(
        project=project, kind=Kind.CIRCULARITY, created_by=user,
        params={"run": run.pk, "threshold": threshold, "match": match, "n_boot": n_boot, "seed": seed},
    )
    audit_record(user=user, action="report.circularity.request", obj=job, project=project, run=run.pk)
    enqueue(names.REPORTS_CIRCULARITY, job.pk)
    return job


# ----------------------------------------------------------------------------------- computing


def agreement_compute(*, project: Project, n_boot: int = DEFAULT_BOOT, seed: int = 0) -> dict[str, Any]:
    # streamed: the report keeps of the items what it needs (the detectors' scoring reads gold of its own)
    report = agreement_report(sel.agreement_items(project), labels=project.labels, n_boot=n_boot, seed=seed)
    return {
        "computed_at": timezone.now().isoformat(),
        "gold_state": gold_state(project),  # the page marks the report stale once gold moves on
        "agreement": report.to_dict(),
        "detectors": sel.detectors_against_gold(project=project, n_boot=n_boot, seed=seed),
    }


def circularity_compute(*, project: Project, run: DetectorRun, threshold: float = DEFAULT_THRESHOLD,
                        match: str = "exact", n_boot: int = DEFAULT_BOOT, seed: int = 0) -> CircularityReport:
    """Blind-only and aware-only gold, weighted by the sampling design, with the plans' unit of
    randomization and the exposure measured on the items."""
    if run.project_id != project.pk:
        raise ReportError("That run belongs to another project.")
    return circularity_report(
        sel.circularity_items(project, run), run=run.label, match=match, threshold=threshold, n_boot=n_boot,
        seed=seed, weights=sampling.design_weights(project), randomization_unit=sampling.randomization_unit(project),
    )


def circularity_result(report: CircularityReport, run: DetectorRun) -> dict[str, Any]:
    """The stored form of a circularity report (what the page, CSV and JSON read)."""
    result = {"computed_at": timezone.now().isoformat(), "gold_state": gold_state(run.project),
              "run": run.pk, "run_name": run.label,
              **report.to_dict(), "rows": report.csv_rows()}
    return json.loads(json.dumps(result, default=str))


def circularity_store(*, project: Project, run: DetectorRun, report: CircularityReport, params: dict,
                      user=None) -> BackgroundJob:
    """Keep a report computed outside a job (the command line) as a finished job, so the report
    page shows it like one computed from the page."""
    job = BackgroundJob.objects.create(project=project, kind=Kind.CIRCULARITY, created_by=user,
                                       params={"run": run.pk, **params})
    jobs.job_start(job)
    jobs.job_finish(job, result=circularity_result(report, run))
    audit_record(user=user, action="report.circularity.store", obj=job, project=project, run=run.pk)
    return job


# ----------------------------------------------------------------------------------- report jobs


def _report_job_run(job: BackgroundJob, kind: str, compute: Callable[[BackgroundJob], dict[str, Any]]) -> None:
    """Run a report job of ``kind``: ``compute(job)`` is stored as its result (the cache);
    failures are recorded on the job. A finished job is left alone."""
    if job.is_finished:
        return
    jobs.job_start(job)
    try:
        if job.kind != kind:
            raise ReportError(f"Not a {kind} job: {job.kind}.")
        result = compute(job)
    except ReportError as exc:
        jobs.job_fail(job, exc)
        return
    except Exception as exc:
        jobs.job_fail(job, exc)
        raise
    jobs.job_finish(job, result=json.loads(json.dumps(result, default=str)))


def agreement_job_run(*, job: BackgroundJob) -> None:
    """Compute the agreement report (and detectors against gold) of a queued job."""
    _report_job_run(job, Kind.AGREEMENT, _agreement_job_result)


def _agreement_job_result(job: BackgroundJob) -> dict[str, Any]:
    gold_merge_ready(project=job.project)  # score detectors against up-to-date gold
    p = job.params
    return agreement_compute(project=job.project, n_boot=p.get("n_boot", DEFAULT_BOOT), seed=p.get("seed", 0))


def circularity_job_run(*, job: BackgroundJob) -> None:
    """Compute the circularity report of a queued job (its run, threshold and match)."""
    _report_job_run(job, Kind.CIRCULARITY, _circularity_job_result)


def _circularity_job_result(job: BackgroundJob) -> dict[str, Any]:
    p = job.params
    run = DetectorRun.objects.filter(pk=p["run"], project=job.project).first()
    if run is None:
        raise ReportError("The run no longer exists.")
    report = circularity_compute(
        project=job.project, run=run, threshold=p.get("threshold", DEFAULT_THRESHOLD),
        match=p.get("match", "exact"), n_boot=p.get("n_boot", DEFAULT_BOOT), seed=p.get("seed", 0))
    return circularity_result(report, run)


# ----------------------------------------------------------------------------------- a run's scores


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
    state = sel.scoring_state(run)
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
    enqueue(names.REPORTS_EVALUATION, job.pk)
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
        key = scoring_key(sel.scoring_state(run))  # the state the scores are computed under, if it moved
        if key != job.params.get("key"):
            BackgroundJob.objects.filter(pk=job.pk).update(params={**job.params, "key": key})
        evaluation = sel.evaluate_run(run)
        jobs.job_finish(job, result={"evaluation": json.loads(json.dumps(evaluation, default=str))})
    (BackgroundJob.objects.filter(project_id=job.project_id, kind=EVALUATION, params__run=run.pk)
     .exclude(params__key=key).exclude(status__in=[BackgroundJob.Status.QUEUED, BackgroundJob.Status.RUNNING])
     .delete())


# ----------------------------------------------------------------------------------- tables and downloads


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


def _csv(rows: list[dict], fields: list[str]) -> str:
    buf = io.StringIO()
    writer = csvsafe.DictWriter(buf, fieldnames=fields, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def agreement_csv(result: dict) -> str:
    rows = result.get("agreement", {}).get("figures", [])
    return _csv(rows, ["metric", "level", "scheme", "pair", "by", "group", "value", "ci_low", "ci_high", "n"])


def detectors_csv(result: dict) -> str:
    rows = []
    for run in result.get("detectors", []):
        for r in run.get("rows", []):
            row = {"run": run["run"], "detector": run["name"], "version": run["version"],
                   "level": r["level"], "label": r["label"], "n_pred": r["n_pred"], "n_gold": r["n_gold"]}
            for m in ("precision", "recall", "f1", "f2"):
                row[m], row[f"{m}_ci_low"], row[f"{m}_ci_high"] = (
                    r[m]["value"], r[m]["ci_low"], r[m]["ci_high"])
            rows.append(row)
    fields = ["run", "detector", "version", "level", "label", "n_pred", "n_gold"]
    for m in ("precision", "recall", "f1", "f2"):
        fields += [m, f"{m}_ci_low", f"{m}_ci_high"]
    return _csv(rows, fields)


def circularity_csv(result: dict) -> str:
    return _csv(result.get("rows", []), ["figure", "value", "ci_low", "ci_high", "n"])
