"""Celery tasks by area, named like services/ and views/: ids in, one service call, retries.

Celery's autodiscovery imports this package (``related_name="tasks"``); importing every area's
module here registers all tasks, each under its ``annotator.<area>.<verb>`` name from
:mod:`annotator.task_names`. The names tasks had before that scheme stay registered as aliases
of the same task objects, so a message queued under an old name still runs.
"""

from annotator import task_names
from annotator.celery import app
from annotator.tasks import (  # noqa: F401
    adjudication,
    broker,
    exports,
    projects,
    reports,
    runs,
    tagger,
    webhooks,
    workspace,
)

for _old, _new in task_names.ALIASES.items():
    app.tasks[_old] = app.tasks[_new]  # the registry is a dict: a worker looks a message's name up in it
