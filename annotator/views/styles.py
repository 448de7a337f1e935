"""Stylesheets generated per project, so that no page needs an inline style (see the CSP settings)."""

from __future__ import annotations

import hashlib

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_GET

from annotator import access
from annotator.rendering import label_stylesheet


def label_styles_url(project) -> str:
    """The stylesheet's address with a hash of its content, so a changed colour is fetched at once."""
    digest = hashlib.sha256(label_stylesheet(project.taxonomy).encode()).hexdigest()[:12]
    return f"{reverse('project-label-styles', args=[project.slug])}?v={digest}"


@login_required
@require_GET
def label_styles(request: HttpRequest, slug: str) -> HttpResponse:
    """The project's label colours (``--c`` per ``data-label``) for its members."""
    project = access.project_for(request.user, slug)
    response = HttpResponse(label_stylesheet(project.taxonomy), content_type="text/css; charset=utf-8")
    response["Cache-Control"] = "private, max-age=86400"  # the page links it with ?v=<content hash>
    return response
