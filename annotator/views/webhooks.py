"""The project's webhooks, for its admins: register, list with the last delivery, one hook's
deliveries, a test delivery, removal."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotator import access
from annotator.forms.webhooks import WebhookForm
from annotator.models import Role, Webhook, WebhookDelivery
from annotator.selectors.webhooks import hook_deliveries, hooks_with_last_delivery
from annotator.services.webhooks import (
    SIGNATURE_HEADER,
    WebhookError,
    webhook_create,
    webhook_delete,
    webhook_ping,
    webhook_redeliver,
)


def _hook_for(request: HttpRequest, slug: str, hook_id: int):
    project = access.project_for(request.user, slug, Role.ADMIN)
    return project, get_object_or_404(Webhook, pk=hook_id, project=project)


@login_required
@require_http_methods(["GET", "POST"])
def webhook_list(request: HttpRequest, slug: str) -> HttpResponse:
    """The hooks with their last delivery, and the form that registers one; the new hook's secret
    is in the answer to that POST, once (it is never shown again)."""
    project = access.project_for(request.user, slug, Role.ADMIN)
    form = WebhookForm(request.POST or None)
    created = secret = None
    if request.method == "POST" and form.is_valid():
        try:
            created, secret = webhook_create(project=project, url=form.cleaned_data["url"],
                                             events=form.cleaned_data["events"],
                                             site_url=request.build_absolute_uri("/"), by=request.user)
        except WebhookError as exc:
            form.add_error("url", str(exc))
        else:
            form = WebhookForm()
    context = {"project": project, "form": form, "hooks": hooks_with_last_delivery(project),
               "created": created, "secret": secret, "signature_header": SIGNATURE_HEADER}
    response = render(request, "webhooks/list.html", context)
    if secret:
        response["Cache-Control"] = "no-store"  # the secret is in this page, once: no copy kept on the way
    return response


@login_required
@require_GET
def webhook_detail(request: HttpRequest, slug: str, hook_id: int) -> HttpResponse:
    """One hook's newest deliveries with each one's status, attempts, last answer and error."""
    project, hook = _hook_for(request, slug, hook_id)
    deliveries = hook_deliveries(hook)
    context = {"project": project, "hook": hook, "deliveries": deliveries,
               "pending": any(d.status == WebhookDelivery.Status.PENDING for d in deliveries)}
    if request.htmx:
        return render(request, "webhooks/_deliveries.html", context)
    return render(request, "webhooks/detail.html", context)


@login_required
@require_POST
def webhook_ping_view(request: HttpRequest, slug: str, hook_id: int) -> HttpResponse:
    _, hook = _hook_for(request, slug, hook_id)
    webhook_ping(hook=hook, by=request.user)
    messages.success(request, "A test delivery (event “ping”) was queued.")
    return redirect("webhook-detail", slug=slug, hook_id=hook.pk)


@login_required
@require_POST
def webhook_delete_view(request: HttpRequest, slug: str, hook_id: int) -> HttpResponse:
    _, hook = _hook_for(request, slug, hook_id)
    url = hook.url
    webhook_delete(hook=hook, by=request.user)
    messages.success(request, f"The webhook to {url} was removed; nothing more is sent to it.")
    return redirect("webhook-list", slug=slug)


@login_required
@require_POST
def webhook_redeliver_view(request: HttpRequest, slug: str, hook_id: int, delivery_id: int) -> HttpResponse:
    _, hook = _hook_for(request, slug, hook_id)
    delivery = get_object_or_404(WebhookDelivery, pk=delivery_id, hook=hook)
    if webhook_redeliver(delivery=delivery, by=request.user):
        messages.success(request, f"Delivery #{delivery.pk} ({delivery.event}) was queued again.")
    else:
        messages.error(request, f"Delivery #{delivery.pk} was delivered already; it is not sent twice.")
    return redirect("webhook-detail", slug=slug, hook_id=hook.pk)
