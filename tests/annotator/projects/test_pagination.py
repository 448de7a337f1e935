"""A page number past the end of a list is a 404, however large (it was a 500); so is a
cursor past any key of a list that pages by cursor (the annotator's queue), and any
malformed cursor of the adjudication queue (which has only its first numbered page left)."""

from __future__ import annotations

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db

HUGE = "99999999999999999999"


@pytest.mark.parametrize("name, who", [
    ("dialogue-list", "adjudicator"), ("adjudication-queue", "adjudicator"),
])
def test_a_page_past_the_end_is_404(client, members, corpus, name, who):
    client.force_login(members[who])
    url = reverse(name, kwargs={"slug": "test"})
    assert client.get(url).status_code == 200
    assert client.get(url, {"page": "1"}).status_code == 200  # the first page, even when empty
    for page in (HUGE, "2", "-" + HUGE):
        response = client.get(url, {"page": page})
        assert response.status_code == (404 if not page.startswith("-") else 200), page
    assert client.get(url, {"page": HUGE}, HTTP_HX_REQUEST="true").status_code == 404


def test_a_cursor_past_any_key_is_404(client, members, corpus):
    client.force_login(members["annotator"])
    url = reverse("workspace-list", kwargs={"slug": "test"})
    for cursor in ("after", "before"):
        assert client.get(url, {cursor: f"{HUGE}-1"}).status_code == 404
        assert client.get(url, {cursor: f"1-{HUGE}"}, HTTP_HX_REQUEST="true").status_code == 404
        assert client.get(url, {cursor: "-" + HUGE}).status_code == 200  # not a cursor: the first page


def test_a_page_inside_the_list_still_works(client, members, corpus):
    client.force_login(members["adjudicator"])
    response = client.get(reverse("dialogue-list", kwargs={"slug": "test"}), {"page": "1"})
    assert response.status_code == 200 and "d1" in response.content.decode()


def test_a_malformed_adjudication_cursor_is_404(client, members, corpus):
    client.force_login(members["adjudicator"])
    url = reverse("adjudication-queue", kwargs={"slug": "test"})
    assert client.get(url, {"after": "0-0-1-0-1"}).status_code == 200  # a cursor: the rows after it (none)
    for cursor in ("after", "before"):
        for text in (f"{HUGE}-1-1-1-1", "1-1", "-" + HUGE, "1-1-1-1-x"):
            assert client.get(url, {cursor: text}).status_code == 404, text
            assert client.get(url, {cursor: text}, HTTP_HX_REQUEST="true").status_code == 404, text
