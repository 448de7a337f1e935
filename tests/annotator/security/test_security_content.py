"""User Markdown cannot carry script, a label colour cannot carry CSS.

Guidelines are written by project admins and read by every annotator (and superusers), so a
``javascript:`` link in them is stored XSS; a taxonomy colour is written into a stylesheet every
annotator loads, so ``red;background-image:url(…)`` would make their browsers fetch that URL.
"""

from __future__ import annotations

import re

import pytest
from django.core.exceptions import ValidationError

from annotator.forms.projects import taxonomy_formset
from annotator.models import Project
from annotator.templatetags.blindspot import render_markdown
from tests.annotator.helpers import label_rows

EVIL_LINKS = [
    "[Read the policy](javascript:alert(document.domain))",
    "[policy](JavaScript:alert(1))",
    "[policy](jav&#x09;ascript:alert(1))",
    "[policy](data:text/html,<script>alert(1)</script>)",
    "[policy](vbscript:msgbox(1))",
    "<javascript:alert(1)>",
    '[policy](javascript:alert(1) "title")',
    "[policy][ref]\n\n[ref]: javascript:alert(1)",
]


@pytest.mark.parametrize("source", EVIL_LINKS)
def test_markdown_drops_script_links(source):
    html = render_markdown(source)
    assert "<script" not in html.lower()
    for url in re.findall(r'(?:href|src)\s*=\s*"([^"]*)"', html, flags=re.I):
        assert re.match(r"(https?:|mailto:|/|#|[^:]*$)", url.strip(), flags=re.I), html


@pytest.mark.parametrize("source, expected", [
    ("[a](https://example.org/p?q=1)", 'href="https://example.org/p?q=1"'),
    ("[a](http://example.org/)", 'href="http://example.org/"'),
    ("[a](mailto:dpo@example.org)", 'href="mailto:dpo@example.org"'),
    ("[a](/p/test/guidelines/)", 'href="/p/test/guidelines/"'),
    ("[a](#numbers)", 'href="#numbers"'),
])
def test_markdown_keeps_safe_links(source, expected):
    assert expected in render_markdown(source)


def test_markdown_keeps_the_formatting_guidelines_use():
    html = render_markdown("# Title\n\n* **bold** and *em* and `code`\n\n| a | b |\n|:--|--:|\n| 1 | 2 |\n")
    for tag in ("<h1>", "<ul>", "<li>", "<strong>", "<em>", "<code>", "<table>", "<th>", "<td>"):
        assert tag in html
    assert "style=" not in html  # the tables extension's align styles would break the CSP


@pytest.mark.parametrize("source", [
    '<a href="javascript:alert(1)">x</a>',
    '<img src=x onerror="alert(1)">',
    "<script>alert(1)</script>",
    '<p onclick="alert(1)" style="color:red">x</p>',
])
def test_markdown_never_renders_raw_html(source):
    html = render_markdown(source)
    assert "<a " not in html and "<img" not in html and "<script" not in html and "<p onclick" not in html


@pytest.mark.django_db
def test_guidelines_page_has_no_script_link(client, members):
    Project.objects.filter(slug="test").update(guidelines="[Read the policy](javascript:alert(document.domain))")
    client.force_login(members["annotator"])
    response = client.get("/p/test/guidelines/")
    assert response.status_code == 200
    assert b"Read the policy" in response.content
    assert b"javascript:" not in response.content


# ---- Part 3: taxonomy colours -------------------------------------------------------------------

BAD_COLOURS = [
    "red;background-image:url(http://evil.example/x.png)",
    "red",
    "#fff",
    "#ff000",
    "#ff00000",
    "#gg0000",
    "#ff0000;",
    "#ff0000 url(x)",
    " #ff0000",
    "#ff0000\n",
    42,
    None,
]


def _taxonomy(color):
    return [{"label": "NAME", "key": "n", "description": "A person.", "color": color}]


@pytest.mark.parametrize("color", BAD_COLOURS)
def test_model_rejects_colours_that_are_not_rrggbb(color, db):
    project = Project(name="P", slug="p", taxonomy=_taxonomy(color))
    with pytest.raises(ValidationError, match="#rrggbb"):
        project.full_clean()


@pytest.mark.parametrize("color", ["#fca5a5", "#FCA5A5", "#000000"])
def test_model_accepts_rrggbb(color, db):
    from annotator.rendering import label_stylesheet

    project = Project(name="P", slug="p", taxonomy=_taxonomy(color))
    assert project.full_clean() is None  # no ValidationError
    assert project.taxonomy[0]["color"] == color  # kept as written
    assert f'[data-label="NAME"] {{ --c: {color}; }}' in label_stylesheet(project.taxonomy)


def test_model_accepts_a_label_without_colour(db):
    from annotator.rendering import DEFAULT_COLOR, taxonomy_colors

    project = Project(name="P", slug="p", taxonomy=[{"label": "NAME", "key": "n"}])
    assert project.full_clean() is None  # no ValidationError
    assert taxonomy_colors(project.taxonomy) == {"NAME": DEFAULT_COLOR}  # the label gets the default


@pytest.mark.django_db
def test_settings_form_rejects_css_in_colour(client, members):
    project = Project.objects.get(slug="test")
    before = project.taxonomy
    taxonomy = label_rows(_taxonomy("red;background-image:url(http://evil.example/x.png)"))
    labels = taxonomy_formset(taxonomy, taxonomy=before)
    assert not labels.is_valid()
    assert "#rrggbb" in str(labels.errors[0]["color"])
    client.force_login(members["admin"])
    response = client.post("/p/test/settings/", {
        "name": "Test project", "slug": "test", "visibility_mode": "blind", "overlap_k": 2,
        "context_window": 3, "labelling_policy": "strict", "merge_rule": "unanimous",
        "guidelines": "x", **taxonomy,
    })
    assert response.status_code == 200 and b"#rrggbb" in response.content
    project.refresh_from_db()
    assert project.taxonomy == before


@pytest.mark.django_db
def test_label_stylesheet_is_for_members_and_carries_only_valid_colours(client, members):
    """Rows saved before colours were validated (update() skips validation) never reach the CSS."""
    project = Project.objects.get(slug="test")
    taxonomy = [{"label": "NAME", "key": "n", "color": "#fca5a5"},
                {"label": "EMAIL", "key": "e", "color": "red;background-image:url(http://evil.example/x.png)"},
                {"label": 'A"]{} body{display:none', "key": "x", "color": "#00ff00"}]
    Project.objects.filter(pk=project.pk).update(taxonomy=taxonomy)
    client.force_login(members["outsider"])
    assert client.get("/p/test/labels.css").status_code == 404
    client.force_login(members["annotator"])
    response = client.get("/p/test/labels.css")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/css")
    css = response.content.decode()
    assert '[data-label="NAME"] { --c: #fca5a5; }' in css
    assert '[data-label="EMAIL"] { --c: #fde68a; }' in css  # the default, not the injected CSS
    assert "url(" not in css and "evil" not in css
    assert "body{" not in css and '"]{' not in css  # the label is escaped inside its string
    # Every project page links its stylesheet, versioned by content; no style attribute anywhere.
    page = client.get("/p/test/guidelines/").content.decode()
    assert re.search(r'<link rel="stylesheet" href="/p/test/labels\.css\?v=[0-9a-f]{12}">', page)
    assert "style=" not in page


def test_taxonomy_colors_fall_back_for_invalid_values():
    """What every page and adjudication.js get for a colour saved before validation existed."""
    from annotator.rendering import taxonomy_colors

    colors = taxonomy_colors([{"label": "NAME", "color": "red;x:url(y)"}, {"label": "AGE", "color": "#123456"},
                              {"label": "URL"}])
    assert colors == {"NAME": "#fde68a", "AGE": "#123456", "URL": "#fde68a"}
