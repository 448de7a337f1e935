"""The Webhooks pages: admins register, list, test and remove hooks; every other role is kept out;
bad input gets a clear error; the secret is shown once."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotator.models import AuditEvent, Role, Webhook, WebhookDelivery

pytestmark = pytest.mark.django_db


@pytest.fixture
def login(client, members):
    def as_(who: str):
        client.force_login(members[who])
        return client

    return as_


def register(client, slug, url, events=("run.finished",)):
    return client.post(reverse("webhook-list", kwargs={"slug": slug}), {"url": url, "events": list(events)})


def test_an_admin_registers_a_hook_and_sees_its_secret_once(loopback_allowed, login, project, receiver):
    client = login("admin")
    response = register(client, project.slug, receiver.url, ["run.finished", "release.built"])
    assert response.status_code == 200
    hook = Webhook.objects.get(project=project)
    assert hook.secret.startswith("whsec_") and hook.secret in response.content.decode()
    assert "not shown again" in response.content.decode()
    assert response["Cache-Control"] == "no-store"
    assert hook.events == ["release.built", "run.finished"] and hook.site_url == "http://testserver"
    page = client.get(reverse("webhook-list", kwargs={"slug": project.slug})).content.decode()
    assert receiver.url.replace("&", "&amp;") in page and hook.secret not in page
    detail = client.get(reverse("webhook-detail", kwargs={"slug": project.slug, "hook_id": hook.pk}))
    assert hook.secret not in detail.content.decode()
    assert AuditEvent.objects.filter(action="webhook.created").exists()


@pytest.mark.parametrize(("url", "events", "says"), [
    ("ftp://hooks.example.org/x", ["run.finished"], "starts with https://"),
    ("https://bob:pw@93.184.216.34/x", ["run.finished"], "no user name or password"),
    ("http://127.0.0.1:9/x", ["run.finished"], "127.0.0.1 is a loopback address"),
    ("http://169.254.169.254/latest/", ["run.finished"], "cloud metadata address"),
    ("https://93.184.216.34/x", [], "Choose at least one event."),
    ("https://93.184.216.34/x", ["run.deleted"], "Select a valid choice"),
    ("", ["run.finished"], "This field is required."),
])
def test_bad_input_is_refused_with_a_clear_error(settings, login, project, url, events, says):
    settings.BLINDSPOT_WEBHOOK_ALLOWED_NETWORKS = []
    response = register(login("admin"), project.slug, url, events)
    assert response.status_code == 200
    assert says in response.content.decode()
    assert not Webhook.objects.exists()


def test_a_public_address_registers_without_any_setting(settings, login, project):
    settings.BLINDSPOT_WEBHOOK_ALLOWED_NETWORKS = []
    assert register(login("admin"), project.slug, "https://93.184.216.34/hook").status_code == 200
    assert Webhook.objects.filter(url="https://93.184.216.34/hook").exists()


def test_send_test_delivers_a_signed_ping_and_the_pages_show_it(loopback_allowed, login, project, receiver,
                                                                hook_for, django_capture_on_commit_callbacks):
    hook = hook_for(project, receiver.url)
    client = login("admin")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("webhook-ping", kwargs={"slug": project.slug, "hook_id": hook.pk}))
    assert response.status_code == 302
    delivery = WebhookDelivery.objects.get(hook=hook)
    assert (delivery.event, delivery.status) == ("ping", "delivered")
    assert len(receiver.got) == 1 and "Blindspot-Signature" in receiver.got[0]["headers"]
    detail = client.get(response["Location"]).content.decode()
    assert "delivered · 200" in detail
    listing = client.get(reverse("webhook-list", kwargs={"slug": project.slug})).content.decode()
    assert "delivered · 200" in listing and "ping" in listing
    partial = client.get(response["Location"], headers={"HX-Request": "true"}).content.decode()
    assert partial.startswith('<section id="deliveries"') and "<html" not in partial


def test_a_refused_delivery_shows_its_reason(settings, login, project, hook_for,
                                             django_capture_on_commit_callbacks):
    settings.BLINDSPOT_WEBHOOK_ALLOWED_NETWORKS = []
    hook = hook_for(project, "http://169.254.169.254/latest/meta-data/")
    client = login("admin")
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("webhook-ping", kwargs={"slug": project.slug, "hook_id": hook.pk}))
    detail = client.get(reverse("webhook-detail", kwargs={"slug": project.slug, "hook_id": hook.pk})).content.decode()
    assert "failed" in detail and "169.254.169.254 is a cloud metadata address" in detail


def test_an_admin_removes_a_hook(login, project, hook_for):
    hook = hook_for(project, "https://93.184.216.34/x")
    response = login("admin").post(reverse("webhook-delete", kwargs={"slug": project.slug, "hook_id": hook.pk}))
    assert response.status_code == 302 and not Webhook.objects.exists()
    assert AuditEvent.objects.filter(action="webhook.deleted").exists()


PAGES = [("webhook-list", "GET", 200), ("webhook-list", "POST", 200), ("webhook-detail", "GET", 200),
         ("webhook-ping", "POST", 302), ("webhook-delete", "POST", 302), ("webhook-redeliver", "POST", 302)]


@pytest.mark.parametrize(("who", "expected"), [
    ("admin", None), ("adjudicator", 403), ("annotator", 403), ("outsider", 404), ("anonymous", 302)])
@pytest.mark.parametrize(("name", "method", "ok"), PAGES)
def test_only_the_projects_admins_reach_the_pages(client, members, project, hook_for, who, expected, name,
                                                  method, ok):
    hook = hook_for(project, "https://93.184.216.34/x")
    failed = WebhookDelivery.objects.create(hook=hook, event="ping", event_key="ping:1", status="failed", attempts=6)
    if who != "anonymous":
        client.force_login(members[who])
    kwargs = {"slug": project.slug} | ({"hook_id": hook.pk} if name != "webhook-list" else {})
    kwargs |= {"delivery_id": failed.pk} if name == "webhook-redeliver" else {}
    url = reverse(name, kwargs=kwargs)
    response = client.get(url) if method == "GET" else client.post(url, {})
    assert response.status_code == (expected or ok)
    if who == "anonymous":
        assert response["Location"].startswith("/accounts/login/")
    if expected:
        assert Webhook.objects.filter(pk=hook.pk).exists()
        assert list(WebhookDelivery.objects.values_list("pk", "status", "attempts")) == [(failed.pk, "failed", 6)]


def test_another_projects_hook_is_not_found(client, members, project, hook_for):
    from annotator.services.projects import membership_set, project_create

    other = project_create(name="Other", slug="other")
    membership_set(project=other, user=members["admin"], role=Role.ADMIN)
    theirs = hook_for(other, "https://93.184.216.34/x")
    client.force_login(members["admin"])
    for name in ("webhook-detail", "webhook-ping", "webhook-delete"):
        url = reverse(name, kwargs={"slug": project.slug, "hook_id": theirs.pk})
        assert (client.get(url) if name == "webhook-detail" else client.post(url)).status_code == 404
    assert Webhook.objects.filter(pk=theirs.pk).exists()


def test_the_navigation_links_the_page_for_admins_only(login, project):
    page = login("admin").get(reverse("webhook-list", kwargs={"slug": project.slug})).content.decode()
    assert 'aria-current="page">Webhooks<' in page
    dashboard = login("adjudicator").get(reverse("project-dashboard", kwargs={"slug": project.slug}))
    assert reverse("webhook-list", kwargs={"slug": project.slug}) not in dashboard.content.decode()


def test_send_again_redelivers_a_failed_delivery_but_never_a_delivered_one(
        loopback_allowed, login, project, receiver, hook_for, django_capture_on_commit_callbacks):
    hook = hook_for(project, receiver.url)
    failed = WebhookDelivery.objects.create(hook=hook, event="ping", event_key="ping:1", status="failed", attempts=6,
                                            payload={"event": "ping"}, last_error="The receiver answered 500.")
    client = login("admin")
    again = reverse("webhook-redeliver", kwargs={"slug": project.slug, "hook_id": hook.pk, "delivery_id": failed.pk})
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(again).status_code == 302
    failed.refresh_from_db()
    assert (failed.status, failed.attempts, failed.last_error) == ("delivered", 1, "")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(again, follow=True)
    assert "not sent twice" in response.content.decode()
    assert len(receiver.got) == 1
    assert AuditEvent.objects.filter(action="webhook.redeliver").count() == 1


def test_send_again_needs_the_hooks_own_delivery(login, project, hook_for):
    one, two = hook_for(project, "https://93.184.216.34/a"), hook_for(project, "https://93.184.216.34/b")
    theirs = WebhookDelivery.objects.create(hook=two, event="ping", event_key="ping:1", status="failed")
    url = reverse("webhook-redeliver", kwargs={"slug": project.slug, "hook_id": one.pk, "delivery_id": theirs.pk})
    assert login("admin").post(url).status_code == 404
    theirs.refresh_from_db()
    assert theirs.status == "failed"
