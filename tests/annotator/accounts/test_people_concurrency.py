"""Two admins demoting each other at the same moment: the project's membership changes are
serialised on its row, so the second sees the first's change and is refused instead of leaving
the project with no admin.

On PostgreSQL the second waits on the project's row lock. The SQLite test database is in memory
with a shared cache, where a second writer is refused at once ("database table is locked")
instead of waiting as it would on a database file: there the second tries again until the first
has committed, which is the same order of events."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import OperationalError, connection, connections, transaction

from annotator.models import Membership, Role
from annotator.services.projects import (
    MembershipError,
    membership_role_set,
    membership_set,
    project_create,
)

pytestmark = pytest.mark.django_db(transaction=True)


def when_unlocked(write, *, within: float = 10.0):
    """``write()``, tried again while SQLite's shared cache refuses it for the other writer's lock."""
    deadline = time.monotonic() + within
    while True:
        try:
            return write()
        except OperationalError as exc:
            if connection.vendor != "sqlite" or "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_two_admins_demoting_each_other_leave_one_admin(make_user):
    project = project_create(name="Race", slug="race")
    a, b = make_user("admin-a"), make_user("admin-b")
    for user in (a, b):
        membership_set(project=project, user=user, role=Role.ADMIN)
    first_holds, outcome = threading.Event(), {}

    def first():
        try:
            with transaction.atomic():
                membership_role_set(project=project, user=a, role=Role.ANNOTATOR, by=b)
                first_holds.set()
                threading.Event().wait(0.5)  # still holding the project's lock
        finally:
            first_holds.set()
            connections.close_all()

    def second():
        first_holds.wait(10)
        try:
            when_unlocked(lambda: membership_role_set(project=project, user=b, role=Role.ANNOTATOR, by=a))
            outcome["second"] = "saved"
        except MembershipError as exc:
            outcome["second"] = str(exc)
        except Exception as exc:  # reported by the assertion below, not lost in the thread
            outcome["second"] = repr(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert "last admin" in outcome.get("second", "the second thread did not finish")
    roles = dict(Membership.objects.filter(project=project).values_list("user__username", "role"))
    assert roles == {"admin-a": Role.ANNOTATOR, "admin-b": Role.ADMIN}
