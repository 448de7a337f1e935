"""The project navigation, the suggestion-run setting and the error pages, as each role sees them."""

from __future__ import annotations

import pytest

from annotator.models import DetectorRun, Project
from tests.annotator.helpers import field_rows, label_rows

pytestmark = pytest.mark.django_db

ADMIN_LINKS = ["/p/test/runs/", "/p/test/tagger/", "/p/test/assignments/", "/p/test/import/",
               "/p/test/exports/", "/p/test/members/", "/p/test/settings/"]
ADJUDICATOR_LINKS = ["/p/test/dialogues/", "/p/test/adjudication/", "/p/test/reports/agreement/"]


def nav(html: str) -> str:
    start = html.index('<nav class="projnav"')
    return html[start:html.index("</nav>", start)]


@pytest.mark.parametrize(("who", "page"), [
    ("annotator", "/p/test/"), ("annotator", "/p/test/queue/items/"), ("annotator", "/p/test/guidelines/"),
    ("adjudicator", "/p/test/adjudication/"), ("admin", "/p/test/runs/"), ("admin", "/p/test/settings/"),
])
def test_every_project_page_has_the_navigation_for_the_role(client, members, who, page):
    client.force_login(members[who])
    bar = nav(client.get(page).content.decode())
    assert 'href="/p/test/"' in bar and 'href="/p/test/queue/"' in bar
    for link in ADJUDICATOR_LINKS:
        assert (f'href="{link}"' in bar) == (who in ("adjudicator", "admin"))
    for link in ADMIN_LINKS:
        assert (f'href="{link}"' in bar) == (who == "admin")
    assert bar.count('aria-current="page"') == 1


def test_the_navigation_links_open_for_the_role(client, members):
    for who in ("annotator", "adjudicator", "admin"):
        client.force_login(members[who])
        bar = nav(client.get("/p/test/").content.decode())
        for href in [part.split('"')[0] for part in bar.split('href="')[1:]]:
            assert client.get(href).status_code in (200, 302), (who, href)


def test_an_outsider_gets_no_project_navigation(client, members):
    client.force_login(members["outsider"])
    response = client.get("/p/test/")
    assert response.status_code == 404 and b"projnav" not in response.content


def test_a_too_low_role_gets_a_page_that_says_why(client, members):
    client.force_login(members["annotator"])
    response = client.get("/p/test/runs/")
    assert response.status_code == 403
    html = response.content.decode()
    assert "needs the Admin role" in html and 'href="/"' in html


def _settings(**extra):
    return {"name": "Test project", "slug": "test", "visibility_mode": "randomized", "overlap_k": 2,
            "context_window": 3, "labelling_policy": "strict", "merge_rule": "unanimous",
            "guidelines": "x", **label_rows(Project.objects.get(slug="test").taxonomy), **field_rows(), **extra}


def test_admin_chooses_the_suggestion_runs_in_settings(client, members, project):
    Project.objects.filter(pk=project.pk).update(visibility_mode="randomized")
    done = DetectorRun.objects.create(project=project, detector="rules", status=DetectorRun.Status.SUCCEEDED)
    failed = DetectorRun.objects.create(project=project, detector="rules", status=DetectorRun.Status.FAILED)
    client.force_login(members["admin"])
    page = client.get("/p/test/settings/").content.decode()
    boxes = page.count('name="suggestion_runs"')
    assert boxes == 1 and f'name="suggestion_runs" value="{done.pk}"' in page  # finished runs only
    assert "No suggestion run is chosen" in client.get("/p/test/assignments/").content.decode()

    assert client.post("/p/test/settings/", _settings(suggestion_runs=[done.pk])).status_code == 302
    assert list(project.suggestion_runs.all()) == [done]
    assert "No suggestion run is chosen" not in client.get("/p/test/assignments/").content.decode()
    response = client.post("/p/test/settings/", _settings(suggestion_runs=[failed.pk]))
    assert response.status_code == 200 and list(project.suggestion_runs.all()) == [done]


def test_a_new_project_is_created_without_suggestion_runs(client, members):
    members["admin"].is_superuser = True
    members["admin"].save()
    client.force_login(members["admin"])
    assert b"suggestion_runs" not in client.get("/projects/new/").content
    response = client.post("/projects/new/", _settings(name="Second", slug="second"))
    assert response.status_code == 302 and Project.objects.filter(slug="second").exists()
