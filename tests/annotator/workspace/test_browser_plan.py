"""A plan's dry run in Chromium: its result, rendered below the long plan form, is brought into
view on a laptop screen instead of leaving the page at its top."""

from __future__ import annotations

import pytest

from annotator.models import AssignmentPlan
from tests.annotator.helpers import LAPTOP, in_view

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_dry_runs_result_is_in_view(live_server, browser_page, members, ws_project):
    page = browser_page
    page.set_viewport_size(LAPTOP)
    page.goto(f"{live_server.url}/accounts/login/?next=/p/test/assignments/")
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password]", "pw-admin")
    page.click("form button.primary")
    page.select_option("select[name=strategy]", "dialogues")
    page.fill("input[name=n_dialogues]", "1")
    page.check("input[name=dry_run]")
    page.click("form.card button.primary:has-text('Create plan')")
    page.wait_for_selector("#plan-preview")
    page.wait_for_function("() => window.scrollY > 0")
    box = in_view(page, "#plan-preview h3")
    assert box["y"] < LAPTOP["height"] / 2
    assert not AssignmentPlan.objects.exists()
