"""Invitations: by e-mail (Django's locmem backend in tests) or a one-time link; a logged-out
person creates an account, a logged-in one joins; used, expired and unknown links get a clear
page; only a project admin invites, and never to more than admin."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core import mail
from django.test import Client
from django.utils import timezone

from annotator.models import AuditEvent, Invitation, Membership, Role
from annotator.selectors.invitations import token_hash
from annotator.services.invitations import InvitationError, invitation_accept, invitation_create

pytestmark = pytest.mark.django_db

LINK = re.compile(r"http://testserver/invitations/([\w-]+)/")


def invite(client, project, **data) -> str:
    """Invite through the People page; the token of the link it showed or mailed."""
    response = client.post(f"/p/{project.slug}/members/invite/", {"role": Role.ANNOTATOR, **data})
    text = mail.outbox[-1].body if data.get("email") else response.content.decode()
    return LINK.search(text).group(1)


@pytest.fixture
def admin_client(client, members):
    client.force_login(members["admin"])
    return client


def signup(token: str, username: str = "newbie", password: str = "a long enough passphrase 7") -> Client:
    c = Client()
    c.post(f"/invitations/{token}/", {"username": username, "email": "", "password1": password,
                                      "password2": password})
    return c


def test_an_emailed_invitation_creates_an_account_with_the_role(admin_client, project):
    token = invite(admin_client, project, email="new@example.org", role=Role.ADJUDICATOR)
    assert mail.outbox[-1].to == ["new@example.org"] and project.name in mail.outbox[-1].subject
    invitation = Invitation.objects.get()
    assert invitation.token_hash == token_hash(token) and token not in invitation.token_hash
    page = Client().get(f"/invitations/{token}/", follow=True).content.decode()
    assert "Adjudicator" in page and "new@example.org" in page  # the address is offered for the account
    newbie = signup(token)
    user = Membership.objects.get(project=project, user__username="newbie")
    assert user.role == Role.ADJUDICATOR
    assert newbie.get(f"/p/{project.slug}/").status_code == 200  # logged in at once
    assert AuditEvent.objects.filter(action="invitation.create", details__email="new@example.org").exists()
    assert AuditEvent.objects.get(action="invitation.accept").details["new_account"] is True


def test_a_link_is_shown_once_and_a_logged_in_person_joins(admin_client, project, members):
    token = invite(admin_client, project, role=Role.ADJUDICATOR)
    assert not mail.outbox
    assert token not in admin_client.get(f"/p/{project.slug}/members/").content.decode()
    outsider = Client()
    outsider.force_login(members["outsider"])
    assert "Join Test project" in outsider.get(f"/invitations/{token}/", follow=True).content.decode()
    response = outsider.post(f"/invitations/{token}/")
    assert response.status_code == 302 and response["Location"] == f"/p/{project.slug}/"
    assert Membership.objects.get(project=project, user=members["outsider"]).role == Role.ADJUDICATOR


def test_a_used_link_says_so_and_grants_nothing_more(admin_client, project, members):
    token = invite(admin_client, project)
    signup(token)
    again = Client().get(f"/invitations/{token}/", follow=True)
    assert again.status_code == 410 and "already been used" in again.content.decode()
    reuse = signup(token, username="second")
    assert not Membership.objects.filter(user__username="second").exists()
    from django.contrib.auth import get_user_model

    assert not get_user_model().objects.filter(username="second").exists()  # no account either
    assert reuse.get(f"/p/{project.slug}/").status_code == 302
    with pytest.raises(InvitationError, match="already been used"):
        invitation_accept(token=token, user=members["outsider"])


def test_an_expired_link_says_so(admin_client, project, members):
    token = invite(admin_client, project)
    Invitation.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    response = Client().get(f"/invitations/{token}/", follow=True)
    assert response.status_code == 410 and "expired" in response.content.decode()
    outsider = Client()
    outsider.force_login(members["outsider"])
    assert outsider.post(f"/invitations/{token}/").status_code == 410
    assert not Membership.objects.filter(project=project, user=members["outsider"]).exists()


def test_an_unknown_link_says_so(client):
    response = client.get("/invitations/not-a-real-token/", follow=True)
    assert response.status_code == 404 and "not valid" in response.content.decode()


def test_a_link_joins_its_own_project_only(admin_client, project, members):
    from annotator.services.projects import membership_set, project_create

    other = project_create(name="Other", slug="other")
    membership_set(project=other, user=members["outsider"], role=Role.ADMIN)
    outsider = Client()
    outsider.force_login(members["outsider"])
    token = invite(outsider, other, role=Role.ADMIN)
    annotator = Client()
    annotator.force_login(members["annotator"])
    annotator.post(f"/invitations/{token}/")
    assert Membership.objects.get(project=other, user=members["annotator"]).role == Role.ADMIN
    assert Membership.objects.get(project=project, user=members["annotator"]).role == Role.ANNOTATOR
    # the admin of one project cannot invite to another
    assert outsider.post(f"/p/{project.slug}/members/invite/", {"role": Role.ANNOTATOR}).status_code == 404


def test_only_a_project_admin_invites_and_never_above_admin(client, project, members):
    for who, status in (("adjudicator", 403), ("annotator", 403), ("outsider", 404)):
        client.force_login(members[who])
        assert client.post(f"/p/{project.slug}/members/invite/", {"role": Role.ANNOTATOR}).status_code == status
    with pytest.raises(InvitationError, match="Only an admin"):
        invitation_create(project=project, role=Role.ANNOTATOR, by=members["adjudicator"], link_for=str)
    with pytest.raises(InvitationError, match="not a role"):
        invitation_create(project=project, role="superuser", by=members["admin"], link_for=str)
    client.force_login(members["admin"])
    response = client.post(f"/p/{project.slug}/members/invite/", {"role": "superuser"}, follow=True)
    assert "superuser is not one of the available choices" in response.content.decode()
    assert not Invitation.objects.exists()


def test_an_invitation_never_demotes(admin_client, project, members):
    token = invite(admin_client, project, role=Role.ANNOTATOR)
    adjudicator = Client()
    adjudicator.force_login(members["adjudicator"])
    adjudicator.post(f"/invitations/{token}/")
    assert Membership.objects.get(project=project, user=members["adjudicator"]).role == Role.ADJUDICATOR


def test_a_new_account_needs_a_password_the_validators_accept(admin_client, project):
    token = invite(admin_client, project)
    c = Client()
    response = c.post(f"/invitations/{token}/", {"username": "newbie", "password1": "short",
                                                 "password2": "short"})
    assert response.status_code == 200 and "too short" in response.content.decode()
    assert Invitation.objects.get().used_at is None


def test_open_invitations_are_listed_for_the_admin(admin_client, project):
    invite(admin_client, project, email="someone@example.org")
    assert "someone@example.org" in admin_client.get(f"/p/{project.slug}/members/").content.decode()


# ---- an invitation is only as good as its sender, can be revoked, and is for its address ----


def test_a_link_dies_with_its_creators_admin_role(admin_client, project, members):
    """The admin who made a link, removed from the project, could open it and be admin again."""
    from annotator.services.projects import membership_remove, membership_set

    token = invite(admin_client, project, role=Role.ADMIN)
    membership_set(project=project, user=members["adjudicator"], role=Role.ADMIN)
    membership_remove(project=project, user=members["admin"], by=members["adjudicator"])
    response = admin_client.post(f"/invitations/{token}/")
    assert response.status_code == 410 and "no longer an admin" in response.content.decode()
    assert not Membership.objects.get(project=project, user=members["admin"]).active
    with pytest.raises(InvitationError, match="no longer an admin"):
        invitation_accept(token=token, user=members["outsider"])


def test_a_link_dies_with_its_creators_account(admin_client, project, members):
    token = invite(admin_client, project)
    members["admin"].is_active = False
    members["admin"].save(update_fields=["is_active"])
    with pytest.raises(InvitationError, match="no longer an admin"):
        invitation_accept(token=token, user=members["outsider"])


def test_an_admin_revokes_an_open_invitation_on_the_people_page(admin_client, project, members):
    token = invite(admin_client, project, email="someone@example.org")
    invitation = Invitation.objects.get()
    page = admin_client.get(f"/p/{project.slug}/members/").content.decode()
    url = f"/p/{project.slug}/members/invitations/{invitation.pk}/revoke/"
    assert url in page
    response = admin_client.post(url, follow=True)
    assert response.status_code == 200 and "revoked" in response.content.decode()
    assert "someone@example.org" not in admin_client.get(f"/p/{project.slug}/members/").content.decode()
    assert AuditEvent.objects.filter(action="invitation.revoke", details__email="someone@example.org").exists()
    opened = Client().get(f"/invitations/{token}/", follow=True)
    assert opened.status_code == 410 and "revoked" in opened.content.decode()
    with pytest.raises(InvitationError, match="revoked"):
        invitation_accept(token=token, user=members["outsider"])


def test_only_the_projects_admin_revokes(client, project, members):
    from annotator.services.invitations import invitation_revoke

    invitation, _ = invitation_create(project=project, role=Role.ANNOTATOR, by=members["admin"], link_for=str)
    url = f"/p/{project.slug}/members/invitations/{invitation.pk}/revoke/"
    for who, status in (("adjudicator", 403), ("outsider", 404)):
        client.force_login(members[who])
        assert client.post(url).status_code == status
    with pytest.raises(InvitationError, match="Only an admin"):
        invitation_revoke(invitation=invitation, by=members["adjudicator"])
    invitation.refresh_from_db()
    assert invitation.revoked_at is None


def test_an_emailed_invitation_is_for_the_account_with_that_address(admin_client, project, members):
    token = invite(admin_client, project, email="Outsider@Example.org")
    outsider = Client()
    outsider.force_login(members["outsider"])
    refused = outsider.post(f"/invitations/{token}/")
    assert refused.status_code == 410 and "Outsider@Example.org" in refused.content.decode()
    assert not Membership.objects.filter(project=project, user=members["outsider"]).exists()
    members["outsider"].email = "outsider@example.org"  # the same address, another case
    members["outsider"].save(update_fields=["email"])
    assert outsider.post(f"/invitations/{token}/").status_code == 302
    assert Membership.objects.get(project=project, user=members["outsider"]).active


def test_a_new_account_from_an_emailed_invitation_gets_that_address(admin_client, project):
    token = invite(admin_client, project, email="new@example.org")
    Client().post(f"/invitations/{token}/", {"username": "newbie", "email": "other@example.org",
                                             "password1": "a long enough passphrase 7",
                                             "password2": "a long enough passphrase 7"})
    assert Membership.objects.get(project=project, user__username="newbie").user.email == "new@example.org"


# ---- the token leaves the URL after the first request; secret pages are not cached ----------


def test_the_token_moves_from_the_url_into_the_session(admin_client, project, members):
    """The full token was in the web server's access log on every request of the sign-up."""
    token = invite(admin_client, project, role=Role.ADJUDICATOR)
    newcomer = Client()
    first = newcomer.get(f"/invitations/{token}/")
    assert first.status_code == 302 and token not in first["Location"]
    page = newcomer.get(first["Location"])
    assert page.status_code == 200 and "Adjudicator" in page.content.decode() and token not in page.content.decode()
    assert "no-store" in page["Cache-Control"]
    newcomer.post(first["Location"], {"username": "newbie", "password1": "a long enough passphrase 7",
                                      "password2": "a long enough passphrase 7"})
    assert Membership.objects.get(project=project, user__username="newbie").role == Role.ADJUDICATOR
    assert Client().get(first["Location"]).status_code == 404  # the short URL means nothing without the session


def test_the_page_that_shows_a_link_is_never_cached(admin_client, project):
    response = admin_client.post(f"/p/{project.slug}/members/invite/", {"role": Role.ANNOTATOR})
    assert LINK.search(response.content.decode()) and "no-store" in response["Cache-Control"]


@pytest.mark.parametrize("password", ["12345678", "password123", "qwertyuiop"])
def test_common_and_numeric_passwords_are_refused(admin_client, project, password):
    """An invitation sign-up accepted 12345678."""
    token = invite(admin_client, project)
    c = Client()
    c.get(f"/invitations/{token}/")
    response = c.post("/invitations/join/", {"username": "newbie", "password1": password, "password2": password})
    assert response.status_code == 200 and "too common" in response.content.decode()
    assert not Membership.objects.filter(user__username="newbie").exists()
