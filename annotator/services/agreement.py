"""Writes of the reports: agreement (with detectors against gold) and the circularity check are
computed as background jobs; the latest succeeded job's ``result`` is the cache the pages read.

The figures themselves come from :mod:`pipeline.metrics`; this module only gathers inputs through
the selectors, runs the computation and stores the result. Both reports weigh each message by the
sampling design (``1/p`` from :func:`annotator.selectors.assignments.audit_sample_weights`: audit
messages drawn at rate r count 1/r, flagged ones 1), so an audit sample does not overstate recall.
"""

from __future__ import annotations

import io
import json
from typing import Any

from django.utils import timezone

from annotator.dispatch import enqueue
from annotator.models import BackgroundJob, DetectorRun, Project
from annotator.selectors import assignments as sampling
from annotator.selectors import reports as sel
from annotator.services import jobs
from annotator.services.adjudication import gold_merge_ready
from annotator.services.audit import audit_record
from annotator.services.evaluation import gold_inputs, score_run
from pipeline import csvsafe
from pipeline.metrics.agreement import agreement_report
from pipeline.metrics.circularity import DEFAULT_THRESHOLD, CircularityReport, circularity_report
from pipeline.metrics.evaluation import EvaluationError

Kind = BackgroundJob.Kind
DEFAULT_BOOT = 1000


class ReportError(ValueError):
    """The report cannot be computed with these inputs (shown to the user as is)."""


# ----------------------------------------------------------------------------------- requests


def agreement_request(*, project: Project, user, n_boot: int = DEFAULT_BOOT, seed: int = 0) -> BackgroundJob:
    """Queue a recomputation of the agreement report (and detectors against gold)."""
    job = BackgroundJob.objects.create(project=project, kind=Kind.AGREEMENT, created_by=user,
                                       params={"n_boot": n_boot, "seed": seed})
    audit_record(user=user, action="report.agreement.request", obj=job, project=project, n_boot=n_boot)
    enqueue("annotator.tasks_agreement.agreement_job", job.pk)
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
    enqueue("annotator.tasks_agreement.circularity_job", job.pk)
    return job


# ----------------------------------------------------------------------------------- computing


def agreement_compute(*, project: Project, n_boot: int = DEFAULT_BOOT, seed: int = 0) -> dict[str, Any]:
    items = sel.agreement_items(project)
    report = agreement_report(items, labels=project.labels, n_boot=n_boot, seed=seed)
    return {
        "computed_at": timezone.now().isoformat(),
        "agreement": report.to_dict(),
        "detectors": detectors_against_gold(project=project, n_boot=n_boot, seed=seed),
    }


def detectors_against_gold(*, project: Project, n_boot: int = DEFAULT_BOOT, seed: int = 0) -> list[dict]:
    """Every succeeded run scored against the current gold set with the evaluation metrics
    (:func:`pipeline.metrics.evaluation.evaluate`): rows for the table, the full report for JSON."""
    inputs = gold_inputs(project)
    if inputs is None:
        return []
    weighting = design_weighting(inputs.weights, inputs.texts)
    out = []
    for run in sel.scorable_runs(project):
        try:
            report = score_run(run, inputs, n_boot=n_boot, seed=seed)
        except EvaluationError as exc:
            out.append({"run": run.pk, "name": run.label, "error": str(exc)})
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
        full = report.to_dict()
        out.append({"run": run.pk, "name": run.label, "detector": run.detector,
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


def circularity_compute(*, project: Project, run: DetectorRun, threshold: float = DEFAULT_THRESHOLD,
                        match: str = "exact", n_boot: int = DEFAULT_BOOT, seed: int = 0) -> CircularityReport:
    """Blind-only and aware-only gold, weighted by the sampling design, with the plans' unit of
    randomization and the exposure measured on the items."""
    if run.project_id != project.pk:
        raise ReportError("That run belongs to another project.")
    return circularity_report(
        sel.agreement_items(project), sel.run_predictions(run), run=run.label, match=match,
        threshold=threshold, settled=sel.settled_items(project, run), n_boot=n_boot, seed=seed,
        weights=sampling.weights_by_key(sampling.audit_sample_weights(project)),
        randomization_unit=sampling.randomization_unit(project),
    )


def circularity_result(report: CircularityReport, run: DetectorRun) -> dict[str, Any]:
    """The stored form of a circularity report (what the page, CSV and JSON read)."""
    result = {"computed_at": timezone.now().isoformat(), "run": run.pk, "run_name": run.label,
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


def job_run(*, job: BackgroundJob) -> None:
    """Run a report job and store its result (the cache); failures are recorded on the job."""
    if job.is_finished:
        return
    jobs.job_start(job)
    p = job.params
    try:
        if job.kind == Kind.AGREEMENT:
            gold_merge_ready(project=job.project)  # score detectors against up-to-date gold
            result = agreement_compute(project=job.project, n_boot=p.get("n_boot", DEFAULT_BOOT),
                                       seed=p.get("seed", 0))
        elif job.kind == Kind.CIRCULARITY:
            run = DetectorRun.objects.filter(pk=p["run"], project=job.project).first()
            if run is None:
                raise ReportError("The run no longer exists.")
            report = circularity_compute(
                project=job.project, run=run, threshold=p.get("threshold", DEFAULT_THRESHOLD),
                match=p.get("match", "exact"), n_boot=p.get("n_boot", DEFAULT_BOOT), seed=p.get("seed", 0))
            result = circularity_result(report, run)
        else:
            raise ReportError(f"Not a report job: {job.kind}.")
    except ReportError as exc:
        jobs.job_fail(job, exc)
        return
    except Exception as exc:
        jobs.job_fail(job, exc)
        raise
    jobs.job_finish(job, result=json.loads(json.dumps(result, default=str)))


# ----------------------------------------------------------------------------------- downloads


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
