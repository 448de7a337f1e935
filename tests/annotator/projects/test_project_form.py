"""The project form and its labels: a row per label instead of raw JSON. A new
project is offered the default labels and saves as offered; the settings page adds, renames and
deletes labels, and says on the row what is wrong with it."""

from annotator.forms.projects import ProjectForm
from annotator.models import AuditEvent, Project
from annotator.models.corpus import default_taxonomy
from tests.annotator.helpers import field_rows, label_rows


def _as_offered(form: ProjectForm) -> dict:
    """What the browser would post if the admin only typed a name and a slug."""
    data = {}
    for name in form.fields:
        value = form[name].value()
        if value is None or value is False:
            continue
        data[name] = value
    return data


def _superuser(client, members):
    members["admin"].is_superuser = True
    members["admin"].save()
    client.force_login(members["admin"])


def test_the_new_project_page_offers_the_default_labels_a_row_each(client, members):
    _superuser(client, members)
    page = client.get("/projects/new/").content.decode()
    assert 'name="taxonomy"' not in page
    labels = default_taxonomy()
    assert f'name="labels-TOTAL_FORMS" value="{len(labels) + 1}"' in page  # and an empty row to add one
    for i, entry in enumerate(labels):
        assert f'name="labels-{i}-label" value="{entry["label"]}"' in page
    # A label's key is its row (the keymap's digits), so there is no letter to type, and the page says so.
    assert 'name="labels-0-key"' not in page and "<th>Key</th>" not in page
    assert "A label's key is its row" in page


def test_a_new_project_saves_as_offered(client, members):
    _superuser(client, members)
    data = {**_as_offered(ProjectForm()), **field_rows(), **label_rows(default_taxonomy()),
            "name": "Fresh", "slug": "fresh"}
    response = client.post("/projects/new/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    fresh = Project.objects.get(slug="fresh")
    assert fresh.taxonomy == default_taxonomy()
    # its creator (a superuser here) is listed as its admin, not "No members yet."
    members_page = client.get("/p/fresh/members/").content.decode()
    assert "No members yet" not in members_page and "admin" in members_page
    assert fresh.memberships.filter(user=members["admin"], role="admin").exists()


def _settings(project, taxonomy, **rows) -> dict:
    return {**_as_offered(ProjectForm(instance=project)), **field_rows(project.field_policy()),
            **label_rows(taxonomy, **rows)}


def test_the_settings_page_adds_renames_and_deletes_labels(client, members, project):
    client.force_login(members["admin"])
    before = project.taxonomy
    edited = [{**before[0], "label": "PERSON", "description": "A real person."}, *before[1:],
              {"label": "PET", "description": "", "color": "#123abc"}]
    response = client.post("/p/test/settings/", _settings(project, edited, delete={1}, initial=len(before)))
    assert response.status_code == 302, response.content.decode()[:3000]
    project.refresh_from_db()
    assert project.taxonomy == [edited[0], *edited[2:]]
    event = AuditEvent.objects.filter(action="project.update").latest("pk")
    assert "taxonomy" in event.details["fields"]


def test_the_settings_page_marks_each_bad_row(client, members, project):
    client.force_login(members["admin"])
    before = project.taxonomy
    twice = [{**before[0]}, {**before[1], "label": before[0]["label"]}, {**before[2], "color": "red"}]
    page = client.post("/p/test/settings/", _settings(project, twice)).content.decode()
    assert page.count("is used by another label too") == 2  # on both rows that share the label
    assert "A colour is #rrggbb" in page
    project.refresh_from_db()
    assert project.taxonomy == before
    everything_deleted = _settings(project, before, delete=set(range(len(before))))
    assert "Keep at least one label" in client.post("/p/test/settings/", everything_deleted).content.decode()


def test_a_taxonomy_stored_with_letter_keys_stays_valid_and_saves_without_them(client, members, project):
    """Taxonomies saved when a label had a letter key keep working: the key is ignored (digits by
    row are the keys on every screen), and the next save of the settings drops it."""
    from django.core.exceptions import ValidationError

    from annotator.models.corpus import validate_taxonomy
    from annotator.selectors.keymap import label_keys

    old = [{"label": "NAME", "key": "n", "description": "A person.", "color": "#fca5a5"},
           {"label": "EMAIL", "key": "e"}]
    validate_taxonomy(old)
    validate_taxonomy([{"label": "NAME"}, {"label": "EMAIL", "color": "#6ee7b7"}])
    for bad in ([{"label": "NAME"}, {"label": "NAME"}], [{"description": "no label"}], []):
        try:
            validate_taxonomy(bad)
        except ValidationError:
            continue
        raise AssertionError(f"{bad!r} passed the taxonomy check")
    Project.objects.filter(pk=project.pk).update(taxonomy=old)
    project.refresh_from_db()
    assert [(lk.label, lk.key) for lk in label_keys(project.taxonomy)] == [("NAME", "1"), ("EMAIL", "2")]
    client.force_login(members["admin"])
    response = client.post("/p/test/settings/", _settings(project, old, initial=len(old)))
    assert response.status_code == 302, response.content.decode()[:3000]
    project.refresh_from_db()
    assert project.taxonomy == [{"label": "NAME", "description": "A person.", "color": "#fca5a5"},
                                {"label": "EMAIL", "description": ""}]
