"""Gold merges never fail silently: database errors are retried with backoff (in a worker and in
the in-process path), a failure that outlasts the retries is recorded for admins, and the sweep
(beat schedule and adjudication page) merges whatever a killed merge left behind."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import OperationalError, connection, connections

from annotator.models import AdjudicationDecision, AdjudicationItem, AuditEvent
from annotator.selectors import adjudication as sel
from annotator.services import adjudication
from annotator.tasks.adjudication import gold_merge_job, gold_merge_sweep_job

READY = 5  # the study has five finished messages (two agree, three disagree) and one unfinished


@pytest.fixture
def in_process():
    """Eager tasks as ``bin/demo`` runs them: errors are not propagated, so retries happen."""
    from annotator.celery import app

    app.conf.task_eager_propagates = False
    yield
    app.conf.task_eager_propagates = True


def _settled_once(project) -> None:
    """Every finished message sits in gold or in the queue exactly once."""
    decisions = AdjudicationDecision.objects.filter(message__project=project)
    items = AdjudicationItem.objects.filter(project=project)
    assert decisions.count() + items.count() == READY
    assert decisions.values("message").distinct().count() == decisions.count()
    assert items.values("message").distinct().count() == items.count()


@pytest.mark.django_db
def test_merge_killed_midway_is_recorded_and_the_sweep_recovers_it(study, monkeypatch):
    monkeypatch.setattr(adjudication, "BATCH", 1)  # one message per transaction
    real = adjudication._merge_batch
    calls = []

    def dies_on_the_third_batch(*args):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("worker died mid-merge")
        return real(*args)

    monkeypatch.setattr(adjudication, "_merge_batch", dies_on_the_third_batch)
    with pytest.raises(RuntimeError):
        gold_merge_job.apply(args=[study.pk])
    assert len(calls) == 3  # not retried: only database errors are transient
    health = sel.merge_health(study)
    assert health["unmerged"] == READY - 2
    assert "worker died mid-merge" in health["last_failure"]["error"]
    assert AuditEvent.objects.filter(project=study, action="gold.merge_failed").count() == 1

    monkeypatch.setattr(adjudication, "_merge_batch", real)
    gold_merge_sweep_job.apply()
    _settled_once(study)
    assert sel.merge_health(study)["unmerged"] == 0


@pytest.mark.django_db
def test_merge_retries_database_errors_with_backoff_in_process(study, monkeypatch, in_process):
    import annotator.tasks.adjudication as tasks

    sleeps: list[float] = []
    monkeypatch.setattr(tasks.time, "sleep", sleeps.append)
    monkeypatch.setattr("celery.utils.time.random.randrange", lambda n: n - 1)  # no jitter
    real, attempts = tasks.gold_merge_ready, []

    def flaky(**kwargs):
        attempts.append(1)
        if len(attempts) <= 2:
            raise OperationalError("sorry, too many clients already")
        return real(**kwargs)

    monkeypatch.setattr(tasks, "gold_merge_ready", flaky)
    assert gold_merge_job.apply(args=[study.pk]).successful()
    assert len(attempts) == 3
    assert sleeps == [tasks.RETRY_BACKOFF, 2 * tasks.RETRY_BACKOFF]  # exponential, eager too
    _settled_once(study)
    assert sel.merge_health(study)["last_failure"] is None


@pytest.mark.django_db
def test_merge_that_outlasts_its_retries_is_recorded(study, monkeypatch, in_process):
    import annotator.tasks.adjudication as tasks

    monkeypatch.setattr(tasks.time, "sleep", lambda s: None)
    attempts = []

    def down(**kwargs):
        attempts.append(1)
        raise OperationalError("sorry, too many clients already")

    monkeypatch.setattr(tasks, "gold_merge_ready", down)
    result = gold_merge_job.apply(args=[study.pk, [1, 2]])
    assert result.failed() and isinstance(result.result, OperationalError)
    assert len(attempts) == tasks.MERGE_RETRIES + 1
    failure = sel.merge_health(study)["last_failure"]
    assert "too many clients" in failure["error"] and failure["retries"] == tasks.MERGE_RETRIES
    assert sel.merge_health(study)["unmerged"] == READY


@pytest.mark.django_db
def test_sweep_goes_on_past_a_broken_project(study, make_user, monkeypatch):
    from annotator.services.projects import project_create

    other = project_create(name="Other", slug="other")
    real = adjudication.gold_merge_ready

    def broken_for_other(*, project, **kwargs):
        if project.pk == other.pk:
            raise ValueError("bad merge rule")
        return real(project=project, **kwargs)

    monkeypatch.setattr(adjudication, "gold_merge_ready", broken_for_other)
    out = adjudication.gold_merge_sweep()
    assert out[study.slug] == {"merged": 2, "queued": 3}
    assert "bad merge rule" in out[other.slug]["error"]
    assert "bad merge rule" in sel.merge_health(other)["last_failure"]["error"]
    _settled_once(study)


def test_beat_runs_the_sweep(settings):
    from annotator.celery import app

    entry = settings.CELERY_BEAT_SCHEDULE["gold-merge-sweep"]
    assert entry["task"] == gold_merge_sweep_job.name and entry["task"] in app.tasks
    assert entry["schedule"] > 0


# ----------------------------------------------------------------------------------- pages


@pytest.mark.django_db
def test_adjudication_page_sweeps_finished_items(study, members, client, django_capture_on_commit_callbacks):
    client.force_login(members["adjudicator"])
    with django_capture_on_commit_callbacks(execute=True):
        page = client.get("/p/test/adjudication/")
    assert page.status_code == 200
    _settled_once(study)


@pytest.mark.django_db
def test_admin_dashboard_shows_unmerged_items_and_the_last_failure(study, members, client):
    adjudication.gold_merge_failure_record(project=study, error="OperationalError: too many clients",
                                           message_ids=[1], retries=6)
    client.force_login(members["admin"])
    page = client.get("/p/test/").content.decode()
    assert "5 finished items not merged into gold" in page and "too many clients" in page
    client.force_login(members["annotator"])
    page = client.get("/p/test/").content.decode()
    assert "not merged into gold" not in page and "too many clients" not in page


# ----------------------------------------------------------------------------------- PostgreSQL


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_connections_stay_within_the_pool(require_postgres, settings):
    """30 threads querying at once share the pool: PostgreSQL never sees more than max_size."""
    pool = settings.DATABASES["default"]["OPTIONS"]["pool"]
    assert settings.DATABASES["default"]["CONN_MAX_AGE"] == 0
    errors, peak, done = [], [0], threading.Event()

    def work():
        try:
            with connection.cursor() as cur:
                cur.execute("SELECT pg_sleep(0.2)")
        except Exception as exc:  # collected and asserted below
            errors.append(exc)
        finally:
            connections.close_all()  # back to the pool, as a request or eager job does

    def watch():
        with connection.cursor() as cur:
            while not done.is_set():
                cur.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
                peak[0] = max(peak[0], cur.fetchone()[0])
                time.sleep(0.02)
        connections.close_all()

    watcher = threading.Thread(target=watch)
    watcher.start()
    threads = [threading.Thread(target=work) for _ in range(30)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.set()
    watcher.join()
    assert not errors
    assert 1 < peak[0] <= pool["max_size"] + 2  # slack: a connection being retired as another opens


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_worker_killed_mid_merge_is_swept_into_gold(celery_worker, study):
    """A real worker dies (SIGKILL) half-way through a merge: the batches it committed stay, the
    one it was in rolls back, and the sweep on a fresh worker merges the rest exactly once."""
    import os
    import signal

    from tests.conftest import wait_for

    slow = celery_worker(extra_env={"BLINDSPOT_DETECTOR_PLUGINS": "tests.slow_merge", "SLOW_MERGE_SECONDS": "1.5"})
    gold_merge_job.delay(study.pk)

    def settled() -> int:
        return (AdjudicationDecision.objects.filter(message__project=study).count()
                + AdjudicationItem.objects.filter(project=study).count())

    wait_for(lambda: settled() >= 2, timeout=90, what=lambda: f"two merged batches\n{slow.output()[-3000:]}")
    os.killpg(slow.proc.pid, signal.SIGKILL)
    slow.proc.wait(10)
    assert 2 <= settled() < READY
    assert sel.merge_health(study)["unmerged"] == READY - settled()

    fresh = celery_worker()  # the killed job is not redelivered within the visibility timeout
    gold_merge_sweep_job.delay()
    wait_for(lambda: settled() == READY, timeout=90, what=lambda: f"the sweep\n{fresh.output()[-3000:]}")
    _settled_once(study)
    assert sel.merge_health(study)["unmerged"] == 0
