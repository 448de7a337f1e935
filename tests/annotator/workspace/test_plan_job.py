"""A sampling plan is built as a background job with progress, not in the request."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotator.models import Assignment, AssignmentPlan, BackgroundJob
from annotator.services import assignments

pytestmark = pytest.mark.django_db


def _post_plan(client, members, run, **extra):
    data = {"strategy": "flagged", "runs": [run.pk], "k": 2, "seed": 5,
            "annotators": [members["annotator"].pk, members["annotator2"].pk], **extra}
    return client.post(reverse("workspace-admin", kwargs={"slug": "test"}), data)


def test_plan_form_starts_a_job_whose_page_shows_the_plan(client, members, ws_project, run,
                                                          django_capture_on_commit_callbacks):
    client.force_login(members["admin"])
    with django_capture_on_commit_callbacks(execute=True):
        response = _post_plan(client, members, run)
    job = BackgroundJob.objects.get(kind=BackgroundJob.Kind.PLAN)
    assert response.status_code == 302
    assert response["Location"] == reverse("job-detail", kwargs={"slug": "test", "job_id": job.pk})
    job.refresh_from_db()
    assert job.status == BackgroundJob.Status.SUCCEEDED, job.error
    plan = AssignmentPlan.objects.get()
    assert job.result == {"plan_id": plan.pk, "assignments": 8} and Assignment.objects.count() == 8
    assert (job.progress_done, job.progress_total) == (4, 4) and job.started_at and job.finished_at
    body = client.get(response["Location"], HTTP_HX_REQUEST="true").content.decode()
    assert reverse("workspace-plan", kwargs={"slug": "test", "plan_id": plan.pk}) in body
    assert "hx-trigger" not in body  # finished: the page stops polling


def test_plan_form_errors_stay_on_the_form(client, members, ws_project, run):
    client.force_login(members["admin"])
    response = _post_plan(client, members, run, k=3)
    assert response.status_code == 200 and "distinct annotators" in response.content.decode()
    assert not BackgroundJob.objects.exists()


def test_a_retried_plan_job_writes_no_assignment_twice(members, ws_project, run):
    job = assignments.plan_start(project=ws_project, by=members["admin"], strategy="flagged", runs=[run], k=2,
                                 annotators=[members["annotator"], members["annotator2"]], queue=False)
    first = assignments.plan_job_run(job)
    assert Assignment.objects.count() == 8
    # The worker died after the plan's transaction committed but before the job was marked
    # finished: the broker redelivers the task.
    BackgroundJob.objects.filter(pk=job.pk).update(status=BackgroundJob.Status.RUNNING, finished_at=None)
    job.refresh_from_db()
    again = assignments.plan_job_run(job)
    assert again.pk == first.pk and AssignmentPlan.objects.count() == 1 and Assignment.objects.count() == 8
    job.refresh_from_db()
    assert job.status == BackgroundJob.Status.SUCCEEDED and job.result["plan_id"] == first.pk
    assert assignments.plan_job_run(job) is None  # a finished job does nothing


def test_an_interrupted_plan_job_is_marked_failed(members, ws_project, run, monkeypatch):
    job = assignments.plan_start(project=ws_project, by=members["admin"], strategy="flagged", runs=[run], k=2,
                                 annotators=[members["annotator"], members["annotator2"]], queue=False)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(assignments.algo, "make_plan", interrupted)
    with pytest.raises(KeyboardInterrupt):
        assignments.plan_job_run(job)
    job.refresh_from_db()
    assert job.status == BackgroundJob.Status.FAILED and "Interrupted" in job.error
    assert not Assignment.objects.exists()
