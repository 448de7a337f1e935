"""The release review in Chromium: an adjudicator settles the self-audit's places with the keyboard."""

from __future__ import annotations

import pytest

from annotator.models import AuditEvent, CandidateDecision
from tests.annotator.exports.conftest import RECORD
from tests.annotator.exports.test_release_review import _build

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def moved_on(page, pk: int) -> None:
    """Wait until the page shows another candidate than ``pk``, or says the queue is done."""
    page.wait_for_selector(f"#review-done, #review-form:not([action*='/review/{pk}/'])")


def open_queue(page, live_server, project, export) -> None:
    """Log in as the adjudicator and open the release's review queue, its shortcuts ready."""
    page.goto(f"{live_server.url}/accounts/login/?next=/p/{project.slug}/exports/{export.pk}/review/")
    page.fill("input[name=username]", "adjudicator")
    page.fill("input[name=password]", "pw-adjudicator")
    page.click("form button.primary")
    page.wait_for_selector("#review-target mark")
    # the shortcuts are a deferred script: the item can be on the page before it runs, and a key
    # pressed then does nothing (seen under load in CI)
    page.wait_for_load_state("load")


def test_an_adjudicator_reviews_a_release_with_the_keyboard(live_server, browser_page, members,
                                                            issue_project, django_capture_on_commit_callbacks):
    export = _build(django_capture_on_commit_callbacks, issue_project, members["admin"])
    queue = list(export.candidates.order_by("pk"))
    assert len(queue) >= 2
    page = browser_page
    open_queue(page, live_server, issue_project, export)
    assert page.inner_text("#review-target mark").startswith(
        queue[0].message.text[queue[0].start:queue[0].end])
    assert "rules" not in page.content()  # blind to which detector raised it

    page.keyboard.press("r")  # not PII: reject
    moved_on(page, queue[0].pk)
    assert CandidateDecision.objects.get(key=queue[0].key).verdict == "dismissed"

    labels = [t["label"] for t in issue_project.taxonomy]
    assert queue[1].reason == "maths_number"  # a kept number: a alone never confirms it
    page.keyboard.press("a")
    page.wait_for_selector("#review-number-hint.notice")
    assert not CandidateDecision.objects.filter(key=queue[1].key).exists()
    page.keyboard.press("2")  # its label key confirms it with the second label
    moved_on(page, queue[1].pk)
    confirmed = CandidateDecision.objects.get(key=queue[1].key)
    assert confirmed.verdict == "confirmed" and confirmed.label == labels[1]

    if len(queue) > 2:
        page.keyboard.press("s")  # skip: the next one comes, the skipped one waits
        if len(queue) > 3:
            moved_on(page, queue[2].pk)
    counts = page.inner_text("#review-counts")
    assert f"{len(queue) - 2} waiting" in counts and "1 confirmed" in counts and "1 dismissed" in counts


def test_the_release_page_declares_its_record_policy_and_the_queue_shows_a_place_outside_the_messages(
        live_server, browser_page, members, record_project, django_capture_on_commit_callbacks, screenshots_dir):
    """The whole record: the release page's field-policy table, and a metadata e-mail (the second
    opinion's) in the review queue with its field and the value around it, confirmed by key."""
    project = record_project
    export = _build(django_capture_on_commit_callbacks, project, members["admin"])
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(f"{live_server.url}/accounts/login/?next=/p/{project.slug}/exports/{export.pk}/")
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password]", "pw-admin")
    page.click("form button.primary")
    table = page.wait_for_selector("#release-fields")
    text = table.inner_text()
    assert "messages[].speaker" in text and "pseudonym" in text and "keyed" in text and "shift" in text
    page.screenshot(path=str(screenshots_dir / "release-record-policy.png"), full_page=True)

    email = export.candidates.get(field="meta.student_email")
    page.goto(f"{live_server.url}/p/{project.slug}/exports/{export.pk}/review/{email.pk}/")
    page.wait_for_selector("#review-target mark")
    page.wait_for_load_state("load")
    assert "student_email" in page.inner_text(".field-candidate")
    assert page.inner_text("#review-target mark").startswith(RECORD["meta"]["student_email"])  # and its label
    page.screenshot(path=str(screenshots_dir / "review-envelope-candidate.png"), full_page=True)
    page.keyboard.press("a")  # PII, with the label it was found as
    moved_on(page, email.pk)
    assert CandidateDecision.objects.get(key=email.key).field == "meta.student_email"


def test_a_mis_key_is_undone_with_u(live_server, browser_page, members, issue_project,
                                    django_capture_on_commit_callbacks):
    """A confirmation and a dismissal taken back with u, latest first: each place waits again, and
    no verdict is left for a build to obey."""
    export = _build(django_capture_on_commit_callbacks, issue_project, members["admin"])
    first, number = list(export.candidates.order_by("pk"))[:2]
    page = browser_page
    open_queue(page, live_server, issue_project, export)
    page.keyboard.press("r")  # dismiss the first
    moved_on(page, first.pk)
    page.keyboard.press("4")  # the number: confirmed with its label key
    page.wait_for_selector("#review-done")
    assert CandidateDecision.objects.get(key=number.key).label == "AGE"

    page.keyboard.press("u")  # the mis-key taken back: the number waits again
    page.wait_for_selector(f"#review-form[action*='/review/{number.pk}/']")
    assert "Undone: it waits for your verdict again." in page.inner_text("main")
    page.wait_for_load_state("load")
    assert not CandidateDecision.objects.filter(key=number.key).exists()
    page.keyboard.press("Control+z")  # and the one before
    page.wait_for_selector(f"#review-form[action*='/review/{first.pk}/']")
    assert not CandidateDecision.objects.exists()
    assert "2 waiting" in page.inner_text("#review-counts")
    assert not page.query_selector("#review-undo")  # nothing left to undo
    assert set(AuditEvent.objects.filter(action="release.candidate.undo").values_list("details__candidate", flat=True)) == {
        first.pk, number.pk}


def test_a_skipped_candidate_stays_skipped_after_a_reload(live_server, browser_page, members, issue_project,
                                                         django_capture_on_commit_callbacks):
    export = _build(django_capture_on_commit_callbacks, issue_project, members["admin"])
    first, second = list(export.candidates.order_by("pk"))[:2]
    page = browser_page
    open_queue(page, live_server, issue_project, export)
    assert f"/review/{first.pk}/" in page.get_attribute("#review-form", "action")
    page.keyboard.press("s")
    moved_on(page, first.pk)
    page.reload()
    page.wait_for_selector("#review-target mark")
    assert f"/review/{second.pk}/" in page.get_attribute("#review-form", "action")  # not the skipped one
    page.wait_for_load_state("load")
    page.keyboard.press("r")  # the rest done: the skipped one comes back
    page.wait_for_selector(f"#review-form[action*='/review/{first.pk}/']")
    assert not CandidateDecision.objects.filter(key=first.key).exists()
