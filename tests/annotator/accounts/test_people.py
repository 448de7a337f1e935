"""The People page: members with role and last login; role changes, removal from the project,
account deactivation (staff only); every write audited, role groups in step, the last admin kept,
a change made from a stale page refused; the Django admin's edits through the same services."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from annotator.models import AuditEvent, Membership, Role
from annotator.services.projects import (
    MembershipConflict,
    MembershipError,
    membership_remove,
    membership_role_set,
    membership_set,
)

pytestmark = pytest.mark.django_db


def groups(user) -> set[str]:
    return set(user.groups.values_list("name", flat=True))


def people_url(project, action: str = "", user=None) -> str:
    base = f"/p/{project.slug}/members/"
    return base + (f"{user.pk}/{action}/" if user else "")


def login(client, user):
    client.force_login(user)
    return client


def flash(response) -> str:
    return " ".join(str(m) for m in response.wsgi_request._messages)


def test_the_page_lists_members_with_role_last_login_and_state(client, project, members):
    members["annotator2"].is_active = False
    members["annotator2"].save()
    body = login(client, members["admin"]).get(people_url(project)).content.decode()
    for name in ("admin", "adjudicator", "annotator", "annotator2"):
        assert f"Role of {name} <select" in body  # a role form per current member
    assert "outsider" not in body
    assert "never" in body  # nobody logged in with a password in this test
    assert "account deactivated" in body
    assert "Deactivate account" not in body  # a project admin is not staff


def test_an_admin_changes_a_role_audited_and_groups_follow(client, project, members):
    ann = members["annotator"]
    response = login(client, members["admin"]).post(people_url(project, "role", ann),
                                                    {"role": Role.ADJUDICATOR, "expected": Role.ANNOTATOR})
    assert response.status_code == 302
    assert Membership.objects.get(project=project, user=ann).role == Role.ADJUDICATOR
    assert groups(ann) == {"Adjudicator"}
    event = AuditEvent.objects.get(action="membership.role_set")
    assert event.user == members["admin"] and event.details["was"] == Role.ANNOTATOR
    assert event.details["role"] == Role.ADJUDICATOR and event.project == project


def test_a_change_from_a_stale_page_is_refused_not_overwritten(client, project, members):
    ann = members["annotator"]
    membership_role_set(project=project, user=ann, role=Role.ADJUDICATOR, by=members["admin"])
    response = login(client, members["admin"]).post(people_url(project, "role", ann),
                                                     {"role": Role.ADMIN, "expected": Role.ANNOTATOR},
                                                     follow=True)
    assert "meanwhile" in response.content.decode()
    assert Membership.objects.get(project=project, user=ann).role == Role.ADJUDICATOR
    with pytest.raises(MembershipConflict):
        membership_remove(project=project, user=ann, by=members["admin"], expected=Role.ANNOTATOR)


def test_the_last_admin_cannot_demote_or_remove_themselves(client, project, members):
    admin = members["admin"]
    login(client, admin)
    for action, data in (("role", {"role": Role.ANNOTATOR, "expected": Role.ADMIN}),
                         ("remove", {"expected": Role.ADMIN})):
        response = client.post(people_url(project, action, admin), data, follow=True)
        assert "last admin" in response.content.decode()
    assert Membership.objects.get(project=project, user=admin).role == Role.ADMIN
    with pytest.raises(MembershipError, match="last admin"):
        membership_set(project=project, user=admin, role=Role.ANNOTATOR)  # the add form, the command
    # with a second admin, the first may step down
    membership_role_set(project=project, user=members["adjudicator"], role=Role.ADMIN, by=admin)
    membership_role_set(project=project, user=admin, role=Role.ANNOTATOR, by=admin)
    assert groups(admin) == {"Annotator"}


def test_removal_takes_access_away_keeps_the_pseudonym_and_can_be_undone(client, project, members):
    ann = members["annotator"]
    pseudonym = Membership.objects.get(project=project, user=ann).pseudonym
    login(client, members["admin"]).post(people_url(project, "remove", ann), {"expected": Role.ANNOTATOR})
    m = Membership.objects.get(project=project, user=ann)
    assert not m.active and m.pseudonym == pseudonym
    assert groups(ann) == set()
    assert AuditEvent.objects.filter(action="membership.remove", details__member="annotator").exists()
    other = login(type(client)(), ann)
    assert other.get(f"/p/{project.slug}/").status_code == 404
    assert project.name not in other.get("/").content.decode()
    assert ann.is_active  # the account itself is untouched
    membership_set(project=project, user=ann, role=Role.ANNOTATOR, by=members["admin"])  # added back
    m.refresh_from_db()
    assert m.active and m.pseudonym == pseudonym and other.get(f"/p/{project.slug}/").status_code == 200


def test_only_staff_deactivate_accounts(client, project, members, django_user_model):
    ann = members["annotator"]
    response = login(client, members["admin"]).post(people_url(project, "account", ann), {"active": "False"})
    assert response.status_code == 403
    ann.refresh_from_db()
    assert ann.is_active
    root = django_user_model.objects.create_superuser("root", password="pw-root")
    staff = login(type(client)(), root)
    assert "Deactivate account" in staff.get(people_url(project)).content.decode()
    staff.post(people_url(project, "account", ann), {"active": "False"})
    ann.refresh_from_db()
    assert not ann.is_active
    assert AuditEvent.objects.filter(action="user.deactivate", user=root, details__member="annotator").exists()
    assert login(type(client)(), ann).get("/").status_code == 302  # an inactive user is logged out
    response = staff.post(people_url(project, "account", root), {"active": "False"}, follow=True)
    assert response.status_code == 404  # not a member: nothing to switch from this project's page


def test_nobody_deactivates_themselves_and_staff_cannot_deactivate_a_superuser(members, django_user_model):
    from annotator.services.accounts import AccountError, user_active_set

    staff = django_user_model.objects.create_user("staff", password="pw", is_staff=True)
    root = django_user_model.objects.create_superuser("root", password="pw-root")
    with pytest.raises(AccountError, match="own account"):
        user_active_set(user=staff, active=False, by=staff)
    with pytest.raises(AccountError, match="superuser"):
        user_active_set(user=root, active=False, by=staff)
    with pytest.raises(AccountError, match="Only staff"):
        user_active_set(user=members["annotator"], active=False, by=members["admin"])


def test_a_member_of_another_project_is_not_found(client, project, members):
    response = login(client, members["admin"]).post(people_url(project, "role", members["outsider"]),
                                                     {"role": Role.ADMIN, "expected": Role.ANNOTATOR})
    assert response.status_code == 404


# ---- the Django admin: the same services --------------------------------------------------


@pytest.fixture
def root_client(client, django_user_model):
    return login(client, django_user_model.objects.create_superuser("root", password="pw-root"))


def admin_post(root_client, m: Membership, **changes):
    data = {"user": m.user_id, "project": m.project_id, "role": m.role, "active": "on" if m.active else ""}
    data.update(changes)
    data = {k: v for k, v in data.items() if v != ""}
    return root_client.post(f"/admin/annotator/membership/{m.pk}/change/", data, follow=True)


def test_the_admin_changes_roles_through_the_service(root_client, project, members):
    m = Membership.objects.get(project=project, user=members["annotator"])
    admin_post(root_client, m, role=Role.ADMIN)
    m.refresh_from_db()
    assert m.role == Role.ADMIN and groups(members["annotator"]) == {"Admin"}
    assert AuditEvent.objects.filter(action="membership.role_set", details__was=Role.ANNOTATOR).exists()


def test_the_admin_removes_by_unticking_active_and_keeps_the_last_admin(root_client, project, members):
    m = Membership.objects.get(project=project, user=members["annotator"])
    admin_post(root_client, m, active="")
    m.refresh_from_db()
    assert not m.active and AuditEvent.objects.filter(action="membership.remove").exists()
    last = Membership.objects.get(project=project, user=members["admin"])
    body = admin_post(root_client, last, role=Role.ANNOTATOR).content.decode()
    assert "last admin" in body
    last.refresh_from_db()
    assert last.role == Role.ADMIN
    assert root_client.post(f"/admin/annotator/membership/{m.pk}/delete/", {"post": "yes"}).status_code == 403


def test_the_admin_adds_through_the_service(root_client, project, make_user):
    user = make_user("newcomer")
    root_client.post("/admin/annotator/membership/add/",
                     {"user": user.pk, "project": project.pk, "role": Role.ADJUDICATOR, "active": "on"})
    m = Membership.objects.get(project=project, user=user)
    assert m.role == Role.ADJUDICATOR and m.pseudonym and groups(user) == {"Adjudicator"}
    assert AuditEvent.objects.filter(action="membership.set", details__member="newcomer").exists()


def test_hand_edited_role_groups_are_put_back_in_step(root_client, members):
    ann = members["annotator"]
    admin_group, _ = Group.objects.get_or_create(name="Admin")
    data = {"username": ann.username, "is_active": "on", "groups": [admin_group.pk],
            "last_login_0": "", "last_login_1": "", "date_joined_0": "2026-01-01", "date_joined_1": "00:00:00"}
    root_client.post(f"/admin/auth/user/{ann.pk}/change/", data)
    assert groups(ann) == {"Annotator"}
    data.pop("is_active")  # switched off in the admin: audited
    root_client.post(f"/admin/auth/user/{ann.pk}/change/", data)
    ann.refresh_from_db()
    assert not ann.is_active and AuditEvent.objects.filter(action="admin.user.deactivate").exists()


def test_the_command_refuses_to_demote_the_last_admin(project, members):
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="last admin"):
        call_command("add_member", "admin", project=project.slug, role=Role.ANNOTATOR)


# ---- the last admin is the last *active* admin ---------------------------------------------


def test_a_deactivated_admin_does_not_count_as_another_admin(project, members, django_user_model):
    """With the other admin's account switched off, the last active admin demoted themself."""
    from annotator.services.accounts import user_active_set

    root = django_user_model.objects.create_superuser("root", password="pw-root")
    membership_set(project=project, user=members["adjudicator"], role=Role.ADMIN)
    user_active_set(user=members["adjudicator"], active=False, by=root)
    with pytest.raises(MembershipError, match="last admin"):
        membership_role_set(project=project, user=members["admin"], role=Role.ANNOTATOR, by=members["admin"])
    with pytest.raises(MembershipError, match="last admin"):
        membership_remove(project=project, user=members["admin"], by=members["admin"])
    assert Membership.objects.get(project=project, user=members["admin"]).role == Role.ADMIN


def test_deactivating_the_last_active_admin_is_refused(project, members, django_user_model):
    from annotator.services.accounts import AccountError, user_active_set

    root = django_user_model.objects.create_superuser("root", password="pw-root")
    with pytest.raises(AccountError, match="last active admin of Test project"):
        user_active_set(user=members["admin"], active=False, by=root)
    members["admin"].refresh_from_db()
    assert members["admin"].is_active
    membership_set(project=project, user=members["adjudicator"], role=Role.ADMIN)
    user_active_set(user=members["admin"], active=False, by=root)  # another active admin remains
    members["admin"].refresh_from_db()
    assert not members["admin"].is_active
