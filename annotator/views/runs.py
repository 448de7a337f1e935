from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotator import access, charts
from annotator.forms.runs import RetrainSettingsForm, RunForm, TrainForm
from annotator.models import DetectorRun, Role
from annotator.selectors.runs import finished_run_counts, run_progress
from annotator.services import retrain as retrain_services
from annotator.services import runs as run_services
from annotator.services import tagger as tagger_services
from annotator.services.reports import ambiguity_rows, evaluation_rows, run_scores


@login_required
@require_http_methods(["GET", "POST"])
def run_list(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.project_for(request.user, slug, Role.ADMIN)
    form = RunForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        detector, config = form.detector_and_config()
        try:
            run = run_services.run_start(project=project, detector=detector, config=config, user=request.user)
        except run_services.RunError as exc:
            form.add_error(None, str(exc))
        else:
            run_services.run_enqueue(run)
            messages.success(request, f"Run {run.label} queued.")
            return redirect("run-detail", slug=slug, run_id=run.pk)
    runs = DetectorRun.objects.filter(project=project).order_by("-created_at")
    return render(request, "runs/list.html", {"project": project, "form": form, "runs": runs})


def _run_context(project, run) -> dict:
    context = {"project": project, "run": run, "progress": run_progress(run)}
    if run.is_finished:
        context["label_counts"], context["segments"] = finished_run_counts(run)
        scores = run_scores(run)  # cached; a job computes them (the page polls while it runs)
        context["evaluation_pending"], context["evaluation_failed"] = scores.pending, scores.failed
        if scores.evaluation:
            context["evaluation"] = scores.evaluation
            context["evaluation_rows"] = evaluation_rows(scores.evaluation)
            context["ambiguity_rows"] = ambiguity_rows(scores.evaluation)
    return context


@login_required
@require_GET
def run_detail(request: HttpRequest, slug: str, run_id: int) -> HttpResponse:
    project = access.project_for(request.user, slug, Role.ADMIN)
    run = get_object_or_404(DetectorRun, pk=run_id, project=project)
    context = _run_context(project, run)
    if request.htmx:
        return render(request, "runs/_progress.html", context)
    return render(request, "runs/detail.html", context)


@login_required
@require_POST
def run_cancel(request: HttpRequest, slug: str, run_id: int) -> HttpResponse:
    project = access.project_for(request.user, slug, Role.ADMIN)
    run = get_object_or_404(DetectorRun, pk=run_id, project=project)
    run_services.run_cancel(run=run, user=request.user)
    return redirect("run-detail", slug=slug, run_id=run.pk)


@login_required
@require_POST
def run_resume(request: HttpRequest, slug: str, run_id: int) -> HttpResponse:
    project = access.project_for(request.user, slug, Role.ADMIN)
    run = get_object_or_404(DetectorRun, pk=run_id, project=project, source=DetectorRun.Source.DETECTOR)
    n = run_services.run_resume(run=run, user=request.user)
    messages.success(request, f"Re-queued {n} unfinished chunk(s).")
    return redirect("run-detail", slug=slug, run_id=run.pk)


@login_required
@require_http_methods(["GET", "POST"])
def tagger_page(request: HttpRequest, slug: str) -> HttpResponse:
    """Trained versions (the active one marked, each with what blocks it and its retrain decision),
    the learning curve, training and retraining as background jobs, activation. Admins only: the
    page shows model output (dev scores), which blind annotators never see."""
    project = access.project_for(request.user, slug, Role.ADMIN)
    other = {"activate", "retrain", "retrain_every", "distil"} & set(request.POST)
    form = TrainForm(request.POST if request.method == "POST" and not other else None)
    settings_form = RetrainSettingsForm(request.POST if "retrain_every" in request.POST else None,
                                        initial={"retrain_every": project.retrain_every})
    if request.method == "POST":
        if "activate" in request.POST:
            try:
                tagger_services.tagger_activate(project=project, version=request.POST["activate"], user=request.user)
                messages.success(request, f"{request.POST['activate']} is now the active tagger.")
            except tagger_services.TaggerError as exc:
                messages.error(request, str(exc))
            return redirect("tagger", slug=slug)
        if "distil" in request.POST:
            try:
                job, created = tagger_services.tagger_distil_job_start(
                    project=project, user=request.user, teacher=request.POST["distil"])
            except tagger_services.TaggerError as exc:
                messages.error(request, str(exc))
                return redirect("tagger", slug=slug)
            if not created:
                messages.info(request, f"A distillation is already {job.status}; no second one was started.")
            return redirect("job-detail", slug=slug, job_id=job.pk)
        if "retrain" in request.POST:
            job, created = retrain_services.tagger_retrain_request(project=project, user=request.user)
            if not created:
                messages.info(request, f"A retrain is already {job.status}.")
            return redirect("job-detail", slug=slug, job_id=job.pk)
        if "retrain_every" in request.POST:
            if settings_form.is_valid():
                retrain_services.retrain_settings_set(
                    project=project, retrain_every=settings_form.cleaned_data["retrain_every"], user=request.user)
                messages.success(request, "Retrain setting saved.")
                return redirect("tagger", slug=slug)
        elif form.is_valid():
            job, created = tagger_services.tagger_train_job_start(
                project=project, user=request.user, synthetic=form.cleaned_data["synthetic"],
                use_gold=form.cleaned_data["use_gold"],
            )
            if not created:
                messages.info(request, f"A training is already {job.status}; no second one was started.")
            return redirect("job-detail", slug=slug, job_id=job.pk)
    infos = tagger_services.tagger_versions(project)  # read once: on an object store each is a download
    rows = retrain_services.version_rows(project, infos)
    for row in rows:
        row["summary"] = tagger_services.dev_summary(row["info"])
        row["distillation"] = tagger_services.distillation_summary(row["info"])
        row["distillable"] = not tagger_services.distil_refusal(row["info"], row["blockers"])
    curve = retrain_services.learning_curve(project, infos)
    return render(request, "runs/tagger.html", {
        "project": project, "form": form, "settings_form": settings_form, "versions": rows,
        "curve": charts.learning_curve(curve) if curve else None,
        "open_retrain": retrain_services.open_retrain(project),
        "open_distillation": tagger_services.open_distillation(project),
        "gold_messages": retrain_services.gold_size(project),
    })
