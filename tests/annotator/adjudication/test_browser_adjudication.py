"""An adjudicator settles the queue with the keyboard alone, in Chromium (Playwright).

The study fixture queues three disagreements, riskiest first: a possible leak (an e-mail address
one annotator marked), a label difference on a word-problem character and a boundary difference.
The adjudicator is refused when they would silently drop the leak, then adds the span by selecting
text and pressing a label key; confirms with Shift+Enter that the word-problem name is not PII;
keeps one annotator's span with its number key. Every decision is checked in the database. A
screenshot of the adjudication page goes to the ``screenshots_dir`` fixture
(``bin/screenshots`` refreshes docs/screenshots/adjudication.png). A second test reads the
annotators' notes on an item found through the queue's "Uncertain" filter and replies
(docs/screenshots/adjudication-notes.png).
"""

from __future__ import annotations

import pytest

from annotator.models import AdjudicationItem, Assignment, GoldSpan
from annotator.selectors.keymap import label_keys
from annotator.services.adjudication import gold_merge_ready
from tests.annotator.helpers import msg

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def select_in_target(page, start: int, end: int) -> None:
    """Select characters start..end of the target message, as a mouse drag would."""
    page.evaluate(
        """([s, e]) => {
            const node = document.querySelector('#adj-target .run').firstChild;  // the text's one run
            const r = document.createRange(); r.setStart(node, s); r.setEnd(node, e);
            const sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(r);
        }""",
        [start, end],
    )


def item_for(project, dialogue: str, position: int) -> AdjudicationItem:
    return AdjudicationItem.objects.get(project=project, message=msg(project, dialogue, position))


def gold(project, dialogue: str, position: int) -> list[tuple]:
    return sorted(GoldSpan.objects.filter(message=msg(project, dialogue, position))
                  .values_list("start", "end", "label", "provenance"))


def test_an_adjudicator_settles_the_queue_with_the_keyboard(live_server, browser_page, members, study,
                                                            screenshots_dir):
    page = browser_page
    assert gold_merge_ready(project=study) == {"merged": 2, "queued": 3}
    leak, label, boundary = item_for(study, "d1", 2), item_for(study, "d1", 3), item_for(study, "d2", 1)

    page.goto(f"{live_server.url}/accounts/login/?next=/p/test/adjudication/next/")
    page.fill("input[name=username]", "adjudicator")
    page.fill("input[name=password]", "pw-adjudicator")
    page.click("form button.primary")

    # 1. The riskiest item comes first: an e-mail address only one annotator marked.
    page.wait_for_url(f"**/adjudication/{leak.pk}/")
    assert page.locator("#adj-target").inner_text() == "Email me at maria.lopez@example.com if you get stuck."
    assert page.locator(".model-row").count() == 0  # the model is hidden from adjudicators by default
    assert page.locator("#adj-candidates input:checked").count() == 0  # one of two is no majority
    page.screenshot(path=str(screenshots_dir / "adjudication.png"), full_page=True)

    # Enter with nothing kept would drop the possible leak: refused, with what to do.
    page.keyboard.press("Enter")
    page.wait_for_selector("#toast:not([hidden])")
    assert "Shift+Enter" in page.locator("#toast").inner_text()
    assert not GoldSpan.objects.filter(message=leak.message).exists()
    assert page.url.endswith(f"/adjudication/{leak.pk}/")

    # Select part of the address (snapped to the whole address) and press the EMAIL key.
    select_in_target(page, 14, 34)
    key = {lk.label: lk.key for lk in label_keys(study.taxonomy)}
    page.keyboard.press(key["EMAIL"])
    added = page.locator("#adj-candidates li.added input")
    assert added.get_attribute("value") == "12:35:EMAIL" and added.is_checked()
    page.keyboard.press("Enter")

    # 2. A label difference on a word-problem character: Shift+Enter confirms it is not PII.
    page.wait_for_url(f"**/adjudication/{label.pk}/")
    assert gold(study, "d1", 2) == [(12, 35, "EMAIL", "adjudicated")]
    assert page.locator("#adj-candidates input[type=checkbox]").count() == 2
    page.keyboard.press("Shift+Enter")

    # 3. A boundary difference: j walks to the whole name, a keeps it, r drops it, u undoes the drop.
    page.wait_for_url(f"**/adjudication/{boundary.pk}/")
    label.refresh_from_db()
    assert label.status == "settled" and gold(study, "d1", 3) == []
    whole = page.locator("#adj-candidates li:has(input[value='12:15:NAME'])")
    for _ in range(page.locator("#adj-candidates li").count()):
        page.keyboard.press("j")
        if "focused" in (whole.get_attribute("class") or ""):
            break
    page.keyboard.press("a")
    assert whole.locator("input").is_checked() and "focused" not in (whole.get_attribute("class") or "")
    page.keyboard.press("k")
    page.keyboard.press("r")
    assert not whole.locator("input").is_checked()
    page.keyboard.press("u")
    assert whole.locator("input").is_checked()
    page.keyboard.press("Enter")

    # The queue is empty: back on the queue page, every item settled.
    page.wait_for_url("**/adjudication/")
    assert gold(study, "d2", 1) == [(12, 15, "NAME", "adjudicated")]
    assert not AdjudicationItem.objects.filter(project=study).exclude(status="settled").exists()
    assert "Nothing waits for adjudication" in page.content()


def test_the_adjudicator_reads_the_annotators_notes_and_replies(live_server, browser_page, members, study,
                                                                 screenshots_dir):
    """Each annotator's comment and "uncertain" flag beside their spans; the queue's
    "Uncertain" filter finds the item; the reply saved with the decision (screenshot:
    docs/screenshots/adjudication-notes.png through ``bin/screenshots``)."""
    page = browser_page
    first = Assignment.objects.get(annotator=members["annotator"], message=msg(study, "d1", 2))
    second = Assignment.objects.get(annotator=members["annotator2"], message=msg(study, "d1", 2))
    Assignment.objects.filter(pk=first.pk).update(
        uncertain=True, comment="Is this the pupil's own address or the tutor's? I marked it to be safe.")
    Assignment.objects.filter(pk=second.pk).update(comment="Looks like a made-up address from the worksheet.")
    gold_merge_ready(project=study)
    leak = item_for(study, "d1", 2)

    page.goto(f"{live_server.url}/accounts/login/?next=/p/test/adjudication/%3Fflag%3Duncertain")
    page.fill("input[name=username]", "adjudicator")
    page.fill("input[name=password]", "pw-adjudicator")
    page.click("form button.primary")
    page.wait_for_url("**/adjudication/?flag=uncertain")
    assert page.locator("#rows tbody tr").count() == 1
    page.click("#rows tbody tr a")

    page.wait_for_url(f"**/adjudication/{leak.pk}/")
    one, two = page.locator('.adj-note[data-annotator="1"]'), page.locator('.adj-note[data-annotator="2"]')
    assert "uncertain" in one.inner_text() and "the pupil's own address" in one.inner_text()
    assert "uncertain" not in two.inner_text() and "made-up address" in two.inner_text()
    assert "annotator2" not in page.content()
    page.fill("#adj-reply", "It is the pupil's own address: always keep e-mail addresses.")
    page.screenshot(path=str(screenshots_dir / "adjudication-notes.png"), full_page=True)
    page.focus("#adj-reply")
    page.keyboard.press("Escape")  # Esc leaves the box: keys typed in a text box are text
    assert page.evaluate("document.activeElement.id") != "adj-reply"
    select_in_target(page, 12, 35)
    page.keyboard.press({lk.label: lk.key for lk in label_keys(study.taxonomy)}["EMAIL"])
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: f"/adjudication/{leak.pk}/" not in url)
    assert GoldSpan.objects.get(message=leak.message).decision.reply.startswith("It is the pupil's own address")

    # The (blind) first annotator sees the decision and the reply on their item, not the other's note.
    page.context.clear_cookies()
    page.goto(f"{live_server.url}/accounts/login/?next=/p/test/item/{first.public_id}/")
    page.fill("input[name=username]", "annotator")
    page.fill("input[name=password]", "pw-annotator")
    page.click("form button.primary")
    decision = page.locator("#ws-decision")
    decision.wait_for()
    assert "maria.lopez@example.com" in decision.inner_text() and "always keep e-mail" in decision.inner_text()
    assert "made-up address" not in page.content()
