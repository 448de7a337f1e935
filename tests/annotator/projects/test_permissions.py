import pytest

from tests.annotator.helpers import label_rows

pytestmark = pytest.mark.django_db

ADMIN_PAGES = ["/p/test/settings/", "/p/test/members/", "/p/test/import/"]
ADJUDICATOR_PAGES = ["/p/test/dialogues/"]


@pytest.mark.parametrize("url", ["/", "/p/test/", *ADMIN_PAGES, *ADJUDICATOR_PAGES])
def test_anonymous_users_are_sent_to_login(client, members, url):
    response = client.get(url)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("url", ADMIN_PAGES + ADJUDICATOR_PAGES)
def test_annotator_gets_403_on_admin_pages(client, members, url):
    client.force_login(members["annotator"])
    assert client.get(url).status_code == 403


@pytest.mark.parametrize("url", ADMIN_PAGES)
def test_adjudicator_gets_403_on_admin_pages(client, members, url):
    client.force_login(members["adjudicator"])
    assert client.get(url).status_code == 403


@pytest.mark.parametrize("url", ["/p/test/", *ADMIN_PAGES, *ADJUDICATOR_PAGES])
def test_outsider_cannot_tell_the_project_exists(client, members, url):
    client.force_login(members["outsider"])
    assert client.get(url).status_code == 404


@pytest.mark.parametrize("url", ["/p/test/", *ADMIN_PAGES, *ADJUDICATOR_PAGES])
def test_admin_reaches_everything(client, members, corpus, url):
    client.force_login(members["admin"])
    assert client.get(url).status_code == 200


def test_dashboard_counts_and_htmx_fragment(client, members, corpus):
    client.force_login(members["adjudicator"])  # annotators see their own queue only
    page = client.get("/p/test/")
    assert b"dialogues" in page.content
    fragment = client.get("/p/test/", HTTP_HX_REQUEST="true")
    assert b"<html" not in fragment.content and b"messages" in fragment.content


def test_project_list_shows_only_own_projects(client, members, corpus):
    from annotator.services.projects import project_create

    project_create(name="Secret", slug="secret")
    client.force_login(members["annotator"])
    page = client.get("/").content.decode()
    assert "Test project" in page and "Secret" not in page


def test_annotator_cannot_create_projects(client, members):
    client.force_login(members["annotator"])
    assert client.get("/projects/new/").status_code == 403


def test_dialogue_page_shows_gold_to_adjudicator(client, members, corpus):
    from annotator.models import Dialogue

    client.force_login(members["adjudicator"])
    d1 = Dialogue.objects.get(external_id="d1")
    page = client.get(f"/p/test/dialogues/{d1.pk}/").content.decode()
    assert 'data-label="NAME"' in page and "Maria" in page


def test_dialogue_of_another_project_is_404(client, members, corpus):
    from annotator.models import Dialogue
    from annotator.services.projects import project_create

    other = project_create(name="Other", slug="other")
    d = Dialogue.objects.create(project=other, external_id="x")
    client.force_login(members["admin"])
    assert client.get(f"/p/test/dialogues/{d.pk}/").status_code == 404


def test_login_and_logout(client, members):
    response = client.post("/accounts/login/", {"username": "annotator", "password": "pw-annotator"})
    assert response.status_code == 302
    assert client.get("/").status_code == 200
    assert client.post("/accounts/logout/").status_code == 302
    assert client.get("/").status_code == 302


def test_settings_form_rejects_bad_taxonomy(client, members):
    client.force_login(members["admin"])
    response = client.post("/p/test/settings/", {
        "name": "Test project", "slug": "test", "visibility_mode": "blind", "overlap_k": 2,
        "context_window": 3, "labelling_policy": "strict", "merge_rule": "unanimous",
        "guidelines": "x", **label_rows([{"label": "NAME", "color": "red"}]),
    })
    assert response.status_code == 200 and b"A colour is #rrggbb" in response.content
