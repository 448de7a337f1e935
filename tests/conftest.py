"""Shared fixtures: users in every role, a project with a small corpus, and real services.

Tests that need PostgreSQL, Redis or a Celery worker skip with a reason when the service is
absent on a developer's machine; under ``CI=true`` they fail instead, so CI can never go green by
skipping them.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parent.parent
IN_CI = os.environ.get("CI", "").lower() == "true"

os.environ.setdefault("DEBUG", "1")


def need(condition: bool, reason: str) -> None:
    """Skip (or, in CI, fail) when a real service the test needs is missing."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"{reason} — CI must run this test, not skip it")
    pytest.skip(reason)


def _reachable(url: str, default_port: int) -> bool:
    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or default_port), 1):
            return True
    except OSError:
        return False


@pytest.fixture
def require_postgres(settings):
    engine = settings.DATABASES["default"]["ENGINE"]
    need("postgresql" in engine, "needs PostgreSQL: set DATABASE_URL=postgres://… (as .ci/run does)")


@pytest.fixture
def require_redis(settings):
    url = os.environ.get("REDIS_URL", "")
    need(bool(url), "needs Redis: set REDIS_URL=redis://127.0.0.1:6379/0 (as .ci/run does)")
    need(_reachable(url, 6379), f"Redis at {url} is not reachable")
    return url


@pytest.fixture(autouse=True)
def _eager_celery(settings):
    """Tasks run in-process in tests, unless a test starts a real worker (see ``celery_worker``)."""
    from annotator.celery import app

    settings.CELERY_TASK_ALWAYS_EAGER = True
    app.conf.task_always_eager = True
    app.conf.task_eager_propagates = True
    yield
    app.conf.task_always_eager = True


@pytest.fixture(autouse=True)
def _var_dirs(settings, tmp_path):
    settings.BLINDSPOT_UPLOADS_DIR = tmp_path / "uploads"
    settings.BLINDSPOT_EXPORTS_DIR = tmp_path / "exports"
    settings.BLINDSPOT_MODELS_DIR = tmp_path / "models"


class Worker:
    def __init__(self, proc: subprocess.Popen, log: Path):
        self.proc, self.log = proc, log

    def kill(self) -> None:
        """Kill the worker and its pool children (they share a process group)."""
        import signal

        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@pytest.fixture
def celery_worker(require_postgres, require_redis, settings, tmp_path):
    """Start real Celery workers against Redis and the *test* database; yields a starter function.

    The test must use ``@pytest.mark.django_db(transaction=True)`` so the worker sees its rows.
    """
    from annotator.celery import app

    app.conf.task_always_eager = False
    settings.CELERY_TASK_ALWAYS_EAGER = False
    db = settings.DATABASES["default"]
    db_url = f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    queue = f"test-{os.getpid()}-{time.time_ns()}"
    app.conf.task_default_queue = queue
    started: list[Worker] = []

    def start(concurrency: int = 1, extra_env: dict | None = None) -> Worker:
        env = {**os.environ, "DATABASE_URL": db_url, "REDIS_URL": require_redis, "DEBUG": "1",
               "BLINDSPOT_UPLOADS_DIR": str(settings.BLINDSPOT_UPLOADS_DIR),
               "BLINDSPOT_EXPORTS_DIR": str(settings.BLINDSPOT_EXPORTS_DIR),
               "BLINDSPOT_MODELS_DIR": str(settings.BLINDSPOT_MODELS_DIR),
               "CELERY_TASK_DEFAULT_QUEUE": queue, **(extra_env or {})}  # what a worker queues stays here
        log = tmp_path / f"worker-{len(started)}.log"
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "annotator", "worker", "-Q", queue, "-P", "prefork",
             "-c", str(concurrency), "--without-gossip", "--without-mingle", "--without-heartbeat",
             "-l", "INFO", "-n", f"{queue}-{len(started)}@%h"],
            cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True,
        )
        worker = Worker(proc, log)
        started.append(worker)
        return worker

    yield start
    for w in started:
        w.kill()
    app.conf.task_default_queue = "celery"
    app.conf.task_always_eager = True
    import redis

    redis.Redis.from_url(require_redis).delete(queue, f"{queue}\x06\x163", f"{queue}\x06\x166", f"{queue}\x06\x169")


def wait_for(predicate, timeout: float = 60, interval: float = 0.2, what: str | Callable[[], str] = "condition"):
    """Poll ``predicate`` until it is truthy; ``what`` (or what it returns, read at the timeout: a
    worker's log then, not when the wait began) says what was awaited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what() if callable(what) else what}")


# ---- users and projects ---------------------------------------------------------------------

@pytest.fixture(scope="session")
def screenshots_dir(tmp_path_factory) -> Path:
    """Where browser tests save their screenshots: a temporary directory, so that running the suite
    never changes tracked files; ``bin/screenshots`` sets ``BLINDSPOT_SCREENSHOTS`` to refresh the
    README's pictures in docs/screenshots/ on purpose."""
    chosen = os.environ.get("BLINDSPOT_SCREENSHOTS", "").strip()
    path = Path(chosen) if chosen else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def make_user(db, django_user_model):
    def make(username: str, **kwargs):
        return django_user_model.objects.create_user(username=username, password="pw-" + username, **kwargs)

    return make


@pytest.fixture
def project(db, make_user):
    from annotator.services.projects import project_create

    return project_create(name="Test project", slug="test")


@pytest.fixture
def members(project, make_user):
    """admin, adjudicator, two annotators in ``project``; an outsider in no project."""
    from annotator.models import Role
    from annotator.services.projects import membership_set

    people = {}
    for name, role in [("admin", Role.ADMIN), ("adjudicator", Role.ADJUDICATOR),
                       ("annotator", Role.ANNOTATOR), ("annotator2", Role.ANNOTATOR)]:
        people[name] = make_user(name)
        membership_set(project=project, user=people[name], role=role)
    people["outsider"] = make_user("outsider")
    return people


SMALL_CORPUS = [
    {"id": "d1", "anchor": "If Alex has 5 apples and eats 2, how many are left?",
     "messages": [
         {"speaker": "Tutor", "text": "Hi Maria! Ready for fractions?",
          "spans": [{"start": 3, "end": 8, "label": "NAME"}]},
         {"speaker": "Student", "text": "yes. is 3/4 bigger than 2/3?"},
         {"speaker": "Tutor", "text": "Email me at maria.lopez@example.com if you get stuck.",
          "spans": [{"start": 12, "end": 35, "label": "EMAIL"}]},
         {"speaker": "Student", "text": "Alex has 3 apples left."},
     ]},
    {"id": "d2", "messages": [
        {"speaker": "Student", "text": "divide 4815162342 by 2"},
        {"speaker": "Tutor", "text": "Great work, Sam. That's 2407581171."},
    ]},
]


@pytest.fixture
def corpus_bytes() -> bytes:
    import json

    return "".join(json.dumps(d) + "\n" for d in SMALL_CORPUS).encode()


@pytest.fixture
def corpus(project, corpus_bytes):
    """The small corpus imported into ``project`` with its spans as gold."""
    from annotator.services.imports import corpus_import
    from pipeline.formats import parse_upload

    corpus_import(project=project, dialogues=parse_upload(corpus_bytes, name="small.jsonl"),
                  source="small.jsonl", spans_as="gold")
    return project
