"""Every URL × every role × GET and POST, driven by Django's URL resolver.

The table ``EXPECT`` names, for each URL pattern (by name), who may open it and what the right
role gets; the test walks ``get_resolver().url_patterns`` recursively and fails for a pattern
that has no entry, so a new URL cannot escape the matrix. Django admin URLs are one group
(staff only), checked over each registered model's pages.

Roles: ``anonymous``; ``outsider`` (admin of *another* project); ``annotator``, ``adjudicator``
and ``admin`` of the project. Expectations: anonymous → 302 to the login page; outsider → 404
(it must not learn the project exists); a role below the page's → 403; the right role → the
status in the table (200, 302, or 405 for a method the page does not take). Each request runs
in a transaction that is rolled back, so one request's writes never change another's answer.

The API's URLs (``/api/v1/``) are walked too, each role with its own bearer token instead of a
session: no token → 401, and otherwise the same 404 / 403 rule. Their POSTs carry a valid body
(``API_BODIES``), so what answers is the role check, not the body's schema.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.contrib import admin as django_admin
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from annotator.models import (
    AdjudicationItem,
    Assignment,
    AssignmentPlan,
    BackgroundJob,
    Dialogue,
    Export,
    Role,
)
from tests.annotator.helpers import msg

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "outsider", "annotator", "adjudicator", "admin")
RANK = {"annotator": 1, "adjudicator": 2, "admin": 3}
LOGIN = "/accounts/login/"


@dataclass(frozen=True)
class Page:
    """A project page: ``role`` is the least role that may use it; ``get``/``post`` what it answers."""

    role: str
    get: int = 200
    post: int = 405
    owner: bool = False  # an annotator's own item: every other member gets 404, not 403

    def expected(self, who: str, method: str) -> int:
        status = self.get if method == "GET" else self.post
        if who == "anonymous":
            return 302
        if status == 405:  # the method is refused before anything is looked up: it tells nothing
            return 405
        if who == "outsider":
            return 404
        if self.owner and who != "annotator":
            return 404
        if RANK[who] < RANK[self.role]:
            return 403
        return status


@dataclass(frozen=True)
class Site:
    """A page outside any project: the status for each role and method, given explicitly."""

    statuses: dict

    def expected(self, who: str, method: str) -> int:
        return self.statuses[(who, method)]


def site(anonymous: tuple[int, int], others: tuple[int, int], **per_role: tuple[int, int]) -> Site:
    statuses = {}
    for who in ROLES:
        get, post = anonymous if who == "anonymous" else per_role.get(who, others)
        statuses[(who, "GET")], statuses[(who, "POST")] = get, post
    return Site(statuses)


@dataclass(frozen=True)
class Api(Page):
    """An API endpoint: as a page, except that a request without a token gets 401."""

    def expected(self, who: str, method: str) -> int:
        if who == "anonymous":
            return 405 if (self.get if method == "GET" else self.post) == 405 else 401
        return super().expected(who, method)


ANNOTATOR, ADJUDICATOR, ADMIN = "annotator", "adjudicator", "admin"

EXPECT: dict[str, Page | Site] = {
    # outside projects
    "project-list": site((302, 302), (200, 405)),
    "project-new": site((302, 302), (403, 403), outsider=(200, 200), admin=(200, 200)),
    "login": site((200, 200), (302, 302)),
    "logout": site((405, 302), (405, 302)),
    # anyone with the link: its token goes into the session, then sign up, or join
    "invitation-accept": site((302, 200), (302, 302)),
    # the project
    "project-dashboard": Page(ANNOTATOR),
    "project-label-styles": Page(ANNOTATOR),
    "project-settings": Page(ADMIN, post=200),
    "project-members": Page(ADMIN, post=200),
    "invitation-create": Page(ADMIN, get=405, post=302),
    "invitation-revoke": Page(ADMIN, get=405, post=302),
    "member-role": Page(ADMIN, get=405, post=302),
    "member-remove": Page(ADMIN, get=405, post=302),
    "member-account": Page(ADMIN, get=405, post=403),  # staff only: not even the project's admin
    "corpus-upload": Page(ADMIN, post=200),
    "job-detail": Page(ADMIN),
    "dialogue-list": Page(ADJUDICATOR),
    "dialogue-detail": Page(ADJUDICATOR),
    # detector runs and the tagger
    "run-list": Page(ADMIN, post=200),
    "run-detail": Page(ADMIN),
    "run-cancel": Page(ADMIN, get=405, post=302),
    "run-resume": Page(ADMIN, get=405, post=302),
    "tagger": Page(ADMIN),
    "tagger-train": Page(ADMIN, get=405, post=200),
    "tagger-activate": Page(ADMIN, get=405, post=302),
    "tagger-distil": Page(ADMIN, get=405, post=302),
    "tagger-retrain": Page(ADMIN, get=405, post=302),
    "tagger-retrain-settings": Page(ADMIN, get=405, post=200),
    # the workspace
    "workspace-queue": Page(ANNOTATOR, get=302),
    "workspace-list": Page(ANNOTATOR),
    "workspace-guidelines": Page(ANNOTATOR),
    "workspace-item": Page(ANNOTATOR, owner=True),
    **{name: Page(ANNOTATOR, get=405, post=302, owner=True) for name in (
        "workspace-span-add", "workspace-span-delete", "workspace-span-relabel",
        "workspace-suggestion-accept", "workspace-suggestion-reject", "workspace-suggestion-relabel",
        "workspace-no-pii", "workspace-no-pii-next", "workspace-flag", "workspace-undo", "workspace-submit", "workspace-skip",
        "workspace-reopen")},
    "workspace-time": Page(ANNOTATOR, get=405, post=204, owner=True),
    "workspace-admin": Page(ADMIN, post=200),
    "workspace-plan": Page(ADMIN),
    "workspace-reassign": Page(ADMIN, get=405, post=302),
    # adjudication and reports
    "adjudication-queue": Page(ADJUDICATOR),
    "adjudication-merge": Page(ADJUDICATOR, get=405, post=302),
    "adjudication-next": Page(ADJUDICATOR, get=302),
    "adjudication-item": Page(ADJUDICATOR),
    "adjudication-decide": Page(ADJUDICATOR, get=405, post=302),
    "reports-agreement": Page(ADJUDICATOR, post=200),
    "reports-agreement-download": Page(ADJUDICATOR),
    "reports-detectors": Page(ADJUDICATOR),
    "reports-detectors-download": Page(ADJUDICATOR),
    "reports-circularity": Page(ADJUDICATOR, post=200),
    "reports-circularity-download": Page(ADJUDICATOR),
    # exports and releases
    "export-list": Page(ADMIN, post=200),
    "export-detail": Page(ADMIN),
    "export-download": Page(ADMIN),
    "export-zip": Page(ADMIN),
    "release-mapping": Page(ADMIN),
    "release-publish": Page(ADMIN, get=405, post=302),
    "release-review": Page(ADJUDICATOR),
    "release-review-item": Page(ADJUDICATOR),
    "release-review-decide": Page(ADJUDICATOR, get=405, post=302),
    "release-review-skip": Page(ADJUDICATOR, get=405, post=302),
    "release-review-undo": Page(ADJUDICATOR, get=405, post=302),
    # webhooks
    "webhook-list": Page(ADMIN, post=200),
    "webhook-detail": Page(ADMIN),
    "webhook-ping": Page(ADMIN, get=405, post=302),
    "webhook-delete": Page(ADMIN, get=405, post=302),
    "webhook-redeliver": Page(ADMIN, get=405, post=302),
    # one's own API tokens (another's is 404: the world's token is the admin's)
    "api-tokens": site((302, 302), (200, 200)),
    "api-token-revoke": site((302, 302), (405, 404), admin=(405, 302)),
    # the API: a bearer token per role; annotators reach no run, report or release
    "api-root": site((404, 404), (404, 404)),  # nothing at /api/v1/ itself (it names the docs' URL)
    "openapi-json": site((200, 405), (200, 405)),
    "openapi-view": site((200, 405), (200, 405)),
    "api-projects": site((401, 405), (200, 405)),
    "api-imports": Api(ADMIN, get=405, post=202),
    "api-job": Api(ADMIN),
    "api-runs": Api(ADMIN, post=202),
    "api-run": Api(ADMIN),
    "api-run-cancel": Api(ADMIN, get=405, post=200),
    "api-plans": Api(ADMIN, get=405, post=200),
    "api-plan": Api(ADMIN),
    "api-report-agreement": Api(ADJUDICATOR, post=202),
    "api-report-detectors": Api(ADJUDICATOR),
    "api-report-circularity": Api(ADJUDICATOR, post=202),
    "api-exports": Api(ADMIN, post=202),
    "api-export": Api(ADMIN),
    "api-export-file": Api(ADMIN),
    "api-export-publish": Api(ADMIN, get=405, post=200),
}

# A valid body for each API POST (a function of the world's objects): a dry-run plan, a gold
# export, an acknowledged publication, so that the right role's answer is a success.
API_BODIES = {
    "api-runs": lambda w: {"detector": "rules"},
    "api-plans": lambda w: {"strategy": "dialogues", "n_dialogues": 1, "dry_run": True},
    "api-report-agreement": lambda w: {"n_boot": 10},
    "api-report-circularity": lambda w: {"run": w["kwargs"]["run_id"]},
    "api-exports": lambda w: {"kind": "gold"},
    "api-export-publish": lambda w: {"acknowledge": True},
    "api-run-cancel": lambda w: {},
}
API_UPLOAD = b'{"id": "matrix-1", "messages": [{"speaker": "Tutor", "text": "Hello"}]}\n'



def walk(patterns, prefix: str = "", namespace: str | None = None):
    """(route, name, namespace) of every URL pattern, included ones too."""
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from walk(p.url_patterns, prefix + str(p.pattern), p.namespace or namespace)
        elif isinstance(p, URLPattern):
            yield prefix + str(p.pattern), p.name, namespace


def app_patterns() -> list[tuple[str, str]]:
    """(route, name) of every URL outside the Django admin; django-ninja lists a path once per
    operation (GET and POST) under one name, and that is one URL here."""
    return list(dict.fromkeys((route, name) for route, name, ns in walk(get_resolver().url_patterns)
                              if ns != "admin"))


def namespace_of(name: str) -> str | None:
    return next(ns for _, n, ns in walk(get_resolver().url_patterns) if n == name)


def test_every_url_pattern_is_in_the_matrix():
    routes = app_patterns()
    missing = [f"{route} (name={name!r})" for route, name in routes if name not in EXPECT]
    assert not missing, f"URL patterns with no entry in the role matrix: {missing}"
    names = [name for _, name in routes]
    assert len(names) == len(set(names)), "URL names must be unique for the matrix"
    stale = sorted(set(EXPECT) - set(names))
    assert not stale, f"matrix entries for URLs that no longer exist: {stale}"
    admin_routes = [route for route, _, ns in walk(get_resolver().url_patterns) if ns == "admin"]
    assert admin_routes and all(r.startswith("admin/") for r in admin_routes)


# ---- the world every URL is requested in ------------------------------------------------------


@pytest.fixture
def world(ws_project, members, planned, settings, make_user):
    """Objects for every URL argument: an item of the annotator's, an adjudication item, jobs, a
    plan, a built release with files, and an outsider who is admin of another project."""
    from annotator.services.projects import membership_set, project_create

    project = ws_project
    plan = planned("aware")
    assignment = Assignment.objects.filter(annotator=members["annotator"], project=project).first()
    adj_item = AdjudicationItem.for_message(msg(project, "d2", 1), risk=1)
    adj_item.save()
    import_job = BackgroundJob.objects.create(project=project, kind=BackgroundJob.Kind.IMPORT,
                                              status=BackgroundJob.Status.SUCCEEDED)
    BackgroundJob.objects.create(project=project, kind=BackgroundJob.Kind.AGREEMENT,
                                 status=BackgroundJob.Status.SUCCEEDED,
                                 result={"agreement": {"figures": []}, "detectors": []})
    circ = BackgroundJob.objects.create(project=project, kind=BackgroundJob.Kind.CIRCULARITY,
                                        status=BackgroundJob.Status.SUCCEEDED,
                                        params={"run": project.suggestion_runs.first().pk},
                                        result={"rows": []})
    export = Export.objects.create(project=project, kind=Export.Kind.RELEASE, version=1,
                                   status=Export.Status.SUCCEEDED, publishable=True,
                                   files=[{"name": "release.jsonl", "size": 3, "sha256": ""}])
    from annotator.models import ReleaseCandidate
    from annotator.services.exports import export_dir, private_dir

    candidate = ReleaseCandidate.objects.create(export=export, message=msg(project, "d2", 1), start=0, end=3,
                                                label="NAME", key="k" * 32, reason="second_opinion")

    for folder, name in ((export_dir(export), "release.jsonl"), (private_dir(export), "mapping.jsonl")):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("{}\n")
    other = project_create(name="Other", slug="other")
    membership_set(project=other, user=members["outsider"], role=Role.ADMIN)
    from annotator.services.invitations import invitation_create

    invitation, token = invitation_create(project=project, role=Role.ANNOTATOR, by=members["admin"], link_for=str)
    from annotator.models import Webhook, WebhookDelivery
    from annotator.services.api_tokens import token_create

    hook = Webhook.objects.create(project=project, url="https://hooks.example.org/x", events=["run.finished"],
                                  secret="whsec_test", site_url="http://testserver")
    delivery = WebhookDelivery.objects.create(hook=hook, event="ping", event_key="ping:matrix", status="failed")
    bearer = {who: token_create(user=members[who], name="matrix") for who in ROLES if who != "anonymous"}
    kwargs = {
        "slug": project.slug, "job_id": import_job.pk, "dialogue_id": Dialogue.objects.get(
            project=project, external_id="d1").pk, "hook_id": hook.pk, "delivery_id": delivery.pk,
        "run_id": project.suggestion_runs.first().pk, "public_id": assignment.public_id,
        "plan_id": plan.pk if isinstance(plan, AssignmentPlan) else AssignmentPlan.objects.get().pk,
        "item_id": adj_item.pk, "fmt": "csv", "export_id": export.pk, "name": "release.jsonl",
        "candidate_id": candidate.pk, "user_id": members["annotator2"].pk, "token": token,
        "token_id": bearer["admin"][0].pk, "invitation_id": invitation.pk,
    }
    special = {"reports-circularity-download": {"job_id": circ.pk}}
    return {"members": members, "kwargs": kwargs, "special": special,
            "bearer": {who: secret for who, (_, secret) in bearer.items()}}


def url_for(world, name: str, route: str, namespace: str | None = None) -> str:
    from django.urls.resolvers import RoutePattern

    params = RoutePattern(route).converters
    kwargs = {k: world["kwargs"][k] for k in params}
    kwargs.update({k: v for k, v in world["special"].get(name, {}).items() if k in params})
    return reverse(f"{namespace}:{name}" if namespace else name, kwargs=kwargs)


def clients(world) -> dict[str, Client]:
    out = {}
    for who in ROLES:
        out[who] = Client()
        if who != "anonymous":
            out[who].force_login(world["members"][who])
    return out


def api_clients(world) -> dict[str, Client]:
    """A client per role that sends the role's bearer token (and no session)."""
    return {who: Client(headers={"Authorization": f"Bearer {world['bearer'][who]}"} if who != "anonymous" else {})
            for who in ROLES}


def request(client: Client, method: str, url: str, *, world=None, name: str = ""):
    """One request, in a transaction rolled back afterwards (the login outlives it)."""
    with transaction.atomic():
        if method == "GET":
            response = client.get(url)
        elif name in API_BODIES:
            response = client.post(url, API_BODIES[name](world), content_type="application/json")
        elif name == "api-imports":
            from django.core.files.uploadedfile import SimpleUploadedFile

            response = client.post(url, {"file": SimpleUploadedFile("m.jsonl", API_UPLOAD)})
        else:
            response = client.post(url, {})
        transaction.set_rollback(True)
    return response


def test_role_matrix(world):
    failures = []
    by_role, by_token = clients(world), api_clients(world)
    for route, name in app_patterns():
        namespace = namespace_of(name)
        url = url_for(world, name, route, namespace)
        for who in ROLES:
            for method in ("GET", "POST"):
                want = EXPECT[name].expected(who, method)
                client = by_token[who] if namespace == "api" else by_role[who]
                response = request(client, method, url, world=world, name=name)
                got, where = response.status_code, response.get("Location", "")
                if name == "logout" and method == "POST":
                    by_role = clients(world)  # logging out ends the client's session
                elif got == 302 and who == "anonymous" and not where.startswith(LOGIN) \
                        and where != reverse("invitation-accept", args=["join"]):
                    got = f"302 to {where}"  # anonymous users go to the login page, nowhere else
                if got != want:
                    failures.append(f"{method} {url} as {who}: {got} {where}, expected {want}")
    assert not failures, "\n" + "\n".join(failures)


# ---- Django admin, as a group: staff only ---------------------------------------------------


def admin_urls() -> list[str]:
    urls = [reverse("admin:index")]
    for model in django_admin.site._registry:
        urls.append(reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist"))
    return urls


def test_django_admin_is_for_staff_only(world, django_user_model):
    staff = django_user_model.objects.create_superuser("root", password="pw-root")
    by_role = clients(world)
    failures = []
    for url in admin_urls():
        for who in ROLES:  # none of them is staff, not even the project admin
            for method in ("GET", "POST"):
                response = request(by_role[who], method, url)
                if response.status_code != 302 or not response["Location"].startswith("/admin/login/"):
                    failures.append(f"{method} {url} as {who}: {response.status_code}")
        root = Client()
        root.force_login(staff)
        if request(root, "GET", url).status_code != 200:
            failures.append(f"GET {url} as staff superuser")
    assert not failures, "\n" + "\n".join(failures)


# ---- found by the matrix: roles that were taken away --------------------------------------


def test_a_demoted_admin_cannot_create_projects(client, members, project):
    """Project creation is for the Admin group; demoting the only admin role must take it away."""
    from annotator.services.projects import membership_set

    user = members["admin"]
    client.force_login(user)
    assert client.get("/projects/new/").status_code == 200
    membership_set(project=project, user=members["adjudicator"], role=Role.ADMIN)  # never the last admin
    membership_set(project=project, user=user, role=Role.ANNOTATOR)
    assert client.get("/projects/new/").status_code == 403
    assert set(user.groups.values_list("name", flat=True)) == {"Annotator"}


def test_group_follows_the_highest_role_held_anywhere(members, project):
    from annotator.services.projects import membership_set, project_create

    user = members["adjudicator"]
    other = project_create(name="Other", slug="other")
    membership_set(project=other, user=user, role=Role.ADMIN)
    membership_set(project=project, user=user, role=Role.ANNOTATOR)
    assert set(user.groups.values_list("name", flat=True)) == {"Admin", "Annotator"}


# ---- Django admin, walked as a staff admin of another project ---------------------------------


def admin_pattern_kwargs(name: str, route: str, world) -> dict | None:
    """Arguments that make an admin URL name a row of the world's project (None: a public page)."""
    if name in {"login", "logout", "jsi18n"} or name is None:
        return None
    if name == "app_list":
        return {"app_label": "annotator"}
    if name == "view_on_site":
        return None  # a redirect to the object's own page, which has its own check
    key = next((k for k in ("object_id", "id") if f"<{k}>" in route or f"<path:{k}>" in route), None)
    if key is None:
        return {}
    label, model_name = name.split("_", 2)[:2]
    model = next(m for m in django_admin.site._registry if m._meta.model_name == model_name
                 and m._meta.app_label == label)
    row = model._default_manager.order_by("pk").first()
    return {key: str(row.pk if row is not None else 1)}


def test_django_admin_refuses_a_staff_admin_of_another_project(world, project):
    """Staff with a role in another project only: every admin URL that is not the login page sends
    them to log in as someone allowed, and none of their POSTs writes (no membership of this
    project, no change to its rows)."""
    from annotator.models import Membership

    outsider = world["members"]["outsider"]
    outsider.is_staff = True
    outsider.save(update_fields=["is_staff"])
    client = Client()
    client.force_login(outsider)
    failures = []
    for route, name, ns in walk(get_resolver().url_patterns):
        kwargs = admin_pattern_kwargs(name, route, world) if ns == "admin" else None
        if kwargs is None:
            continue
        url = reverse(f"admin:{name}", kwargs=kwargs)
        for method in ("GET", "POST"):
            body = {"project": project.pk, "user": outsider.pk, "role": Role.ADMIN, "active": "on"}
            response = client.get(url) if method == "GET" else client.post(url, body)
            if response.status_code != 302 or not response["Location"].startswith("/admin/login/"):
                failures.append(f"{method} {url}: {response.status_code}")
    assert not failures, "\n" + "\n".join(failures)
    assert not Membership.objects.filter(project=project, user=outsider).exists()
    export = Export.objects.get(project=project, kind=Export.Kind.RELEASE)
    assert client.get(reverse("release-mapping", args=[project.slug, export.pk])).status_code == 404


def test_role_groups_carry_no_admin_rights(members, project):
    """Rights on a group are site-wide; a project admin's group must not open any project's rows."""
    from django.contrib.auth.models import Group

    assert not Group.objects.filter(name__in=["Admin", "Adjudicator"], permissions__isnull=False).exists()
    assert not members["admin"].get_all_permissions()
