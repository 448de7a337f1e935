"""Plans "where the model is least sure" from a tagger run's margins."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotator.models import (
    Assignment,
    AssignmentPlan,
    BackgroundJob,
    DetectorRun,
    MessageUncertainty,
    Prediction,
)
from annotator.services import assignments
from tests.annotator.helpers import msg

pytestmark = pytest.mark.django_db

# (dialogue, position) -> margin; flagged: d1/0 and d2/1. Least sure: d2/1, d1/3, d1/1.
MARGINS = {("d1", 0): 0.4123, ("d1", 1): 0.0271, ("d1", 2): 0.3391, ("d1", 3): 0.0188,
           ("d2", 0): 0.0925, ("d2", 1): 0.0036}
LEAST_SURE = {("d2", 1), ("d1", 3), ("d1", 1)}


@pytest.fixture
def tagger_run(ws_project):
    r = DetectorRun.objects.create(project=ws_project, detector="tagger", status=DetectorRun.Status.SUCCEEDED,
                                   model_version="tiny/v1")
    for (d, p), margin in MARGINS.items():
        MessageUncertainty.objects.create(run=r, message=msg(ws_project, d, p), margin=margin)
    Prediction.objects.create(run=r, message=msg(ws_project, "d1", 0), start=3, end=8, label="NAME", score=0.9)
    Prediction.objects.create(run=r, message=msg(ws_project, "d2", 1), start=12, end=15, label="NAME", score=0.51)
    return r


def _key(a: Assignment) -> tuple[str, int]:
    return a.message.dialogue.external_id, a.message.position


def _post(client, members, **extra):
    data = {"strategy": "uncertain", "budget": 4, "audit_share": 0.25, "k": 1, "seed": 8,
            "annotators": [members["annotator"].pk, members["annotator2"].pk], **extra}
    return client.post(reverse("workspace-admin", kwargs={"slug": "test"}), data)


def test_the_plan_form_builds_the_least_sure_plan_as_a_job(client, members, ws_project, tagger_run,
                                                          django_capture_on_commit_callbacks):
    client.force_login(members["admin"])
    with django_capture_on_commit_callbacks(execute=True):
        response = _post(client, members, runs=[tagger_run.pk])
    job = BackgroundJob.objects.get(kind=BackgroundJob.Kind.PLAN)
    assert response.status_code == 302 and job.status == BackgroundJob.Status.SUCCEEDED, job.error
    plan = AssignmentPlan.objects.get()
    s = plan.summary
    assert (s["strategy"], s["uncertainty_run"], s["uncertain"], s["audit_sampled"], s["audit_pool"]) \
        == ("uncertain", tagger_run.pk, 3, 1, 2)
    assert s["margin_max"] == 0.0271 and s["margin_next"] == 0.0925 and s["uncertain_flagged"] == 1
    assert plan.params["budget"] == 4 and plan.params["audit_share"] == 0.25
    rows = list(Assignment.objects.select_related("message__dialogue"))
    assert len(rows) == 4
    top = [a for a in rows if _key(a) in LEAST_SURE]
    audit = [a for a in rows if _key(a) not in LEAST_SURE]
    assert len(top) == 3 and {a.inclusion_probability for a in top} == {1.0}
    assert len(audit) == 1 and _key(audit[0]) in {("d1", 2), ("d2", 0)} and audit[0].inclusion_probability == 0.5
    assert audit[0].flagged is False
    for who in ("annotator", "annotator2"):  # queued in dialogue order, not by margin
        mine = sorted((a for a in rows if a.annotator == members[who]), key=lambda a: a.order)
        assert [_key(a) for a in mine] == sorted(_key(a) for a in mine)
    page = client.get(reverse("workspace-plan", kwargs={"slug": "test", "plan_id": plan.pk})).content.decode()
    assert "Least sure" in page and "3 of 6 messages scored by run" in page and "1 of 2 unflagged" in page


def test_the_same_seed_gives_the_same_plan(members, ws_project, tagger_run):
    people = [members["annotator"], members["annotator2"]]
    args = {"project": ws_project, "strategy": "uncertain", "annotators": people, "k": 1, "seed": 3,
            "runs": [tagger_run], "budget": 5, "audit_share": 0.4, "dry_run": True}
    a, b = assignments.plan_create(**args), assignments.plan_create(**args)
    assert a.summary == b.summary and a.summary["audit_sampled"] == 2


@pytest.mark.parametrize("runs,match", [
    ("none", "choose a tagger run"),
    ("other", "None of the chosen runs is a tagger run"),
    ("unscored", "has no uncertainty scores"),
    ("two", "Choose one tagger run to rank by, not 2"),
])
def test_a_plan_without_one_scored_tagger_run_says_why(members, ws_project, run, tagger_run, runs, match):
    unscored = DetectorRun.objects.create(project=ws_project, detector="tagger")
    second = DetectorRun.objects.create(project=ws_project, detector="tagger")
    MessageUncertainty.objects.create(run=second, message=msg(ws_project, "d1", 0), margin=0.2)
    chosen = {"none": [], "other": [run], "unscored": [run, unscored], "two": [tagger_run, second]}[runs]
    with pytest.raises(assignments.PlanError, match=match):
        assignments.plan_start(project=ws_project, by=members["admin"], strategy="uncertain", runs=chosen,
                               annotators=[members["annotator"]], k=1, budget=3, queue=False)
    assert not BackgroundJob.objects.exists()


def test_the_form_asks_for_the_tagger_run_and_the_budget(client, members, ws_project, tagger_run):
    client.force_login(members["admin"])
    body = _post(client, members, budget="").content.decode()
    assert "Choose the tagger run whose scores to rank by." in body
    assert "Give the number of messages to plan." in body
    assert not BackgroundJob.objects.exists()
    assert f"#{tagger_run.pk} tagger · Succeeded · scored (least sure)" in body  # the run to choose
    assert body.count("scored (least sure)") == 1  # the other run has no margins


def test_margins_never_reach_a_blind_annotator(client, members, ws_project, tagger_run,
                                               django_capture_on_commit_callbacks):
    ws_project.visibility_mode = "blind"
    ws_project.save(update_fields=["visibility_mode"])
    client.force_login(members["admin"])
    with django_capture_on_commit_callbacks(execute=True):
        _post(client, members, runs=[tagger_run.pk], budget=6, audit_share=0)
    assert Assignment.objects.filter(condition="blind").count() == 6
    for who in ("annotator", "annotator2"):
        client.force_login(members[who])
        pages = [client.get(reverse("workspace-queue", kwargs={"slug": "test"}), follow=True),
                 client.get(reverse("workspace-list", kwargs={"slug": "test"}))]
        for a in Assignment.objects.filter(annotator=members[who]):
            pages.append(client.get(reverse("workspace-item", kwargs={"slug": "test", "public_id": a.public_id})))
        assert len(pages) >= 4
        for page in pages:
            assert page.status_code == 200
            body = page.content.decode()
            assert not [m for m in MARGINS.values() if str(m) in body or f"{m:.3f}" in body]
            assert "margin" not in body.lower() and "least sure" not in body.lower()
        plan = reverse("workspace-plan", kwargs={"slug": "test", "plan_id": AssignmentPlan.objects.get().pk})
        assert client.get(plan).status_code == 403


def test_the_command_plans_the_least_sure_and_refuses_a_run_without_scores(members, ws_project, run, tagger_run):
    from io import StringIO

    from django.core.management import call_command
    from django.core.management.base import CommandError

    out = StringIO()
    call_command("make_assignments", project="test", strategy="uncertain", runs=str(tagger_run.pk), budget=4,
                 k=1, seed=2, dry_run=True, as_json=True, stdout=out)
    assert '"uncertain": 3' in out.getvalue() and '"audit_sampled": 1' in out.getvalue()
    with pytest.raises(CommandError, match="None of the chosen runs is a tagger run"):
        call_command("make_assignments", project="test", strategy="uncertain", runs=str(run.pk), budget=4, k=1)
    assert not Assignment.objects.exists()
