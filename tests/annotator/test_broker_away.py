"""When Redis is away: pages answer, a job queued meanwhile is recorded and the
request says so (no 500), and a sweep sends it again once the broker is back, exactly once."""

from __future__ import annotations

import threading

import pytest
from django.core.cache import cache
from django.db import connections
from django.urls import reverse

from annotator import dispatch
from annotator import task_names as names
from annotator.cache import DegradingRedisCache
from annotator.models import DetectorRun, UndeliveredTask

CLOSED = "redis://127.0.0.1:1/0"  # nothing listens on port 1
DEGRADING = {"default": {"BACKEND": "annotator.cache.DegradingRedisCache", "LOCATION": CLOSED,
                         "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 1.0}}}


@pytest.fixture
def broker_at(settings):
    """Point the Celery app at a broker URL (tasks really sent, not run eagerly); restore after."""
    from annotator.celery import app

    saved = app.conf.broker_url

    def point(url: str) -> None:
        app.conf.task_always_eager = False
        settings.CELERY_TASK_ALWAYS_EAGER = False
        app.conf.broker_url = url
        app._pool = app.amqp._producer_pool = None  # both hold connections to the old URL

    yield point
    app.conf.broker_url = saved
    app._pool = app.amqp._producer_pool = None
    app.conf.task_always_eager = True


def test_the_cache_answers_from_memory_while_redis_is_unreachable():
    degraded = DegradingRedisCache(CLOSED, DEGRADING["default"])
    degraded.set("k", 1)
    assert degraded.get("k") == 1 and degraded.degraded
    assert degraded.add("n", 0) and degraded.incr("n") == 1


@pytest.mark.django_db
def test_login_and_pages_answer_while_the_cache_is_unreachable(settings, client, members):
    settings.CACHES = DEGRADING
    assert client.get(reverse("login")).status_code == 200
    for _ in range(6):  # the lock-out still counts, in this process's memory
        answer = client.post(reverse("login"), {"username": "annotator1", "password": "wrong"})
    assert answer.status_code == 429
    client.force_login(members["admin"])
    assert client.get("/").status_code == 200
    assert cache.get("anything") is None


@pytest.mark.django_db(transaction=True)  # the job is sent on commit, inside the request, as in production
def test_a_run_started_while_the_broker_is_away_is_saved_queued_and_said_so(client, members, corpus, broker_at):
    broker_at(CLOSED)
    client.force_login(members["admin"])
    answer = client.post(reverse("run-list", args=[corpus.slug]), {"preset": "rules", "config": ""})
    assert answer.status_code == 302  # not a 500
    run = DetectorRun.objects.get(project=corpus)
    assert run.status == "queued"
    undelivered = list(UndeliveredTask.objects.all())
    assert undelivered and all(u.error for u in undelivered)
    page = client.get(answer["Location"])
    assert "the workers are unreachable" in page.content.decode()


@pytest.mark.django_db(transaction=True)
def test_undelivered_tasks_are_sent_again_once_each_when_the_broker_is_back(require_postgres, require_redis,
                                                                           broker_at, settings):
    import redis

    from annotator.celery import app

    broker_at(CLOSED)
    for pk in range(1, 6):
        dispatch.send(names.RUNS_CHUNK_PROCESS, pk)
    assert UndeliveredTask.objects.count() == 5 and dispatch.undelivered_in_request(reset=True) == 5
    assert dispatch.redispatch_undelivered() == {"sent": 0, "left": 5}  # still away: nothing lost

    queue = f"test-redispatch-{threading.get_ident()}"
    lists = [queue, *(f"{queue}\x06\x16{step}" for step in (3, 6, 9))]  # Redis's list per priority step
    app.conf.task_default_queue = queue
    try:
        broker_at(require_redis)
        def sweep() -> None:
            try:
                dispatch.redispatch_undelivered()
            finally:
                connections.close_all()  # this thread's: left open, it outlives the test session

        sweeps = [threading.Thread(target=sweep) for _ in range(4)]
        for t in sweeps:
            t.start()
        for t in sweeps:
            t.join(30)
        client = redis.Redis.from_url(require_redis)
        assert sum(client.llen(name) for name in lists) == 5  # five tasks, each once
        assert client.llen(lists[-1]) == 5  # a run's chunks wait at the lowest priority
        assert not UndeliveredTask.objects.exists()
    finally:
        app.conf.task_default_queue = "celery"
        redis.Redis.from_url(require_redis).delete(*lists)
