"""The API's reports: the JSON of what the agreement, detectors-vs-gold and circularity pages show
(the latest computed result, whether gold changed since, whether a recomputation is under way)."""

from __future__ import annotations

from typing import Any

from ninja import Router

from annotator import access
from annotator.api.common import form_or_error, job_json, started
from annotator.api.schemas import REFUSALS, AgreementIn, CircularityIn, Error, JobOut
from annotator.forms.reports import AgreementForm, CircularityForm
from annotator.models import BackgroundJob, Role
from annotator.selectors import reports as sel
from annotator.services import reports as svc

router = Router(tags=["reports"])
Kind = BackgroundJob.Kind


def _state(project, kind: str, **params) -> dict[str, Any]:
    """The latest result of ``kind`` and what the page says around it (pending, failed, stale)."""
    done = sel.latest_result(project, kind, **params)
    pending, failed = sel.report_pending(project, kind, **params), sel.report_failed(project, kind, done, **params)
    return {"job": job_json(done) if done else None, "stale": sel.report_is_stale(done),
            "pending": job_json(pending) if pending else None, "failed": job_json(failed) if failed else None,
            "_result": done.result if done else None}


def _report(project, kind: str, pick, **params) -> dict[str, Any]:
    state = _state(project, kind, **params)
    result = state.pop("_result")
    return {**state, "report": pick(result) if result is not None else None}


@router.get("/projects/{slug}/reports/agreement/", response={200: dict, **REFUSALS},
            url_name="api-report-agreement")
def agreement(request, slug: str):
    """Inter-annotator agreement (every figure of the page, annotators by pseudonym)."""
    project = access.project_for(request.user, slug, Role.ADJUDICATOR)
    return _report(project, Kind.AGREEMENT, lambda r: r.get("agreement", {}))


@router.post("/projects/{slug}/reports/agreement/", response={202: JobOut, 400: Error, **REFUSALS},
             url_name="api-report-agreement")
def agreement_compute(request, slug: str, body: AgreementIn):
    """Recompute the agreement report (and detectors against gold) as a job."""
    project = access.project_for(request.user, slug, Role.ADJUDICATOR)
    n_boot = body.n_boot if body.n_boot is not None else AgreementForm.base_fields["n_boot"].initial
    form = form_or_error(AgreementForm({"n_boot": n_boot}))
    return started(request, lambda: job_json(svc.agreement_request(
        project=project, user=request.user, n_boot=form.cleaned_data["n_boot"])))


@router.get("/projects/{slug}/reports/detectors/", response={200: dict, **REFUSALS},
            url_name="api-report-detectors")
def detectors(request, slug: str):
    """Every scored run against gold (computed with the agreement report)."""
    project = access.project_for(request.user, slug, Role.ADJUDICATOR)
    return _report(project, Kind.AGREEMENT, lambda r: r.get("detectors", []))


@router.get("/projects/{slug}/reports/circularity/", response={200: dict, **REFUSALS},
            url_name="api-report-circularity")
def circularity(request, slug: str, run: int | None = None):
    """The circularity check of ``run`` (or the latest computed one): aware against blind gold."""
    project = access.project_for(request.user, slug, Role.ADJUDICATOR)
    return _report(project, Kind.CIRCULARITY, lambda r: r, **({"run": run} if run else {}))


@router.post("/projects/{slug}/reports/circularity/", response={202: JobOut, 400: Error, **REFUSALS},
             url_name="api-report-circularity")
def circularity_compute(request, slug: str, body: CircularityIn):
    """Compute the circularity check of a finished run as a job (the page's options)."""
    project = access.project_for(request.user, slug, Role.ADJUDICATOR)
    data = {k: v for k, v in body.model_dump().items() if v is not None}
    form = form_or_error(CircularityForm(data, project=project))
    return started(request, lambda: job_json(svc.circularity_request(
        project=project, user=request.user, **form.request_args())))
