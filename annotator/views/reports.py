"""Report pages: inter-annotator agreement, the circularity check, detectors against gold.

Each page reads the latest succeeded job's cached result; a POST queues a recomputation. Reports
name annotators by pseudonym and show model figures, so they are for adjudicators and admins.
"""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from annotator import access, charts
from annotator.forms.reports import AgreementForm, CircularityForm, RunPickForm
from annotator.models import BackgroundJob, Role
from annotator.selectors import reports as sel
from annotator.services import reports as svc

Kind = BackgroundJob.Kind
FORMATS = ("csv", "json")


def _download(body: str, fmt: str, name: str) -> HttpResponse:
    ctype = "text/csv; charset=utf-8" if fmt == "csv" else "application/json"
    response = HttpResponse(body, content_type=ctype)
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response


# ----------------------------------------------------------------------------------- agreement


def _agreement_view_model(result: dict) -> dict:
    """Tables and chart geometry from the cached agreement result."""
    ag = result.get("agreement", {})
    figures = ag.get("figures", [])

    def pick(**where):
        return [f for f in figures if all(f.get(k) == v for k, v in where.items())]

    overall = pick(by="all", group="all")
    label_rows = [{**f, "label": f["group"]} for f in pick(metric="krippendorff_alpha", by="label")]
    span_rows = []
    for f in pick(metric="span_f1", by="label", scheme="overlap"):
        span_rows.append({**f, "label": f"{f['group']} · {f['pair']}" if len(ag.get("annotators", [])) > 2
                          else f["group"]})
    pair_values = {}
    for f in pick(metric="cohen_kappa", by="all", scheme="typed"):
        a, b = f["pair"].split("~", 1)
        pair_values[(a, b)] = f["value"]
    kappa_rows = charts.kappa_by_label(figures)
    per_label = [f for f in figures if f["by"] == "label"
                 and (f["metric"], f["scheme"]) in (("cohen_kappa", "typed"), ("krippendorff_alpha", "typed"),
                                                    ("span_f1", "overlap"))]
    breakdown = [f for f in figures if f["by"] in ("role", "segment", "condition")
                 and f["metric"] in ("krippendorff_alpha", "span_f1")]
    return {
        "meta": ag, "overall": overall, "breakdown": breakdown, "per_label": per_label,
        "kappa_chart": charts.bar_chart(kappa_rows) if kappa_rows else None,
        "label_chart": charts.bar_chart(label_rows) if label_rows else None,
        "span_chart": charts.bar_chart(span_rows, lo=0.0) if span_rows else None,
        "heatmap": charts.heatmap(ag.get("annotators", []), pair_values) if pair_values else None,
    }


@login_required
@require_http_methods(["GET", "POST"])
def agreement(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.project_for(request.user, slug, Role.ADJUDICATOR)
    form = AgreementForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        svc.agreement_request(project=project, user=request.user, n_boot=form.cleaned_data["n_boot"])
        messages.success(request, "The agreement report is being computed.")
        return redirect("reports-agreement", slug=slug)
    pending = sel.report_pending(project, Kind.AGREEMENT)
    if request.htmx and pending is None:
        return _refresh()  # the polled job finished: show the whole page with its result
    job = sel.latest_result(project, Kind.AGREEMENT)
    context = {"project": project, "form": form, "job": job, "pending": pending,
               "failed": sel.report_failed(project, Kind.AGREEMENT, job), "stale": sel.report_is_stale(job)}
    if request.htmx:
        return render(request, "reports/_agreement_status.html", context)
    if job is not None:
        context.update(_agreement_view_model(job.result))
    return render(request, "reports/agreement.html", context)


def _refresh() -> HttpResponse:
    response = HttpResponse(status=204)
    response["HX-Refresh"] = "true"
    return response


@login_required
@require_GET
def agreement_download(request: HttpRequest, slug: str, fmt: str) -> HttpResponse:
    project = access.project_for(request.user, slug, Role.ADJUDICATOR)
    if fmt not in FORMATS:
        raise Http404(f"The agreement report downloads as {' or '.join(sorted(FORMATS))}, not {fmt}.")
    job = sel.latest_result(project, Kind.AGREEMENT)
    if job is None:
        raise Http404("No agreement report has been computed yet.")
    if fmt == "json":
        return _download(json.dumps(job.result.get("agreement", {}), indent=1), fmt, f"{slug}-agreement")
    return _download(svc.agreement_csv(job.result), fmt, f"{slug}-agreement")


# ----------------------------------------------------------------------------------- detectors


@login_required
@require_GET
def detectors(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.project_for(request.user, slug, Role.ADJUDICATOR)
    job = sel.latest_result(project, Kind.AGREEMENT)
    runs = job.result.get("detectors", []) if job is not None else []
    pr_rows = charts.detector_precision_recall(runs)
    return render(request, "reports/detectors.html", {
        "project": project, "job": job, "runs": runs, "pending": sel.report_pending(project, Kind.AGREEMENT),
        "stale": sel.report_is_stale(job),
        "pr_chart": charts.bar_chart(pr_rows, lo=0.0, label_width=170) if pr_rows else None,
        "form": AgreementForm(),
    })


@login_required
@require_GET
def detectors_download(request: HttpRequest, slug: str, fmt: str) -> HttpResponse:
    project = access.project_for(request.user, slug, Role.ADJUDICATOR)
    job = sel.latest_result(project, Kind.AGREEMENT)
    if job is None or fmt not in FORMATS:
        raise Http404("No detector scores have been computed yet.")
    if fmt == "json":
        return _download(json.dumps(job.result.get("detectors", []), indent=1), fmt, f"{slug}-detectors-vs-gold")
    return _download(svc.detectors_csv(job.result), fmt, f"{slug}-detectors-vs-gold")


# ----------------------------------------------------------------------------------- circularity


@login_required
@require_http_methods(["GET", "POST"])
def circularity(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.project_for(request.user, slug, Role.ADJUDICATOR)
    form = CircularityForm(request.POST or None, project=project)
    if request.method == "POST" and form.is_valid():
        svc.circularity_request(project=project, user=request.user, **form.request_args())
        messages.success(request, "The circularity report is being computed.")
        return redirect(f"{reverse('reports-circularity', kwargs={'slug': slug})}?run={form.cleaned_data['run'].pk}")
    pick = RunPickForm(request.GET or None)
    run_id = pick.cleaned_data.get("run") if pick.is_valid() else None
    params = {"run": run_id} if run_id else {}
    pending = sel.report_pending(project, Kind.CIRCULARITY, **params)
    if request.htmx and pending is None:
        return _refresh()
    job = sel.latest_result(project, Kind.CIRCULARITY, **params)
    shown = run_id or (job.params.get("run") if job else None)
    if shown and not form.is_bound:  # the form shows the run whose report is on the page
        form.initial.update({k: job.params[k] for k in ("threshold", "match", "n_boot") if job and k in job.params})
        form.initial["run"] = shown
    context = {"project": project, "form": form, "job": job, "r": job.result if job else None,
               "pending": pending, "failed": sel.report_failed(project, Kind.CIRCULARITY, job, **params),
               "stale": sel.report_is_stale(job)}
    if request.htmx:
        return render(request, "reports/_circularity_status.html", context)
    if job is not None:
        r = job.result
        bars = []
        for name, key in (("blind gold", "blind_gold"), ("aware gold", "aware_gold")):
            if r.get(key):
                bars.append({"label": f"F1 vs {name}", **r[key]["f1"], "n": r[key]["n_gold"]})
        if r.get("delta_f1"):
            bars.append({"label": "ΔF1 (aware − blind)", **r["delta_f1"], "n": r["n_paired_items"]})
        context["chart"] = charts.bar_chart(bars, label_width=170) if bars else None
    return render(request, "reports/circularity.html", context)


@login_required
@require_GET
def circularity_download(request: HttpRequest, slug: str, job_id: int, fmt: str) -> HttpResponse:
    project = access.project_for(request.user, slug, Role.ADJUDICATOR)
    job = BackgroundJob.objects.filter(pk=job_id, project=project, kind=Kind.CIRCULARITY,
                                       status=BackgroundJob.Status.SUCCEEDED).first()
    if job is None or fmt not in FORMATS:
        raise Http404("No such report.")
    if fmt == "json":
        return _download(json.dumps(job.result, indent=1), fmt, f"{slug}-circularity-run{job.params.get('run')}")
    return _download(svc.circularity_csv(job.result), fmt, f"{slug}-circularity-run{job.params.get('run')}")
