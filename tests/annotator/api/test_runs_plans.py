"""The API's detector runs and assignment plans: the Runs and Assignments pages' rules, in JSON."""

from __future__ import annotations

import pytest

from annotator.models import Assignment, AssignmentPlan, BackgroundJob, DetectorRun
from tests.annotator.api.conftest import post_json
from tests.annotator.helpers import RUN_MODEL

pytestmark = pytest.mark.django_db
RUNS = "/api/v1/projects/test/runs/"
PLANS = "/api/v1/projects/test/plans/"


def test_a_run_starts_runs_and_reports_its_progress_and_counts(api, ws_project, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = post_json(api["admin"], RUNS, {"detector": "rules", "config": {}})
    assert response.status_code == 202
    run = response.json()
    assert run["detector"] == "rules" and run["url"] == f"{RUNS}{run['id']}/"
    detail = api["admin"].get(run["url"]).json()
    assert detail["status"] == "succeeded"
    assert detail["progress"]["done"] == detail["progress"]["total"] > 0 and detail["progress"]["percent"] == 100
    assert isinstance(detail["label_counts"], list)
    listed = api["admin"].get(RUNS).json()
    assert listed["count"] == 2 and listed["items"][0]["id"] == run["id"]


def test_a_run_config_follows_the_pages_rules(api, ws_project):
    unknown = post_json(api["admin"], RUNS, {"detector": "no-such-preset"})
    assert unknown.status_code == 400 and "preset" in unknown.json()["errors"]
    key = post_json(api["admin"], RUNS, {"detector": "llm basic", "config": {"base_url": "http://evil.example"}})
    assert key.status_code == 400 and "base_url" in key.json()["detail"]
    schema = post_json(api["admin"], RUNS, {"config": {}})
    assert schema.status_code == 422 and schema.json()["errors"]
    assert DetectorRun.objects.count() == 1  # only the fixture's


def test_cancel_stops_a_queued_run_and_leaves_a_finished_one(api, ws_project, run):
    queued = DetectorRun.objects.create(project=ws_project, detector="rules")
    response = post_json(api["admin"], f"{RUNS}{queued.pk}/cancel/")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    assert post_json(api["admin"], f"{RUNS}{run.pk}/cancel/").json()["status"] == "succeeded"


@pytest.mark.parametrize(("who", "status"), [("anonymous", 401), ("outsider", 404), ("annotator", 403),
                                              ("adjudicator", 403), ("admin", 200)])
def test_runs_are_for_admins_and_annotators_never_see_one(api, ws_project, run, who, status):
    for url in (RUNS, f"{RUNS}{run.pk}/"):
        response = api[who].get(url)
        assert response.status_code == status
        assert (RUN_MODEL in response.content.decode()) == (status == 200)
    assert post_json(api[who], RUNS, {"detector": "rules"}).status_code == (202 if status == 200 else status)


def test_another_projects_run_is_404(api, ws_project, members):
    from annotator.services.projects import membership_set, project_create

    other = project_create(name="Other", slug="other")
    membership_set(project=other, user=members["admin"], role="admin")
    theirs = DetectorRun.objects.create(project=other, detector="rules")
    assert api["admin"].get(f"{RUNS}{theirs.pk}/").status_code == 404
    assert api["admin"].get(f"/api/v1/projects/other/runs/{theirs.pk}/").status_code == 200


def test_a_dry_run_plan_previews_and_writes_nothing(api, ws_project):
    response = post_json(api["admin"], PLANS, {"strategy": "dialogues", "n_dialogues": 2, "k": 2, "seed": 7,
                                               "dry_run": True})
    assert response.status_code == 200
    body = response.json()
    assert body["id"] is None and body["seed"] == 7 and body["summary"]
    assert not Assignment.objects.exists() and not AssignmentPlan.objects.exists()


def test_a_plan_is_built_as_a_job_with_the_make_assignments_options(api, ws_project, members,
                                                                    django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = post_json(api["admin"], PLANS, {"strategy": "dialogues", "n_dialogues": 2, "seed": 3,
                                                   "annotators": ["annotator", "annotator2"]})
    assert response.status_code == 202
    job = api["admin"].get(response.json()["url"]).json()
    assert job["kind"] == "plan" and job["status"] == "succeeded"
    plan = api["admin"].get(f"{PLANS}{job['result']['plan_id']}/").json()
    assert plan["seed"] == 3 and plan["params"]["strategy"] == "dialogues" and "exposure" in plan
    assert Assignment.objects.filter(plan_id=plan["id"]).count() == job["result"]["assignments"] > 0


def test_plan_options_are_checked_as_on_the_page(api, ws_project):
    flagged = post_json(api["admin"], PLANS, {"strategy": "flagged"})
    assert flagged.status_code == 400 and "runs" in flagged.json()["errors"]
    stranger = post_json(api["admin"], PLANS, {"strategy": "dialogues", "n_dialogues": 1, "annotators": ["nobody"]})
    assert stranger.status_code == 400 and "nobody" in stranger.json()["detail"]
    assert not BackgroundJob.objects.filter(kind="plan").exists()


@pytest.mark.parametrize(("who", "status"), [("anonymous", 401), ("outsider", 404), ("annotator", 403),
                                              ("adjudicator", 403)])
def test_plans_are_for_admins(api, ws_project, planned, who, status):
    plan = planned("blind")
    assert post_json(api[who], PLANS, {"strategy": "dialogues", "n_dialogues": 1}).status_code == status
    assert api[who].get(f"{PLANS}{plan.pk}/").status_code == status
