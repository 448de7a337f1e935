"""A build claims its export before it works: the same task delivered twice at once (a broker's
duplicate, or ``demo_setup`` building in process while a worker got the task too) builds once,
and the second delivery does nothing."""

from __future__ import annotations

import threading

import pytest
from django.db import connections

from annotator.models import Export
from annotator.services import exports as export_services
from annotator.tasks.exports import export_build_task

pytestmark = pytest.mark.django_db(transaction=True)


def test_one_export_task_delivered_twice_at_once_builds_once(corpus, members, monkeypatch):
    export = export_services.export_create(project=corpus, kind=Export.Kind.GOLD, user=members["admin"],
                                           params={"test_fraction": 0.2, "seed": 0})  # queued, not sent
    writing, go_on, writes = threading.Event(), threading.Event(), []
    real_write = export_services.gold_export_write

    def slow_write(*args, **kwargs):
        writes.append(threading.get_ident())
        writing.set()
        go_on.wait(10)  # the first delivery is at work while the second arrives
        return real_write(*args, **kwargs)

    monkeypatch.setattr(export_services, "gold_export_write", slow_write)
    outcomes = {}

    def deliver(name: str, wait_for: threading.Event | None = None):
        try:
            if wait_for is not None:
                wait_for.wait(10)
            outcomes[name] = export_build_task(export.pk)
        except Exception as exc:  # reported by the assertions, not lost in the thread
            outcomes[name] = repr(exc)
        finally:
            if name == "second":
                go_on.set()
            connections.close_all()

    threads = [threading.Thread(target=deliver, args=("first",)),
               threading.Thread(target=deliver, args=("second", writing))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert outcomes == {"first": "built", "second": "already running"}
    assert len(writes) == 1
    export.refresh_from_db()
    assert export.status == Export.Status.SUCCEEDED, export.error
    assert export_build_task(export.pk) == "already built"  # a late duplicate finds it built
