"""The API's exports, releases and reports: build, detail (evidence, residual risk, leak and
review counts), download, publish with the page's acknowledgement rule; the reports' JSON."""

from __future__ import annotations

import json

import pytest

from annotator.models import AuditEvent, Export
from tests.annotator.api.conftest import post_json

pytestmark = pytest.mark.django_db
EXPORTS = "/api/v1/projects/test/exports/"
REPORTS = "/api/v1/projects/test/reports/"


@pytest.fixture
def gold_project(corpus, members):
    corpus.second_opinion_presidio = False  # the rules' second opinion is enough here, and fast
    corpus.save(update_fields=["second_opinion_presidio"])
    return corpus


def build(api, body: dict, capture) -> dict:
    with capture(execute=True):
        response = post_json(api["admin"], EXPORTS, body)
    assert response.status_code == 202, response.content
    return api["admin"].get(response.json()["url"]).json()


def test_a_gold_export_is_built_listed_and_downloaded(api, gold_project, django_capture_on_commit_callbacks):
    export = build(api, {"kind": "gold", "test_fraction": 0.5, "seed": 1}, django_capture_on_commit_callbacks)
    assert export["status"] == "succeeded" and export["kind"] == "gold" and export["version"] == 1
    assert export["params"]["test_fraction"] == 0.5 and not export["stale"] and export["review"] is None
    listed = api["admin"].get(EXPORTS).json()
    assert listed["count"] == 1 and listed["items"][0]["id"] == export["id"]
    gold = next(f for f in export["files"] if f["name"] == "gold.jsonl")
    response = api["admin"].get(gold["url"])
    assert response.status_code == 200
    body = b"".join(response.streaming_content)
    assert len(body) == gold["size"] and len([json.loads(x) for x in body.splitlines()]) == 6
    assert AuditEvent.objects.filter(action="export.gold.download", details__via="api").exists()
    assert api["admin"].get(f"{EXPORTS}{export['id']}/files/mapping.jsonl").status_code == 404


def test_a_release_shows_its_evidence_and_publishing_needs_the_acknowledgement(api, gold_project,
                                                                               django_capture_on_commit_callbacks):
    release = build(api, {"kind": "release", "mode": "tag"}, django_capture_on_commit_callbacks)
    assert release["status"] == "succeeded", release["error"]
    report = release["report"]
    assert report["leaks"]["leaks"] == 0 and report["evidence"]["needs_acknowledgement"]
    assert report["residual_risk"] and release["needs_acknowledgement"] and release["acknowledgement"]
    assert set(release["review"]) >= {"pending", "confirmed", "dismissed", "total"}
    publish = f"{EXPORTS}{release['id']}/publish/"
    refused = post_json(api["admin"], publish, {})
    assert refused.status_code == 400 and "acknowledge" in refused.json()["detail"]
    published = post_json(api["admin"], publish, {"acknowledge": True})
    assert published.status_code == 200 and published.json()["published"]
    assert AuditEvent.objects.filter(action="export.release.acknowledge_unreviewed").exists()


def test_build_options_are_checked_by_the_pages_forms(api, gold_project):
    assert post_json(api["admin"], EXPORTS, {"kind": "gold", "test_fraction": 2}).json()["errors"]["test_fraction"]
    bad_source = post_json(api["admin"], EXPORTS, {"kind": "release", "source": "run:999"})
    assert bad_source.status_code == 400 and "source" in bad_source.json()["errors"]
    assert post_json(api["admin"], EXPORTS, {"kind": "zip"}).status_code == 400
    assert not Export.objects.exists()


def test_an_export_build_is_idempotent_by_key(api, gold_project):
    first = post_json(api["admin"], EXPORTS, {"kind": "gold"}, **{"Idempotency-Key": "k1"}).json()
    again = post_json(api["admin"], EXPORTS, {"kind": "gold"}, **{"Idempotency-Key": "k1"}).json()
    assert first["id"] == again["id"] and Export.objects.count() == 1


@pytest.mark.parametrize(("who", "status"), [("anonymous", 401), ("outsider", 404), ("annotator", 403),
                                              ("adjudicator", 403)])
def test_exports_and_releases_are_for_admins(api, gold_project, who, status):
    export = Export.objects.create(project=gold_project, kind=Export.Kind.RELEASE, version=1,
                                   status=Export.Status.SUCCEEDED, files=[{"name": "release.jsonl", "size": 1,
                                                                           "sha256": ""}])
    for url in (EXPORTS, f"{EXPORTS}{export.pk}/", f"{EXPORTS}{export.pk}/files/release.jsonl"):
        assert api[who].get(url).status_code == status
    assert post_json(api[who], EXPORTS, {"kind": "gold"}).status_code == status
    assert post_json(api[who], f"{EXPORTS}{export.pk}/publish/", {"acknowledge": True}).status_code == status


def test_reports_give_what_the_pages_show(api, computed):
    agreement = api["adjudicator"].get(f"{REPORTS}agreement/").json()
    job = computed["project"].jobs.filter(kind="agreement").first()
    assert agreement["report"] == job.result["agreement"] and agreement["stale"] is False
    assert agreement["pending"] is None and agreement["failed"] is None
    detectors = api["adjudicator"].get(f"{REPORTS}detectors/").json()
    assert detectors["report"] == job.result["detectors"]
    run = computed["run"]
    circularity = api["adjudicator"].get(f"{REPORTS}circularity/?run={run.pk}").json()
    computed["circularity"].refresh_from_db()
    assert circularity["report"] == computed["circularity"].result and "delta_f1" in circularity["report"]
    assert circularity["job"]["id"] == computed["circularity"].pk


def test_reports_are_empty_before_they_are_computed_and_queued_by_post(api, members, project):
    assert api["admin"].get(f"{REPORTS}agreement/").json() == {"job": None, "stale": False, "pending": None,
                                                               "failed": None, "report": None}
    queued = post_json(api["adjudicator"], f"{REPORTS}agreement/", {"n_boot": 10})
    assert queued.status_code == 202 and queued.json()["kind"] == "agreement"
    assert api["admin"].get(f"{REPORTS}agreement/").json()["pending"]["id"] == queued.json()["id"]
    assert post_json(api["adjudicator"], f"{REPORTS}agreement/", {"n_boot": -1}).status_code == 400
    assert post_json(api["adjudicator"], f"{REPORTS}circularity/", {"run": 12345}).json()["errors"]["run"]


@pytest.mark.parametrize(("who", "status"), [("anonymous", 401), ("outsider", 404), ("annotator", 403)])
def test_reports_are_for_adjudicators_and_admins(api, computed, who, status):
    for name in ("agreement", "detectors", "circularity"):
        response = api[who].get(f"{REPORTS}{name}/")
        assert response.status_code == status and "figures" not in response.content.decode()
    assert post_json(api[who], f"{REPORTS}agreement/", {}).status_code == status
