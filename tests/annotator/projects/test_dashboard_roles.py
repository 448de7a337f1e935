"""The project dashboard by role: an annotator sees their own queue and progress, nothing else."""

from __future__ import annotations

import pytest

from tests.annotator.helpers import RUN_DETECTOR

pytestmark = pytest.mark.django_db

PROJECT_FIGURES = ("detector runs", "messages with gold", "assignments done", "active)")


@pytest.fixture
def busy(ws_project, members, planned):
    """A run, a plan over both annotators, and annotator2 half done."""
    from annotator.models import Assignment

    planned("aware")
    mine = Assignment.objects.filter(annotator=members["annotator2"]).order_by("pk")
    Assignment.objects.filter(pk__in=list(mine.values_list("pk", flat=True)[:3])).update(
        status=Assignment.Status.DONE)
    return ws_project


def test_annotator_dashboard_shows_own_queue_only(client, members, busy):
    from annotator.models import Assignment

    client.force_login(members["annotator"])
    page = client.get("/p/test/").content.decode()
    total = Assignment.objects.filter(annotator=members["annotator"]).count()
    assert f"Your queue: 0 of {total} done" in page
    for text in PROJECT_FIGURES:
        assert text not in page, text
    assert 'id="counts"' not in page and RUN_DETECTOR not in page
    fragment = client.get("/p/test/", HTTP_HX_REQUEST="true").content.decode()
    for text in PROJECT_FIGURES:
        assert text not in fragment, text


@pytest.mark.parametrize("who", ["adjudicator", "admin"])
def test_adjudicators_and_admins_see_project_figures(client, members, busy, who):
    client.force_login(members[who])
    page = client.get("/p/test/").content.decode()
    assert "detector runs" in page and "messages with gold" in page and 'id="counts"' in page
    fragment = client.get("/p/test/", HTTP_HX_REQUEST="true").content.decode()
    assert "assignments done" in fragment and "<html" not in fragment
