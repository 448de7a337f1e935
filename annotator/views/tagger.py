"""The Tagger page and its actions, one URL each: train, activate, distil, retrain now, and the
retrain setting. Admins only: the page shows model output (dev scores), which blind annotators
never see."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotator import access, charts
from annotator.forms.tagger import RetrainSettingsForm, TrainForm
from annotator.models import Project, Role
from annotator.selectors import tagger as tagger_selectors
from annotator.services import tagger as tagger_services
from annotator.services import tagger_retrain as retrain_services


def _admin_project(request: HttpRequest, slug: str) -> Project:
    return access.project_for(request.user, slug, Role.ADMIN)


def _page(request: HttpRequest, project: Project, *, form: TrainForm | None = None,
          settings_form: RetrainSettingsForm | None = None) -> HttpResponse:
    """The page: trained versions (the active one marked, each with what blocks it and its retrain
    decision), the learning curve, and the forms (an invalid one with its errors)."""
    infos = tagger_selectors.tagger_versions(project)  # read once: on an object store each is a download
    rows = tagger_selectors.version_rows(project, infos)
    for row in rows:
        row["summary"] = tagger_selectors.dev_summary(row["info"])
        row["distillation"] = tagger_selectors.distillation_summary(row["info"])
        row["thresholds"] = tagger_selectors.threshold_note(row["info"])
        row["student"] = tagger_selectors.student_note(row["info"])
        row["distillable"] = not tagger_selectors.distil_refusal(row["info"], row["blockers"])
    curve = tagger_selectors.learning_curve(project, infos)
    runs_on = tagger_selectors.project_tagger(project)
    return render(request, "tagger/page.html", {
        "project": project, "form": form or TrainForm(), "runs_on": runs_on,
        "runtime": tagger_selectors.runtime_note(runs_on.version),
        "settings_form": settings_form or RetrainSettingsForm(initial={"retrain_every": project.retrain_every}),
        "versions": rows, "curve": charts.learning_curve(curve) if curve else None,
        "open_retrain": tagger_selectors.open_retrain(project),
        "open_distillation": tagger_selectors.open_distillation(project),
        "gold_messages": tagger_selectors.gold_size_cached(project),
    })


@login_required
@require_GET
def tagger_page(request: HttpRequest, slug: str) -> HttpResponse:
    return _page(request, _admin_project(request, slug))


@login_required
@require_POST
def tagger_train(request: HttpRequest, slug: str) -> HttpResponse:
    project = _admin_project(request, slug)
    form = TrainForm(request.POST)
    if not form.is_valid():
        return _page(request, project, form=form)
    job, created = tagger_services.tagger_train_job_start(
        project=project, user=request.user, synthetic=form.cleaned_data["synthetic"],
        use_gold=form.cleaned_data["use_gold"],
    )
    return _to_job(request, slug, job, created, "A training")


@login_required
@require_POST
def tagger_activate(request: HttpRequest, slug: str) -> HttpResponse:
    project = _admin_project(request, slug)
    version = request.POST.get("version", "")
    try:
        tagger_services.tagger_activate(project=project, version=version, user=request.user)
        messages.success(request, f"{version} is now the active tagger.")
    except tagger_services.TaggerError as exc:
        messages.error(request, str(exc))
    return redirect("tagger", slug=slug)


@login_required
@require_POST
def tagger_distil(request: HttpRequest, slug: str) -> HttpResponse:
    project = _admin_project(request, slug)
    try:
        job, created = tagger_services.tagger_distil_job_start(
            project=project, user=request.user, teacher=request.POST.get("teacher", ""))
    except tagger_services.TaggerError as exc:
        messages.error(request, str(exc))
        return redirect("tagger", slug=slug)
    return _to_job(request, slug, job, created, "A distillation")


@login_required
@require_POST
def tagger_retrain(request: HttpRequest, slug: str) -> HttpResponse:
    project = _admin_project(request, slug)
    job, created = retrain_services.tagger_retrain_request(project=project, user=request.user)
    return _to_job(request, slug, job, created, "A retrain")


@login_required
@require_POST
def retrain_settings(request: HttpRequest, slug: str) -> HttpResponse:
    project = _admin_project(request, slug)
    form = RetrainSettingsForm(request.POST)
    if not form.is_valid():
        return _page(request, project, settings_form=form)
    retrain_services.retrain_settings_set(
        project=project, retrain_every=form.cleaned_data["retrain_every"], user=request.user)
    messages.success(request, "Retrain setting saved.")
    return redirect("tagger", slug=slug)


def _to_job(request: HttpRequest, slug: str, job, created: bool, what: str) -> HttpResponse:
    """The job's page; when one of its kind was already open, say so instead of starting another."""
    if not created:
        messages.info(request, f"{what} is already {job.status}; no second one was started.")
    return redirect("job-detail", slug=slug, job_id=job.pk)
