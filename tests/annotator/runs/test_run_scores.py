"""The run page's scores against gold: computed by a job, cached under the scoring state, never in
the request, and recomputed when gold changes."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotator.models import AdjudicationItem, BackgroundJob, DetectorRun
from annotator.selectors.reports import evaluate_run
from annotator.services import jobs
from annotator.services.adjudication import adjudication_submit, gold_merge_ready
from annotator.services.reports import evaluation_request, run_scores, scoring_key

pytestmark = pytest.mark.django_db

EVALUATION = BackgroundJob.Kind.EVALUATION
PENDING = "Scoring against the current gold set"


def page(client, run) -> str:
    return client.get(reverse("run-detail", kwargs={"slug": run.project.slug, "run_id": run.pk})).content.decode()


def scoring_jobs(run):
    return BackgroundJob.objects.filter(kind=EVALUATION, params__run=run.pk)


@pytest.fixture
def scored(client, members, study, django_capture_on_commit_callbacks):
    """Gold merged; the admin opened the run page (which queued the scoring) and the job ran."""
    gold_merge_ready(project=study)
    run = DetectorRun.objects.get(project=study)
    client.force_login(members["admin"])
    with django_capture_on_commit_callbacks(execute=True):
        page(client, run)
    return run


def test_the_page_queues_the_scoring_once_and_polls_until_it_is_done(
        client, members, study, django_capture_on_commit_callbacks):
    gold_merge_ready(project=study)
    run = DetectorRun.objects.get(project=study)
    client.force_login(members["admin"])
    with django_capture_on_commit_callbacks() as queued:
        first = page(client, run)
        second = page(client, run)
    assert PENDING in first and PENDING in second and 'hx-trigger="every 2s"' in first
    assert ">TP</th>" not in first  # no figures before the job has run (a bare "TP" may be in the CSRF token)
    assert len(queued) == 1 and scoring_jobs(run).count() == 1
    queued[0]()  # the job runs (eagerly, here)
    job = scoring_jobs(run).get()
    assert job.status == "succeeded", job.error
    done = page(client, run)
    assert PENDING not in done and "Against the gold set" in done and 'hx-trigger' not in done
    assert job.result["evaluation"] == json.loads(json.dumps(evaluate_run(run)))


def test_cached_scores_are_read_not_computed(client, scored, django_assert_max_num_queries):
    with django_assert_max_num_queries(16):
        body = page(client, scored)
    assert "Against the gold set" in body and '<th class="num">TP</th>' in body
    assert scoring_jobs(scored).count() == 1


def test_a_changed_decision_invalidates_the_cached_scores(
        client, members, scored, django_capture_on_commit_callbacks):
    old = scoring_jobs(scored).get()
    item = AdjudicationItem.objects.filter(project=scored.project, status="open").order_by("-risk").first()
    adjudication_submit(item=item, user=members["adjudicator"], spans=[(12, 35, "EMAIL")], version=0)
    with django_capture_on_commit_callbacks() as queued:
        body = page(client, scored)
    # the old figures are not shown as current (their table's header, not two letters a random
    # CSRF token may hold)
    assert PENDING in body and '<th class="num">TP</th>' not in body
    assert len(queued) == 1
    queued[0]()
    fresh = scoring_jobs(scored).get()  # the older scores are gone
    assert fresh.pk != old.pk and fresh.status == "succeeded"
    assert fresh.result["evaluation"] == json.loads(json.dumps(evaluate_run(scored)))
    assert fresh.result["evaluation"]["n_messages"] == old.result["evaluation"]["n_messages"] + 1


def test_a_new_plan_changes_the_key(scored):
    from annotator.models import AssignmentPlan
    from annotator.selectors.reports import scoring_state

    before = scoring_key(scoring_state(scored))
    AssignmentPlan.objects.create(project=scored.project, seed=3, summary={}, params={})
    assert scoring_key(scoring_state(scored)) != before


def test_without_gold_nothing_is_queued(client, members, study, django_capture_on_commit_callbacks):
    run = DetectorRun.objects.get(project=study)
    client.force_login(members["admin"])
    with django_capture_on_commit_callbacks() as queued:
        body = page(client, run)
    assert not queued and not scoring_jobs(run).exists()
    assert PENDING not in body and "Against the gold set" not in body


def test_a_failed_scoring_is_shown_and_not_requeued_on_every_poll(
        client, members, study, django_capture_on_commit_callbacks):
    from annotator.selectors.reports import scoring_state

    gold_merge_ready(project=study)
    run = DetectorRun.objects.get(project=study)
    with django_capture_on_commit_callbacks():
        job = evaluation_request(run=run, key=scoring_key(scoring_state(run)))
    jobs.job_fail(job, "the bootstrap ran out of memory")
    client.force_login(members["admin"])
    with django_capture_on_commit_callbacks() as queued:
        body = page(client, run)
    assert "the bootstrap ran out of memory" in body and not queued
    assert run_scores(run).failed == job


def test_a_redelivered_scoring_job_is_harmless(scored, django_capture_on_commit_callbacks):
    from annotator.services.reports import evaluation_job_run

    job = scoring_jobs(scored).get()
    evaluation_job_run(job=job)  # finished: left alone
    job.refresh_from_db()
    assert job.status == "succeeded" and scoring_jobs(scored).count() == 1


def test_colleagues_and_outsiders_queue_nothing(client, members, study, django_capture_on_commit_callbacks):
    gold_merge_ready(project=study)
    run = DetectorRun.objects.get(project=study)
    for who, status in (("annotator", 403), ("adjudicator", 403), ("outsider", 404)):
        client.force_login(members[who])
        url = reverse("run-detail", kwargs={"slug": study.slug, "run_id": run.pk})
        with django_capture_on_commit_callbacks() as queued:
            assert client.get(url).status_code == status
        assert not queued
    assert not scoring_jobs(run).exists()
