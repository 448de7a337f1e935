"""The workspace on a laptop screen (1280×720), measured in Chromium: every action of an aware item
with a long suggestion list is in view without scrolling the page (the list scrolls inside its
column), and the defects a first look found stay fixed: the "Submitted" pill is as tall as its
text, the target's focus box keeps clear of "label this message", the dialogue and the Labels
column start on one line, a span's Delete button stays on its span's line."""

from __future__ import annotations

import pytest

from annotator.models import Assignment, Prediction
from tests.annotator.helpers import LAPTOP, in_view, msg

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Words of d1#2 ("Email me at maria.lopez@example.com if you get stuck.") the model suggests.
WORDS = [(0, 5, "NAME"), (6, 8, "NAME"), (9, 11, "LOCATION"), (36, 38, "NAME"), (39, 42, "NAME"),
         (43, 46, "NAME")]


def open_item(page, live_server, assignment) -> None:
    page.set_viewport_size(LAPTOP)
    page.goto(f"{live_server.url}/accounts/login/?next=/p/test/item/{assignment.public_id}/")
    page.fill("input[name=username]", "annotator")
    page.fill("input[name=password]", "pw-annotator")
    page.click("form button.primary")
    page.wait_for_selector("#ws[data-ready] #target-text")



@pytest.fixture
def crowded(ws_project, members, planned, run):
    """An aware item with seven suggestions, more than its column holds."""
    planned("aware")
    m = msg(ws_project, "d1", 2)
    for start, end, label in WORDS:
        Prediction.objects.create(run=run, message=m, start=start, end=end, label=label, score=0.5)
    return Assignment.objects.get(annotator=members["annotator"], message=m)


def test_an_aware_item_fits_a_laptop_screen(live_server, browser_page, crowded):
    page = browser_page
    open_item(page, live_server, crowded)
    assert page.locator("#ws-suggestions li.pending").count() == 7

    submit = in_view(page, "form[data-cmd=submit] button")
    for action in ("no-pii-next", "undo", "skip", "flag"):
        in_view(page, f"form[data-cmd={action}] button")
    in_view(page, "#ws-comment")
    in_view(page, "#ws-uncertain")
    in_view(page, "#ws-suggestions li.focused form[data-cmd=accept] button")
    assert submit["y"] + submit["height"] <= LAPTOP["height"]
    # The page itself does not scroll; the suggestion list scrolls inside its column.
    assert page.evaluate("document.scrollingElement.scrollHeight") <= LAPTOP["height"]
    assert page.evaluate("(() => { const s = document.querySelector('.ws-panel .ws-scroll');"
                         " return s.scrollHeight > s.clientHeight; })()")
    # The last suggestion, focused with k, is scrolled into view inside the column.
    page.keyboard.press("k")
    in_view(page, "#ws-suggestions li.focused form[data-cmd=accept] button")

    # The state badge sits in the decisions column: the dialogue and the Labels start on one line.
    dialogue, labels = page.locator(".ws-dialogue").bounding_box(), page.locator(".ws-labels").bounding_box()
    assert abs(dialogue["y"] - labels["y"]) < 1
    # The focus box around the target text keeps clear of "label this message" above it.
    hint = page.locator(".msg.target .meta .small").bounding_box()
    text = page.locator("#target-text").bounding_box()
    outline = page.evaluate("(() => { const s = getComputedStyle(document.getElementById('target-text'));"
                            " return parseFloat(s.outlineOffset) + parseFloat(s.outlineWidth); })()")
    assert hint["y"] + hint["height"] <= text["y"] - outline, (hint, text, outline)


def test_saved_is_said_only_once_no_answer_is_still_to_come(live_server, browser_page, crowded):
    """Seven quick rejections queue seven requests, and each answer swaps the item. "Saved" after
    the first answer let the annotator (and a test) select text while six swaps were still to
    come, the next of which dropped the selection: the label key then added nothing."""
    page = browser_page
    open_item(page, live_server, crowded)
    for _ in range(7):
        page.keyboard.press("r")
    page.wait_for_selector("#ws-state[data-state='saved']")
    assert page.locator("#ws-decided [data-focus]").count() == 7


def test_text_selected_while_answers_come_back_is_kept(live_server, browser_page, crowded):
    """Words selected by keyboard right after seven quick rejections, while their answers still
    swap the item, are still selected when the label key comes: the span is added."""
    page = browser_page
    open_item(page, live_server, crowded)
    for _ in range(7):
        page.keyboard.press("r")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Shift+ArrowRight")
    page.wait_for_selector("#ws-state[data-state='saved']")
    page.keyboard.press("1")
    page.wait_for_selector("#ws-spans [data-focus]")
    page.wait_for_selector("#ws-state[data-state='saved']")
    assert page.locator("#ws-spans li").count() == 1


def test_a_long_span_keeps_its_delete_button_and_a_submitted_pill_its_text(live_server, browser_page, crowded):
    page = browser_page
    open_item(page, live_server, crowded)
    for _ in range(7):
        page.keyboard.press("r")
    page.wait_for_function("() => !document.querySelector('#ws-suggestions li.pending')")
    page.wait_for_selector("#ws-state[data-state='saved']")
    page.keyboard.press("ArrowRight")
    for _ in range(6):
        page.keyboard.press("Shift+ArrowRight")  # "Email me at maria.lopez@example.com if you"
    page.keyboard.press("x")  # exact: no snapping
    page.keyboard.press("1")
    page.wait_for_selector("#ws-spans [data-focus]")
    page.wait_for_selector("#ws-state[data-state='saved']")
    what = page.locator("#ws-spans li .ws-what").bounding_box()
    delete = page.locator("#ws-spans li form[data-cmd=delete] button").bounding_box()
    assert delete["y"] < what["y"] + 24 and delete["x"] > what["x"] + what["width"] - 1, (what, delete)
    in_view(page, "form[data-cmd=submit] button")

    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: str(crowded.public_id) not in url)
    page.goto(f"{live_server.url}/p/test/item/{crowded.public_id}/")
    page.wait_for_selector("#ws[data-ready] #item[data-status=done]")
    pill = page.locator(".ws-status .badge.ok")
    box = pill.bounding_box()
    line = page.evaluate("parseFloat(getComputedStyle(document.querySelector('.ws-status .badge.ok')).lineHeight)")
    assert pill.inner_text() == "Submitted" and box["height"] <= line + 6, (box, line)
    in_view(page, "form[data-cmd=reopen] button")
    in_view(page, "#item a[data-next]")



def add_span(page, start: int, end: int) -> dict:
    """Label ``start``–``end`` of the target with the first label key; the new span's box, asserted
    in the window and inside its scrolling column (not hidden below the column's fold)."""
    before = page.locator("#ws-spans li").count()
    page.evaluate("([s, e]) => window.blindspotOffsets.select(document.getElementById('target-text'), s, e)",
                  [start, end])
    page.keyboard.press("1")
    page.wait_for_function(f"() => document.querySelectorAll('#ws-spans li').length === {before + 1}")
    page.wait_for_selector("#ws-state[data-state='saved']")
    span = in_view(page, f"#ws-spans li:has(.ws-where:text-is('{start}–{end}'))")
    column = page.locator(".ws-panel .ws-scroll").bounding_box()
    bottom = column["y"] + column["height"] + 1  # scrolled to "nearest": flush with the edge, to a subpixel
    assert column["y"] <= span["y"] and span["y"] + span["height"] <= bottom, (span, column)
    return span


def test_a_span_just_added_shows_without_scrolling_however_many_suggestions(live_server, browser_page, crowded,
                                                                           run):
    """Eight suggestions, more than the column holds: a span the annotator adds is in view as soon
    as it is saved, first below the undecided suggestions (scrolled to in its column), then, once
    they are all decided, above the decided ones (listed under the spans)."""
    Prediction.objects.create(run=run, message=crowded.message, start=12, end=17, label="NAME", score=0.5)
    page = browser_page
    open_item(page, live_server, crowded)
    assert page.locator("#ws-suggestions li.pending").count() == 8
    add_span(page, 47, 52)  # "stuck"
    for _ in range(8):
        page.keyboard.press("r")
    page.wait_for_function("() => document.querySelectorAll('#item li.decided').length === 8")
    page.wait_for_selector("#ws-state[data-state='saved']")
    add_span(page, 0, 5)  # "Email"
    assert page.locator("#ws-spans").bounding_box()["y"] < page.locator("#ws-decided").bounding_box()["y"]
