"""A release built in the app de-identifies the whole record: speaker labels, ids, metadata and
timestamps under the project's field policy, with candidates outside the messages in the review
queue (confirmed, the next build replaces them)."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotator.services import release_review as review
from annotator.services.exports import export_dir
from tests.annotator.exports.conftest import RECORD
from tests.annotator.exports.test_release_review import _build
from tests.annotator.helpers import original_ids

NAMES = ("okafor", "maria", "lopez", "caleb", "jose", "josé")


def _released(export) -> dict:
    return json.loads((export_dir(export) / "release.jsonl").read_text(encoding="utf-8").splitlines()[0])


@pytest.mark.django_db
def test_no_name_of_the_record_ships_and_the_policy_is_declared(record_project, members,
                                                              django_capture_on_commit_callbacks):
    export = _build(django_capture_on_commit_callbacks, record_project, members["admin"])
    row = _released(export)
    out = json.dumps(row, ensure_ascii=False).lower()
    assert not [n for n in NAMES if n in out], out
    assert original_ids(export) == {row["id"]: RECORD["id"]}
    speakers = [m["speaker"] for m in row["messages"]]
    assert speakers[3] == "T" and row["messages"][0]["text"].startswith(speakers[1])
    assert row["messages"][3]["text"].endswith(f"{speakers[2]}, talk to me.")
    assert row["meta"]["grade"] == 4 and row["meta"]["teacher"] == speakers[0]
    assert all(m["ts"][10:] == o["ts"][10:] != "" and m["ts"] != o["ts"]
               for m, o in zip(row["messages"], RECORD["messages"], strict=True))
    assert {f["field"]: f["policy"] for f in export.manifest["fields"]}["messages[].speaker"] == "pseudonym"
    assert export.report["summary"]["speaker_originals"] == 3


@pytest.mark.django_db
def test_an_envelope_candidate_is_reviewed_and_replaced_by_the_next_build(record_project, members,
                                                                        django_capture_on_commit_callbacks, client):
    export = _build(django_capture_on_commit_callbacks, record_project, members["admin"])
    email = export.candidates.get(field="meta.student_email")
    assert email.reason == "second_opinion" and email.message.position == 0
    client.force_login(members["adjudicator"])
    page = client.get(reverse("release-review-item", args=[record_project.slug, export.pk, email.pk]))
    assert page.status_code == 200
    assert "metadata “student_email”" in page.content.decode() and "lincoln.k12.us" in page.content.decode()
    review.candidate_decide(candidate_id=email.pk, export=export, user=members["adjudicator"], verdict="confirmed")
    newer = _build(django_capture_on_commit_callbacks, record_project, members["admin"])
    assert "lincoln" not in _released(newer)["meta"]["student_email"]
    assert not newer.candidates.filter(field="meta.student_email", status="pending").exists()


@pytest.mark.django_db
def test_the_project_chooses_its_policy_per_field(record_project, members, django_capture_on_commit_callbacks,
                                                 client):
    client.force_login(members["admin"])
    form = client.get(reverse("project-settings", args=[record_project.slug]))
    assert "The released record" in form.content.decode()
    record_project.release_fields = {"id": "keep", "ts": "drop", "meta_keys": {"student_email": "drop"}}
    record_project.save(update_fields=["release_fields"])
    row = _released(_build(django_capture_on_commit_callbacks, record_project, members["admin"]))
    assert row["id"] == RECORD["id"] and "student_email" not in row["meta"]
    assert all("ts" not in m for m in row["messages"])


@pytest.mark.django_db
def test_the_projects_role_words_reach_the_speakers_detector(project):
    from annotator.services.runs import detector_config

    project.release_fields = {"role_labels": ["T", "S", "Coach"]}
    project.active_tagger = "some-model/1"  # recorded as a path only: nothing loads here
    project.save(update_fields=["release_fields", "active_tagger"])
    assert detector_config(project=project, detector="speakers", config={})["roles"] == ["T", "S", "Coach"]
    ensemble = detector_config(project=project, detector="ensemble", config={})
    assert ensemble["speakers"]["roles"] == ["T", "S", "Coach"]


@pytest.mark.django_db
def test_a_settings_post_without_the_record_fields_keeps_the_projects_policy(project, members, client):
    project.release_fields = {"ts": "drop"}
    project.save(update_fields=["release_fields"])
    client.force_login(members["admin"])
    form = client.get(reverse("project-settings", args=[project.slug])).context["form"]
    data = {k: v for k, v in form.initial.items() if v is not None and k != "suggestion_runs"}
    data.update({"name": project.name, "slug": project.slug, "labels-TOTAL_FORMS": "1", "labels-INITIAL_FORMS": "0",
                 "labels-0-label": "NAME", "labels-0-description": "a person"})
    response = client.post(reverse("project-settings", args=[project.slug]), data)
    assert response.status_code == 302, response.content.decode()[:2000]
    project.refresh_from_db()
    assert project.release_fields == {"ts": "drop"}
