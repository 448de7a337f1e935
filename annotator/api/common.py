"""What every endpoint of the API shares: token authentication and its throttle, JSON errors,
form errors as JSON, idempotent job starts, and the JSON form of jobs, runs and exports.

Endpoints stay thin: they parse with the pages' own forms, look objects up through
``annotator.access`` (404 for another project, 403 for a lower role) and call the pages' services.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from django import forms
from django.conf import settings
from django.core.exceptions import PermissionDenied, RequestDataTooBig, SuspiciousOperation
from django.http import Http404, HttpRequest
from django.http.multipartparser import MultiPartParserError
from django.urls import reverse
from ninja import Status
from ninja.errors import AuthenticationError, HttpError
from ninja.errors import ValidationError as SchemaError
from ninja.security import HttpBearer
from ninja.throttling import SimpleRateThrottle

from annotator.models import BackgroundJob, DetectorRun, Export
from annotator.selectors.runs import run_progress
from annotator.services import jobs
from annotator.services.accounts import client_address
from annotator.services.api_tokens import (
    IdempotencyConflict,
    IdempotencyMismatch,
    api_address_wait,
    api_token_failed,
    idempotent_claim,
    idempotent_record,
    idempotent_release,
    rate_hit,
    token_authenticate,
)

MAX_KEY = 200  # characters of an Idempotency-Key
UNAUTHORIZED = ("Send a valid API token as 'Authorization: Bearer <token>' "
                "(manage.py api_token USER makes one; revoked and expired tokens are refused).")


class ApiError(Exception):
    """A refusal with its status, message and (for a form) the errors of each field."""

    def __init__(self, status: int, message: str, errors: dict | None = None, headers: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.errors, self.headers = status, message, errors, headers or {}


class BearerToken(HttpBearer):
    """``Authorization: Bearer <token>``: the token's user becomes ``request.user`` (roles apply).

    An address that sent too many invalid tokens is refused first, before its token is looked up
    (``api_tokens.api_address_wait``), and each invalid token it sends is counted."""

    def __call__(self, request: HttpRequest):
        wait = api_address_wait(client_address(request))
        if wait is not None:
            raise ApiError(429, f"Too many requests with invalid API tokens from your address; try again in "
                                f"{wait} seconds.", headers={"Retry-After": str(wait)})
        return super().__call__(request)

    def authenticate(self, request: HttpRequest, token: str):
        found = token_authenticate(token)
        if found is None:
            api_token_failed(address=client_address(request))
        else:
            request.user = found.user
        return found


class TokenThrottle(SimpleRateThrottle):
    """Requests per token (``BLINDSPOT_API_RATE``, e.g. ``600/m``, read per request so settings
    apply), counted atomically (``api_tokens.rate_hit``) in fixed windows."""

    def __init__(self):
        super().__init__(settings.BLINDSPOT_API_RATE)
        self.retry_after = self.duration

    def allow_request(self, request: HttpRequest) -> bool:
        self.num_requests, self.duration = self.parse_rate(settings.BLINDSPOT_API_RATE)
        count, self.retry_after = rate_hit(f"blindspot:api-rate:{request.auth.token_hash}", self.duration)
        return count <= self.num_requests

    def wait(self) -> float:
        return self.retry_after


def error_handlers(api) -> None:
    """Every refusal as ``{"detail": message}`` (plus ``errors`` for a form), with its status."""

    def answer(request, status: int, message: str, errors=None, **headers):
        response = api.create_response(request, {"detail": message, **({"errors": errors} if errors else {})},
                                       status=status)
        for name, value in headers.items():
            response[name.replace("_", "-")] = value
        return response

    api.add_exception_handler(ApiError, lambda r, e: answer(r, e.status, e.message, e.errors,
                                                            **{k.replace("-", "_"): v for k, v in e.headers.items()}))
    api.add_exception_handler(AuthenticationError, lambda r, e: answer(r, 401, UNAUTHORIZED,
                                                                       WWW_Authenticate="Bearer"))
    api.add_exception_handler(HttpError, lambda r, e: answer(r, e.status_code, str(e)))
    api.add_exception_handler(Http404, lambda r, e: answer(r, 404, str(e) or "Not found."))
    api.add_exception_handler(PermissionDenied, lambda r, e: answer(r, 403, str(e) or "Forbidden."))
    api.add_exception_handler(SchemaError, lambda r, e: answer(r, 422, "The request is not valid.", e.errors))
    api.add_exception_handler(RequestDataTooBig, lambda r, e: answer(
        r, 413, f"The request's body is over the {settings.DATA_UPLOAD_MAX_MEMORY_SIZE}-byte limit "
                "(a file goes as an upload, under its own limit)."))
    api.add_exception_handler(MultiPartParserError, lambda r, e: answer(
        r, 422, f"The upload could not be read ({e}); a part's headers, the file's name among them, "
                "hold at most 1,024 bytes."))
    api.add_exception_handler(SuspiciousOperation, lambda r, e: answer(r, 400, str(e) or "The request is not valid."))


def form_or_error(form: forms.Form) -> forms.Form:
    """The bound page form, valid, or a 400 naming each field's problems."""
    if not form.is_valid():
        errors = {field: [str(m) for m in msgs] for field, msgs in form.errors.items()}
        shown = "; ".join(f"{'' if f == '__all__' else f + ': '}{' '.join(m)}" for f, m in errors.items())
        raise ApiError(400, f"Not accepted: {shown}", errors)
    return form


def request_fingerprint(request: HttpRequest) -> str:
    """SHA-256 of what the request sends: its JSON body, or its form fields and each uploaded
    file's name and bytes (an upload's raw body is no longer readable once it was parsed)."""
    digest = hashlib.sha256()
    if not request.FILES:
        digest.update(request.body)
        return digest.hexdigest()
    digest.update(json.dumps(sorted(request.POST.lists())).encode())
    for field, files in sorted(request.FILES.lists()):
        for upload in files:
            digest.update(json.dumps([field, upload.name, upload.size]).encode())
            for chunk in upload.chunks():
                digest.update(chunk)
            upload.seek(0)
    return digest.hexdigest()


def started(request: HttpRequest, start: Callable[[], dict[str, Any]], status: int = 202) -> Status:
    """Run ``start`` (it queues a job and returns its JSON), once per ``Idempotency-Key``: a
    request that repeats a key gets the first answer again and starts nothing."""
    key = request.headers.get("Idempotency-Key", "").strip()
    if not key:
        return Status(status, start())
    if len(key) > MAX_KEY:
        raise ApiError(422, f"An Idempotency-Key has at most {MAX_KEY} characters.")
    try:
        stored = idempotent_claim(user=request.user, key=key, route=request.path,
                                  request_hash=request_fingerprint(request))
    except IdempotencyMismatch as exc:
        raise ApiError(422, str(exc)) from None
    except IdempotencyConflict as exc:
        raise ApiError(409, str(exc)) from None
    if stored is not None:
        return Status(stored.status, stored.body)
    try:
        body = start()
    except BaseException:
        idempotent_release(user=request.user, key=key)
        raise
    idempotent_record(user=request.user, key=key, status=status, body=body)
    return Status(status, body)


def _when(value) -> str | None:
    return value.isoformat() if value else None


def _lifecycle(job) -> dict[str, Any]:
    done, total = jobs.job_live_progress(job)
    return {"status": job.status, "progress": {"done": done, "total": total}, "error": job.error,
            "started_at": _when(job.started_at), "finished_at": _when(job.finished_at),
            "created_at": _when(job.created_at)}


def job_json(job: BackgroundJob) -> dict[str, Any]:
    return {"id": job.pk, "kind": job.kind, "project": job.project.slug if job.project else None,
            "message": job.message, "result": job.result, **_lifecycle(job),
            "url": reverse("api:api-job", kwargs={"job_id": job.pk})}


def run_json(run: DetectorRun) -> dict[str, Any]:
    slug = run.project.slug
    return {"id": run.pk, "label": run.label, "detector": run.detector, "source": run.source,
            "detector_version": run.detector_version, "model_version": run.model_version, "config": run.config,
            **_lifecycle(run), "progress": run_progress(run),
            "url": reverse("api:api-run", kwargs={"slug": slug, "run_id": run.pk})}


def export_json(export: Export) -> dict[str, Any]:
    slug = export.project.slug
    files = [{**f, "url": reverse("api:api-export-file", kwargs={"slug": slug, "export_id": export.pk,
                                                                 "name": f["name"]})}
             for f in export.files]
    return {"id": export.pk, "kind": export.kind, "version": export.version, "params": export.params,
            "source_run": export.source_run_id, "publishable": export.publishable,
            "published": bool(export.report.get("published")), "files": files, **_lifecycle(export),
            "url": reverse("api:api-export", kwargs={"slug": slug, "export_id": export.pk})}
