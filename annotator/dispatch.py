"""The one way services ask for background work: by task name, after the current transaction commits.

Services never import a task (tasks sit above services and call them): they call
``enqueue(names.EXPORTS_BUILD, export.pk)`` (one name per task, ``annotator.<area>.<verb>``, in
:mod:`annotator.task_names`). With a broker (``REDIS_URL``) that
sends the task by name. Without one, Celery runs tasks eagerly, in process, on two lanes of ONE
worker thread each that take their jobs in order, so the page that started them can show
progress instead of hanging (``BLINDSPOT_EAGER_IN_THREAD``, off in tests for determinism): the
long lane takes training, runs, releases and imports (:data:`annotator.task_names.LONG`), the
short lane everything else, so a report or a plan never waits behind a ten-minute training.
One thread per lane, not one per job: jobs started together (a tagger run's chunks) once clashed
while importing the same libraries at the same time. The worker closes its database connections
after each job (with a pool: hands them back), whatever ``CONN_MAX_AGE`` says.

A broker that is away loses nothing and fails no request: a task it does not take is recorded
(:class:`~annotator.models.UndeliveredTask`), its job stays "queued", the request that sent it
is told so (:func:`undelivered_in_request`, shown by ``annotator.middleware``), and
:func:`redispatch_undelivered` sends it again when the broker answers.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager

from django.conf import settings
from django.db import connections, models, transaction
from kombu.exceptions import OperationalError
from redis.exceptions import RedisError

from annotator import task_names as names

logger = logging.getLogger(__name__)
BATCH_PRIORITY = 9  # the lowest of Redis's priority steps (0, 3, 6, 9)
# what a publish to an unreachable broker raises (kombu wraps the transport's own errors)
BROKER_ERRORS = (OperationalError, RedisError, ConnectionError, OSError)

LANES = ("long", "short")
_workers: dict[str, ThreadPoolExecutor] = {}
_lanes = {which: {"running": None, "queued": 0} for which in LANES}  # what each lane does now
_worker_lock = threading.Lock()
_here = threading.local()


def _app():
    from annotator.celery import app

    return app


def has_broker() -> bool:
    """True when tasks go to a broker and run on workers (not eagerly, in this process)."""
    return not _app().conf.task_always_eager


def in_thread() -> bool:
    """True when queued jobs run on this process's worker thread (no broker, not in tests)."""
    return bool(_app().conf.task_always_eager and getattr(settings, "BLINDSPOT_EAGER_IN_THREAD", False)
                and not getattr(_here, "on", False))


@contextmanager
def in_this_thread() -> Iterator[None]:
    """Without a broker, jobs queued inside run in the caller's thread, at once: a command then
    holds its job, and Ctrl-C stops the job itself (the lifecycle marks it failed) instead of
    leaving it "running" on a worker thread that dies with the process."""
    _here.on = True
    try:
        yield
    finally:
        _here.on = False


def lane(name: str) -> str:
    """The in-process lane a task runs on: "long" for the jobs of minutes or hours, else "short"."""
    return "long" if name in names.LONG else "short"


def worker(which: str) -> ThreadPoolExecutor:
    """A lane's in-process worker: one thread, so its jobs run one at a time, in the order queued."""
    with _worker_lock:
        if which not in _workers:
            _workers[which] = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"eager-job-{which}")
        return _workers[which]


def _run_in_process(name: str, args: tuple) -> None:
    state = _lanes[lane(name)]
    with _worker_lock:
        state["queued"] -= 1
        state["running"] = name
    try:
        _app().tasks[name].apply(args=args)
    finally:
        with _worker_lock:
            state["running"] = None
        connections.close_all()  # the job ends: never leave its connection open


def _submit(name: str, args: tuple) -> Future:
    with _worker_lock:
        _lanes[lane(name)]["queued"] += 1
    return worker(lane(name)).submit(_run_in_process, name, args)


def wait_reason() -> str:
    """Why a queued job waits, for its page: the broker's workers, or what this process's lanes
    are doing (a report queued behind a report, never behind a training)."""
    if has_broker():
        return ("Queued on the broker: it starts when a worker is free. If it stays queued, check that a "
                "worker runs (celery -A annotator worker).")
    if not in_thread():
        return ""
    with _worker_lock:
        busy = [f"the {which} lane runs {s['running'].split('.', 1)[-1].replace('.', ' ').replace('_', ' ')}"
                + (f" with {s['queued']} more queued" if s["queued"] > 0 else "")
                for which, s in _lanes.items() if s["running"]]
    return ("Queued on this server's in-process worker, which runs one long job (training, runs, releases, "
            "imports) and one short job (reports, plans, figures, merges) at a time: "
            + ("; ".join(busy) if busy else "both lanes are free, so it starts in a moment") + ".")


def send(name: str, *args) -> Future | None:
    """Send now (no transaction wait): to the broker, the worker thread, or run it here.
    Returns the in-process future when there is one (commands may wait on it)."""
    app = _app()
    if not app.conf.task_always_eager:
        try:
            _publish(app, name, args)
        except BROKER_ERRORS as exc:
            _undelivered(name, args, exc)
        return None
    if in_thread():
        return _submit(name, args)
    app.tasks[name].delay(*args)  # eager: runs here, now, with Celery's eager settings
    return None


def _publish(app, name: str, args) -> None:
    """Hand one task to the broker; the chunks of a fan-out go at the lowest priority
    (:data:`annotator.task_names.BATCH`), so a merge, a report or a page's figure queued behind a
    million-message run's thousand chunks runs next, not after them (Redis keeps one list per
    priority and workers take the highest first; 0, the default, is the highest)."""
    app.send_task(name, args=list(args), priority=BATCH_PRIORITY if name in names.BATCH else None)


def _undelivered(name: str, args: tuple, exc: BaseException) -> None:
    from annotator.models import UndeliveredTask

    logger.warning("Broker unreachable: %s%r recorded to send again (%s)", name, args, type(exc).__name__)
    UndeliveredTask.objects.create(name=name, args=list(args), error=_described(exc))
    _here.undelivered = getattr(_here, "undelivered", 0) + 1


def _described(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]  # UndeliveredTask.error's length


def undelivered_in_request(reset: bool = False) -> int:
    """How many tasks this thread could not hand to the broker since the last reset (a request)."""
    count = getattr(_here, "undelivered", 0)
    if reset:
        _here.undelivered = 0
    return count


def redispatch_undelivered(limit: int = 200) -> dict[str, int]:
    """Send the recorded undelivered tasks again, oldest first; stop at the first the broker still
    refuses. Rows are locked with SKIP LOCKED, so concurrent sweeps (beat, page views, several
    web processes) never send the same one twice; each is deleted in the transaction that sent it."""
    from annotator.models import UndeliveredTask

    app, sent, left = _app(), 0, 0
    if app.conf.task_always_eager:
        return {"sent": 0, "left": UndeliveredTask.objects.count()}
    with transaction.atomic():
        rows = list(UndeliveredTask.objects.select_for_update(skip_locked=True).order_by("pk")[:limit])
        for row in rows:
            try:
                _publish(app, row.name, row.args)
            except BROKER_ERRORS as exc:
                UndeliveredTask.objects.filter(pk__in=[r.pk for r in rows[sent:]]).update(
                    attempts=models.F("attempts") + 1, error=_described(exc))
                left = len(rows) - sent
                break
            row.delete()
            sent += 1
    if sent:
        logger.info("Sent %d undelivered task(s) again", sent)
    return {"sent": sent, "left": left}


def enqueue(name: str, *args) -> None:
    """Queue task ``name`` with ``args`` once the current transaction commits."""
    transaction.on_commit(lambda: send(name, *args))


def wait_idle(timeout: float | None = None) -> None:
    """Wait until both in-process lanes have run every job queued so far (tests, commands)."""
    for which in LANES:
        if which in _workers:
            worker(which).submit(lambda: None).result(timeout=timeout)
