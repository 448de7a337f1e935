"""The Celery app. With no ``REDIS_URL`` tasks run in-process (eagerly) so the app needs no broker."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")

app = Celery("annotator")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["annotator"], related_name="tasks")
# Each area keeps its tasks in tasks/<area>.py; the annotator.tasks package imports them all.
