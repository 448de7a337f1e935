"""Celery tasks by area, named like services/ and views/: ids in, one service call, retries.

Celery's autodiscovery imports this package (``related_name="tasks"``); importing every area's
module here registers all tasks. Each task keeps the name it was registered under before the
package existed (queued messages and the beat schedule refer to tasks by name).
"""

from annotator.tasks import (  # noqa: F401
    adjudication,
    broker,
    exports,
    projects,
    reports,
    runs,
    tagger,
    workspace,
)
