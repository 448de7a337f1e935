"""A submitted item in Chromium: read-only until "o" reopens it; the help lists the key."""

from __future__ import annotations

import pytest

from annotator.models import Annotation, Assignment, AuditEvent, Dialogue, Message
from annotator.services import workspace as svc

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_submitted_item_is_read_only_until_o_reopens_it(live_server, browser_page, members, project):
    page = browser_page
    d = Dialogue.objects.create(project=project, external_id="d-fred")
    m = Message.objects.create(dialogue=d, project=project, position=0, speaker="Student", text="ok Fred")
    a = Assignment.objects.create(project=project, annotator=members["annotator"], message=m)
    svc.item_no_pii_set(assignment=a, user=members["annotator"], version=None, value=True)
    svc.item_submit(assignment=a, user=members["annotator"], version=None)

    page.goto(f"{live_server.url}/accounts/login/?next=/p/test/item/{a.public_id}/")
    page.fill("input[name=username]", "annotator")
    page.fill("input[name=password]", "pw-annotator")
    page.click("form button.primary")
    page.wait_for_selector("#ws[data-ready] #target-text")
    # every edit's button looks as refused as it is: Undo, Skip and "No PII · next" are disabled
    for cmd in ("undo", "skip", "no-pii-next"):
        assert page.locator(f"#item form[data-cmd='{cmd}'] button").is_disabled(), cmd
    page.keyboard.press("?")
    assert "reopen a submitted item" in page.inner_text("#ws-help")
    page.keyboard.press("Escape")

    page.keyboard.press("n")  # "no PII" is an edit of a submitted item: refused, nothing sent
    page.wait_for_selector("#toast:not([hidden])")
    assert "Reopen" in page.inner_text("#toast")
    a.refresh_from_db()
    assert a.no_pii and a.status == "done"

    page.keyboard.press("o")
    page.wait_for_selector("#item[data-status='in_progress']")
    assert AuditEvent.objects.filter(action="assignment.reopen").count() == 1
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert page.evaluate("window.getSelection().toString()") == "Fred"
    page.keyboard.press("1")  # NAME's key
    page.wait_for_selector("#ws-spans [data-focus]")
    assert Annotation.objects.get(assignment=a).label == "NAME"
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: str(a.public_id) not in url)
    a.refresh_from_db()
    assert a.status == "done"
