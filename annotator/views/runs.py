from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotator import access
from annotator.forms.runs import RunForm
from annotator.models import DetectorRun, Role
from annotator.selectors.runs import config_shown, finished_run_counts, run_progress
from annotator.services import runs as run_services
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
            messages.success(request, f"Run {run.label} queued.", extra_tags="job")
            return redirect("run-detail", slug=slug, run_id=run.pk)
    runs = DetectorRun.objects.filter(project=project).order_by("-created_at")
    return render(request, "runs/list.html", {"project": project, "form": form, "runs": runs})


def _run_context(project, run) -> dict:
    context = {"project": project, "run": run, "progress": run_progress(run), "config": config_shown(run)}
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
    messages.success(request, f"Re-queued {n} unfinished chunk(s).", extra_tags="job")
    return redirect("run-detail", slug=slug, run_id=run.pk)
