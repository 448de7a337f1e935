"""The Celery app. With no ``REDIS_URL`` tasks run in-process (eagerly) so the app needs no broker."""

import logging
import os
from collections.abc import Mapping

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")

logger = logging.getLogger(__name__)
app = Celery("annotator")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["annotator"], related_name="tasks")
# Each area keeps its tasks in tasks/<area>.py; the annotator.tasks package imports them all.


@signals.task_postrun.connect
def _forget_queries(**_) -> None:
    """With DEBUG on, Django logs each connection's queries (up to 9,000, a chunk's bulk INSERTs
    among them) until the next *request* starts; a worker serves no requests, so its log is emptied
    after every task instead of growing with the run."""
    from django.db import reset_queries

    reset_queries()


@signals.celeryd_after_setup.connect
def _share_inference_threads(sender=None, instance=None, **_) -> None:
    """Set each task's inference threads before the pool starts its processes (they inherit the
    environment): see :func:`inference_threads_share`."""
    if instance is None:
        return
    from django.conf import settings

    solo = instance.pool_cls.__module__.endswith(".solo")
    tasks = (1 if solo else instance.max_concurrency or instance.concurrency) * settings.BLINDSPOT_HOST_WORKERS
    share = inference_threads_share(os.environ, tasks=tasks)
    if share:
        os.environ["OMP_NUM_THREADS"] = share
        logger.info("inference threads per task: %s (OMP_NUM_THREADS: this host's cores shared by %d "
                    "task(s) at once)", share, tasks)
    else:
        logger.info("inference threads per task: %s (OMP_NUM_THREADS as set)", os.environ["OMP_NUM_THREADS"])


@signals.celeryd_after_setup.connect
def _share_startup_state(**_) -> None:
    """Once the worker is set up and before the pool starts its processes: load the word lists the
    detectors' junk filters read (:func:`pipeline.filters.vocabulary.load_all`),
    then keep what the worker holds (Django, the app, its libraries, the lists) out of later
    garbage collections (:func:`pipeline.parallel.freeze_held_objects`). The pool's processes
    inherit both: they share the lists rather than each loading them on its first chunk."""
    from pipeline.filters.vocabulary import load_all
    from pipeline.parallel import freeze_held_objects

    logger.info("word lists loaded for the pool's processes: %d words", load_all())
    logger.info("objects kept out of garbage collection: %d", freeze_held_objects())


def inference_threads_share(environ: Mapping[str, str], *, tasks: int) -> str | None:
    """The ``OMP_NUM_THREADS`` for each of ``tasks`` that run at once on this host (a worker's
    concurrency, 1 in the solo pool, times ``BLINDSPOT_HOST_WORKERS``), or None where the operator
    set it. ONNX Runtime's and torch's thread counts follow it (``pipeline.parallel.cpu_threads``).

    Without it every task runs a thread per core: ``--concurrency 2`` on two cores ran four threads
    on two cores, which costs more CPU per message and more time than two processes of one thread
    each (docs/benchmarks.md)."""
    if environ.get("OMP_NUM_THREADS", "").strip():
        return None
    # imported here, not at Django's start, which every command and page process pays for
    from pipeline.parallel import threads_per_worker

    return str(threads_per_worker(max(1, tasks)))
