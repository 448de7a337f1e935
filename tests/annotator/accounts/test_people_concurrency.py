"""Two admins demoting each other at the same moment: the project's membership changes are
serialised on its row, so the second sees the first's change and is refused instead of leaving
the project with no admin."""

from __future__ import annotations

import threading

import pytest
from django.db import connections, transaction

from annotator.models import Membership, Role
from annotator.services.projects import (
    MembershipError,
    membership_role_set,
    membership_set,
    project_create,
)

pytestmark = pytest.mark.django_db(transaction=True)


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
            membership_role_set(project=project, user=b, role=Role.ANNOTATOR, by=a)
            outcome["second"] = "saved"
        except MembershipError as exc:
            outcome["second"] = str(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert "last admin" in outcome["second"]
    roles = dict(Membership.objects.filter(project=project).values_list("user__username", "role"))
    assert roles == {"admin-a": Role.ANNOTATOR, "admin-b": Role.ADMIN}
