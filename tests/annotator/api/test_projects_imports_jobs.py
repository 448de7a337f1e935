"""The API's project list, imports and jobs, as admin, adjudicator, annotator, outsider and
anonymous; errors as JSON (the import's line-numbered problems), pagination, idempotency keys."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotator.models import BackgroundJob, Dialogue, Role
from tests.annotator.api.conftest import bearer

pytestmark = pytest.mark.django_db
IMPORTS = "/api/v1/projects/test/imports/"
GOOD = {"id": "n1", "messages": [{"speaker": "Tutor", "text": "Hi Sam, ready?",
                                  "spans": [{"start": 3, "end": 6, "label": "NAME"}]}]}


def lines(*objs) -> bytes:
    return "".join((o if isinstance(o, str) else json.dumps(o)) + "\n" for o in objs).encode()


def upload(client, raw: bytes, name: str = "n.jsonl", headers: dict | None = None, **fields):
    return client.post(IMPORTS, {"file": SimpleUploadedFile(name, raw), **fields}, headers=headers or {})


def test_projects_lists_each_members_projects_and_role(api, members, project):
    from annotator.services.projects import membership_set, project_create

    other = project_create(name="Other", slug="other")
    membership_set(project=other, user=members["outsider"], role=Role.ADJUDICATOR)
    seen = {who: api[who].get("/api/v1/projects/").json()["items"] for who in ("admin", "annotator", "outsider")}
    assert seen["admin"] == [{"slug": "test", "name": "Test project", "role": "admin"}]
    assert seen["annotator"] == [{"slug": "test", "name": "Test project", "role": "annotator"}]
    assert seen["outsider"] == [{"slug": "other", "name": "Other", "role": "adjudicator"}]
    assert api["anonymous"].get("/api/v1/projects/").status_code == 401


def test_lists_are_paginated_with_a_next_link(members, project, django_user_model):
    from annotator.services.projects import project_create

    for i in range(3):
        project_create(name=f"P{i}", slug=f"p{i}")
    root = bearer(django_user_model.objects.create_superuser("root", password="pw"))
    first = root.get("/api/v1/projects/?limit=2").json()
    assert first["count"] == 4 and [p["slug"] for p in first["items"]] == ["p0", "p1"]
    second = root.get(first["next"]).json()
    assert [p["slug"] for p in second["items"]] == ["p2", "test"] and second["next"] is None
    refused = root.get("/api/v1/projects/?limit=0")
    assert refused.status_code == 422 and refused.json()["detail"] == "The request is not valid."


def test_an_import_is_a_job_that_imports_as_the_page_does(api, members, project, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(api["admin"], lines(GOOD), spans_as="gold")
    assert response.status_code == 202
    job = response.json()
    assert job["kind"] == "import" and job["status"] == "queued" and job["url"] == f"/api/v1/jobs/{job['id']}/"
    done = api["admin"].get(job["url"]).json()
    assert done["status"] == "succeeded" and done["result"]["dialogues"] == 1 and done["result"]["spans"] == 1
    assert Dialogue.objects.filter(project=project, external_id="n1").exists()


def test_a_bad_file_fails_its_job_with_the_pages_line_numbered_errors(api, members, project,
                                                                      django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        job = upload(api["admin"], lines(GOOD, "{bad", {"messages": []})).json()
    failed = api["admin"].get(job["url"]).json()
    assert failed["status"] == "failed"
    assert "line 2: malformed JSON" in failed["error"] and "line 3:" in failed["error"]
    assert not Dialogue.objects.filter(project=project).exists()  # all or nothing


def test_a_reimport_is_refused_unless_skip_existing(api, members, project, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        upload(api["admin"], lines(GOOD))
        again = upload(api["admin"], lines(GOOD, {"id": "n2", "messages": [{"speaker": "T", "text": "new"}]})).json()
        skipped = upload(api["admin"], lines(GOOD, {"id": "n2", "messages": [{"speaker": "T", "text": "new"}]}),
                         skip_existing="true").json()
    assert "already exist" in api["admin"].get(again["url"]).json()["error"]
    assert api["admin"].get(skipped["url"]).json()["result"]["skipped"] == 1
    assert Dialogue.objects.filter(project=project).count() == 2


def test_import_options_are_checked_by_the_pages_form(api, members, project, settings):
    response = upload(api["admin"], lines(GOOD), spans_as="everything")
    assert response.status_code == 400
    body = response.json()
    assert "spans_as" in body["errors"] and "spans_as" in body["detail"]
    settings.BLINDSPOT_IMPORT_MAX_BYTES = 10
    too_big = upload(api["admin"], lines(GOOD))
    assert too_big.status_code == 400 and "over the 10-byte limit" in too_big.json()["detail"]
    assert not BackgroundJob.objects.exists()


@pytest.mark.parametrize(("who", "status"), [("anonymous", 401), ("outsider", 404), ("annotator", 403),
                                              ("adjudicator", 403), ("admin", 202)])
def test_imports_are_for_admins(api, members, project, who, status):
    response = upload(api[who], lines(GOOD))
    assert response.status_code == status
    assert response.json()["detail"] if status != 202 else response.json()["id"]


def test_the_same_idempotency_key_returns_the_same_job(api, members, project):
    first = upload(api["admin"], lines(GOOD), headers={"Idempotency-Key": "night-42"})
    second = upload(api["admin"], lines(GOOD), headers={"Idempotency-Key": "night-42"})
    assert first.status_code == second.status_code == 202
    assert first.json()["id"] == second.json()["id"]
    assert BackgroundJob.objects.filter(kind="import").count() == 1
    other = upload(api["admin"], lines(GOOD), headers={"Idempotency-Key": "night-43"})
    assert other.json()["id"] != first.json()["id"]
    # another user's identical key is theirs alone
    from annotator.services.projects import membership_set

    membership_set(project=project, user=members["adjudicator"], role=Role.ADMIN)
    theirs = upload(api["adjudicator"], lines(GOOD), headers={"Idempotency-Key": "night-42"})
    assert theirs.json()["id"] != first.json()["id"]
    reused = api["admin"].post("/api/v1/projects/test/runs/", {"detector": "rules"},
                               content_type="application/json", headers={"Idempotency-Key": "night-42"})
    assert reused.status_code == 409 and "already used" in reused.json()["detail"]


def test_a_refused_request_frees_its_key_and_a_twin_in_flight_is_told_to_wait(api, ws_project, members):
    from annotator.models import DetectorRun, IdempotencyKey

    runs, key = "/api/v1/projects/test/runs/", {"Idempotency-Key": "retry-me"}
    refused = api["admin"].post(runs, {"detector": "llm basic", "config": {"base_url": "http://x"}},
                                content_type="application/json", headers=key)
    assert refused.status_code == 400 and not IdempotencyKey.objects.exists()
    fixed = api["admin"].post(runs, {"detector": "rules"}, content_type="application/json", headers=key)
    assert fixed.status_code == 202 and DetectorRun.objects.filter(pk=fixed.json()["id"]).exists()
    IdempotencyKey.objects.create(user=members["admin"], key="in-flight", route=runs, status=0, body={})
    twin = api["admin"].post(runs, {"detector": "rules"}, content_type="application/json",
                             headers={"Idempotency-Key": "in-flight"})
    assert twin.status_code == 409 and "still being answered" in twin.json()["detail"]
    too_long = api["admin"].post(runs, {"detector": "rules"}, content_type="application/json",
                                 headers={"Idempotency-Key": "k" * 201})
    assert too_long.status_code == 422


@pytest.mark.parametrize(("who", "status"), [("anonymous", 401), ("outsider", 404), ("annotator", 403),
                                              ("adjudicator", 403), ("admin", 200)])
def test_any_job_is_readable_by_the_projects_admins(api, members, project, who, status):
    job = BackgroundJob.objects.create(project=project, kind=BackgroundJob.Kind.AGREEMENT, progress_done=1,
                                       progress_total=4, message="Bootstrapping")
    response = api[who].get(f"/api/v1/jobs/{job.pk}/")
    assert response.status_code == status
    if status == 200:
        body = response.json()
        assert (body["kind"], body["status"], body["progress"], body["message"]) == (
            "agreement", "queued", {"done": 1, "total": 4}, "Bootstrapping")


def test_an_unknown_job_is_404(api, members):
    response = api["admin"].get("/api/v1/jobs/999999/")
    assert response.status_code == 404 and response.json() == {"detail": "No such job."}


# ---- every refusal is JSON ------------------------------------------------------------------


@pytest.mark.parametrize("query", ["offset=9223372036854775808", "offset=-1", "limit=0", "limit=100000",
                                   "offset=abc"])
def test_offsets_and_limits_out_of_bounds_are_a_json_422(api, project, query):
    """An offset past a bigint was an HTML 500 ("bigint out of range") on every paged list."""
    response = api["admin"].get(f"/api/v1/projects/?{query}")
    assert response.status_code == 422 and response["Content-Type"].startswith("application/json")
    assert response.json()["detail"]


def test_a_body_over_the_limit_is_a_json_413(api, project, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    response = api["admin"].post("/api/v1/projects/test/exports/", {"kind": "gold", "pad": "x" * 2048},
                                 content_type="application/json")
    assert response.status_code == 413 and response["Content-Type"].startswith("application/json")
    assert "1024" in response.json()["detail"]


def test_a_long_file_name_is_a_json_422(api, project):
    """A 3,000-character name makes the part's headers longer than Django's multipart parser reads."""
    import io

    raw = io.BytesIO(lines({"id": "x", "messages": [{"speaker": "Tutor", "text": "Hi"}]}))
    raw.name = "n" * 3000 + ".jsonl"  # a SimpleUploadedFile would cut it to 255 characters itself
    response = api["admin"].post(IMPORTS, {"file": raw})
    assert response.status_code == 422 and response["Content-Type"].startswith("application/json")
    assert "name" in response.json()["detail"]


def test_a_key_replayed_with_another_body_is_a_422(api, ws_project):
    """The same key with another file, or another detector, silently returned the first job."""
    first = upload(api["admin"], lines(GOOD), headers={"Idempotency-Key": "k-files"})
    assert upload(api["admin"], lines(GOOD), headers={"Idempotency-Key": "k-files"}).json()["id"] == first.json()["id"]
    other = dict(GOOD, id="another-dialogue")
    refused = upload(api["admin"], lines(other), headers={"Idempotency-Key": "k-files"})
    assert refused.status_code == 422 and "another request" in refused.json()["detail"]
    renamed = upload(api["admin"], lines(GOOD), name="other.jsonl", headers={"Idempotency-Key": "k-files"})
    assert renamed.status_code == 422
    runs = "/api/v1/projects/test/runs/"
    rules = api["admin"].post(runs, {"detector": "rules"}, content_type="application/json",
                              headers={"Idempotency-Key": "k-runs"})
    assert rules.status_code == 202
    again = api["admin"].post(runs, {"detector": "rules", "config": {"x": 1}}, content_type="application/json",
                              headers={"Idempotency-Key": "k-runs"})
    assert again.status_code == 422 and "another request" in again.json()["detail"]
    assert BackgroundJob.objects.filter(kind="import").count() == 1
