"""Queue a task after the current transaction commits.

With a broker (``REDIS_URL``) this is ``task.delay``. Without one, Celery runs tasks eagerly, in
process; long jobs then run on a daemon thread so the page that started them can show progress
instead of hanging (``BLINDSPOT_EAGER_IN_THREAD``, off in tests for determinism). Such a thread
closes its database connections when it ends (with a pool: hands them back), whatever
``CONN_MAX_AGE`` says, or each job would leave one open.
"""

from __future__ import annotations

import threading

from django.conf import settings
from django.db import connections, transaction


def enqueue(task, *args) -> None:
    def send() -> None:
        if task.app.conf.task_always_eager and getattr(settings, "BLINDSPOT_EAGER_IN_THREAD", False):
            def run() -> None:
                try:
                    task.apply(args=args)
                finally:
                    connections.close_all()  # the thread ends: never leave its connection open

            threading.Thread(target=run, daemon=True, name=f"eager-{task.name}").start()
        else:
            task.delay(*args)

    transaction.on_commit(send)
