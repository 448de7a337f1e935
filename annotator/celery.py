"""The Celery app. With no ``REDIS_URL`` tasks run in-process (eagerly) so the app needs no broker."""

import os

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")

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
