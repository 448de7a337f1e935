"""The API's detector runs and assignment plans: what the Runs page and the Assignments page do."""

from __future__ import annotations

import json

from django.shortcuts import get_object_or_404
from ninja import Query, Router, Status

from annotator import access
from annotator.api.common import ApiError, form_or_error, job_json, run_json, started
from annotator.api.paging import Page, Paged, paged
from annotator.api.schemas import REFUSALS, Error, JobOut, PlanIn, PlanOut, RunDetail, RunIn, RunOut
from annotator.forms.runs import RunForm
from annotator.forms.workspace import PlanForm
from annotator.models import AssignmentPlan, DetectorRun, Role
from annotator.selectors.assignments import condition_exposure
from annotator.selectors.projects import active_members
from annotator.selectors.runs import finished_run_counts
from annotator.services import runs as run_services
from annotator.services.assignments import PlanError, plan_create, plan_start, project_annotators
from annotator.services.reports import run_scores

router = Router(tags=["runs and plans"])


def _run(request, slug: str, run_id: int) -> DetectorRun:
    project = access.project_for(request.user, slug, Role.ADMIN)
    return get_object_or_404(DetectorRun.objects.select_related("project"), pk=run_id, project=project)


@router.get("/projects/{slug}/runs/", response={200: Paged[RunOut], **REFUSALS}, url_name="api-runs")
def run_list(request, slug: str, page: Query[Page]):
    """The project's runs, newest first."""
    project = access.project_for(request.user, slug, Role.ADMIN)
    return paged(request, page, DetectorRun.objects.filter(project=project).select_related("project")
                 .order_by("-created_at"), run_json)


@router.post("/projects/{slug}/runs/", response={202: RunOut, 400: Error, **REFUSALS}, url_name="api-runs")
def run_start(request, slug: str, body: RunIn):
    """Start a run as the Runs page does: a preset, and a config merged over it (the same checks)."""
    project = access.project_for(request.user, slug, Role.ADMIN)
    form = form_or_error(RunForm({"preset": body.detector, "config": json.dumps(body.config)}))

    def start():
        detector, config = form.detector_and_config()
        try:
            run = run_services.run_start(project=project, detector=detector, config=config, user=request.user)
        except run_services.RunError as exc:
            raise ApiError(400, str(exc)) from None
        run_services.run_enqueue(run)
        return run_json(run)

    return started(request, start)


@router.get("/projects/{slug}/runs/{run_id}/", response={200: RunDetail, **REFUSALS}, url_name="api-run")
def run_detail(request, slug: str, run_id: int):
    """A run's progress; once finished, its spans by label and its scores against gold."""
    run = _run(request, slug, run_id)
    out = run_json(run)
    if run.is_finished:
        out["label_counts"] = finished_run_counts(run)[0]
        out["evaluation"] = run_scores(run).evaluation
    return out


@router.post("/projects/{slug}/runs/{run_id}/cancel/", response={200: RunOut, **REFUSALS},
             url_name="api-run-cancel")
def run_cancel(request, slug: str, run_id: int):
    """Cancel a queued or running run (work done is kept); a finished run is left as it is."""
    return run_json(run_services.run_cancel(run=_run(request, slug, run_id), user=request.user))


def _plan_json(plan: AssignmentPlan, *, exposure: bool = False) -> dict:
    out = {"id": plan.pk, "seed": plan.seed, "params": plan.params, "summary": plan.summary,
           "created_at": plan.created_at.isoformat() if plan.created_at else None}
    if exposure:
        out["exposure"] = condition_exposure(plan.project, plan=plan, use_cache=True)
    return out


@router.post("/projects/{slug}/plans/", response={200: PlanOut, 202: JobOut, 400: Error, **REFUSALS},
             url_name="api-plans")
def plan_make(request, slug: str, body: PlanIn):
    """Make a sampling plan with the options of the Assignments page and ``make_assignments``:
    built as a job, or only previewed (``dry_run``)."""
    project = access.project_for(request.user, slug, Role.ADMIN)
    members = active_members(project)
    names = body.annotators if body.annotators is not None else [u.username for u in project_annotators(project)]
    by_name = {u.username: u.pk for u in members.filter(username__in=names)}
    if unknown := sorted(set(names) - set(by_name)):
        raise ApiError(400, f"Not members of {project.slug}: {', '.join(unknown)}.")
    data = {k: v for k, v in body.model_dump(exclude={"annotators"}).items() if v is not None}
    data.setdefault("k", project.overlap_k)
    form = form_or_error(PlanForm({**data, "annotators": list(by_name.values())}, project=project,
                                  annotators=members))
    args = {"project": project, **form.plan_args(), "by": request.user}
    try:
        if form.cleaned_data["dry_run"]:
            return Status(200, _plan_json(plan_create(**args, dry_run=True)))
        return started(request, lambda: job_json(plan_start(**args)))
    except PlanError as exc:
        raise ApiError(400, str(exc)) from None


@router.get("/projects/{slug}/plans/{plan_id}/", response={200: PlanOut, **REFUSALS}, url_name="api-plan")
def plan_detail(request, slug: str, plan_id: int):
    """A plan: its parameters, seed, summary and how blind and aware items were spread."""
    project = access.project_for(request.user, slug, Role.ADMIN)
    return _plan_json(get_object_or_404(AssignmentPlan.objects.select_related("project"), pk=plan_id,
                                        project=project), exposure=True)
