"""The new-project form saves as offered: its taxonomy box comes filled with the default labels."""

import html
import json
import re

from annotator.forms.projects import ProjectForm
from annotator.models import Project
from annotator.models.corpus import default_taxonomy


def _as_offered(form: ProjectForm) -> dict:
    """What the browser would post if the admin only typed a name and a slug."""
    data = {}
    for name in form.fields:
        value = form[name].value()
        if value is None or value is False:
            continue
        data[name] = value
    return data


def test_the_new_project_page_offers_the_default_taxonomy(client, members):
    members["admin"].is_superuser = True
    members["admin"].save()
    client.force_login(members["admin"])
    page = client.get("/projects/new/").content.decode()
    box = re.search(r'<textarea name="taxonomy"[^>]*>(.*?)</textarea>', page, re.S)
    assert box is not None
    assert json.loads(html.unescape(box.group(1))) == default_taxonomy()


def test_a_new_project_saves_as_offered(client, members):
    members["admin"].is_superuser = True
    members["admin"].save()
    client.force_login(members["admin"])
    data = {**_as_offered(ProjectForm()), "name": "Fresh", "slug": "fresh"}
    response = client.post("/projects/new/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Project.objects.get(slug="fresh").taxonomy == default_taxonomy()


def test_a_blank_taxonomy_means_the_default(client, members):
    members["admin"].is_superuser = True
    members["admin"].save()
    client.force_login(members["admin"])
    data = {**_as_offered(ProjectForm()), "name": "Blank", "slug": "blank", "taxonomy": "  "}
    assert client.post("/projects/new/", data).status_code == 302
    assert Project.objects.get(slug="blank").taxonomy == default_taxonomy()
