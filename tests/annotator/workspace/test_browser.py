"""A real annotator session in Chromium (Playwright) against the live server.

Log in, accept a suggestion with the keyboard, reject one, add a span by mouse selection and a
label key, survive a failed request with the selection kept, add a span by keyboard selection,
check that a blind item has no suggestion anywhere in its DOM, submit and move on. Screenshots of
both conditions go to the ``screenshots_dir`` fixture (a temporary directory; ``bin/screenshots``
refreshes docs/screenshots/).
"""

from __future__ import annotations

import pytest

from annotator.models import Annotation, Assignment
from tests.annotator.helpers import RUN_DETECTOR, RUN_MODEL, msg

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

Origin = Annotation.Origin


def drag_select(page, start: int, end: int) -> None:
    """Select target-text characters start..end with the mouse (a real drag)."""
    box = page.evaluate(
        """([s, e]) => {
            const root = document.getElementById('target-text');
            const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
            let n = 0, t, a = null, b = null;
            while ((t = walker.nextNode())) {
              if (t.parentElement.closest('.tag')) continue;
              if (!a && s < n + t.data.length) a = [t, s - n];
              if (!b && e <= n + t.data.length) b = [t, e - n];
              n += t.data.length;
            }
            const r1 = document.createRange(); r1.setStart(a[0], a[1]); r1.setEnd(a[0], a[1] + 1);
            const r2 = document.createRange(); r2.setStart(b[0], b[1] - 1); r2.setEnd(b[0], b[1]);
            const p = r1.getBoundingClientRect(), q = r2.getBoundingClientRect();
            return {x1: p.left + 1, y1: p.top + p.height / 2, x2: q.right - 1, y2: q.top + q.height / 2};
        }""",
        [start, end],
    )
    page.mouse.move(box["x1"], box["y1"])
    page.mouse.down()
    page.mouse.move((box["x1"] + box["x2"]) / 2, box["y2"], steps=4)
    page.mouse.move(box["x2"], box["y2"], steps=4)
    page.mouse.up()


def wait_saved(page) -> None:
    page.wait_for_selector("#ws-state[data-state='saved']")


def test_an_annotator_labels_with_keyboard_and_mouse(live_server, browser_page, members, ws_project, planned,
                                                     screenshots_dir):
    page = browser_page
    planned("aware")
    me = members["annotator"]
    item = {key: Assignment.objects.get(annotator=me, message=msg(ws_project, *key))
            for key in [("d1", 0), ("d1", 1), ("d1", 2), ("d1", 3)]}
    Assignment.objects.filter(pk__in=[item["d1", 2].pk, item["d1", 3].pk]).update(condition="blind")

    page.goto(f"{live_server.url}/accounts/login/?next=/p/test/queue/")
    page.fill("input[name=username]", "annotator")
    page.fill("input[name=password]", "pw-annotator")
    page.click("form button.primary")
    page.wait_for_selector("#ws[data-ready] #target-text")
    assert str(item["d1", 0].public_id) in page.url

    # 1. Aware item: the suggestion is shown; accept it with "a".
    assert page.locator("#target-text mark.suggestion").count() == 1
    page.screenshot(path=str(screenshots_dir / "workspace-aware.png"), full_page=True)
    page.keyboard.press("a")
    page.wait_for_selector("#ws-spans [data-focus]")
    ann = Annotation.objects.get(assignment=item["d1", 0])
    assert (ann.origin, ann.label, ann.condition, ann.start, ann.end) == (Origin.ACCEPTED, "NAME", "aware", 3, 8)
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/{item['d1', 1].public_id}/")

    # 2. Aware item with a false positive on a fraction: reject with "r" (the only suggestion, so
    # the item has no PII now), Enter.
    page.wait_for_selector("#ws-suggestions li.pending")
    page.keyboard.press("r")
    page.wait_for_selector("#ws-decided li.decided")
    assert Annotation.objects.get(assignment=item["d1", 1]).origin == Origin.REJECTED
    page.wait_for_selector(".ws-nopii")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/{item['d1', 2].public_id}/")

    # 3. Blind item: nothing of the model in the DOM, although the run flagged this message.
    page.wait_for_selector("#ws[data-ready] #target-text")
    assert page.locator(".suggestion, [data-suggestion], #ws-suggestions, #ws-decided").count() == 0
    html = page.content().lower()
    for needle in ("suggestion", RUN_DETECTOR, RUN_MODEL):
        assert needle.lower() not in html
    page.screenshot(path=str(screenshots_dir / "workspace-blind.png"), full_page=True)

    # A failed request keeps the selection and says so; the retry saves.
    page.route("**/spans/add/", lambda route: route.abort())
    drag_select(page, 12, 35)
    page.keyboard.press("6")  # EMAIL
    page.wait_for_selector("#toast:not([hidden])")
    page.wait_for_selector("#ws-state[data-state='error']")
    assert page.evaluate("window.getSelection().toString()") == "maria.lopez@example.com"
    assert not Annotation.objects.filter(assignment=item["d1", 2]).exists()
    page.unroute("**/spans/add/")
    page.keyboard.press("6")
    page.wait_for_selector("#ws-spans [data-focus]")
    wait_saved(page)
    ann = Annotation.objects.get(assignment=item["d1", 2])
    assert (ann.start, ann.end, ann.label, ann.origin, ann.condition) == (12, 35, "EMAIL", Origin.ADDED, "blind")

    # Undo and redo by mouse: a sloppy drag inside a word is snapped to the whole word.
    page.keyboard.press("u")
    page.wait_for_function("() => document.querySelectorAll('#ws-spans [data-focus]').length === 0")
    drag_select(page, 14, 34)  # "ria.lopez@example.co" → the whole address
    page.click(".label-btn[data-label=EMAIL]")
    page.wait_for_selector("#ws-spans [data-focus]")
    ann = Annotation.objects.get(assignment=item["d1", 2])
    assert (ann.start, ann.end) == (12, 35)
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/{item['d1', 3].public_id}/")

    # 4. Keyboard selection: → selects the first word, a label key labels it.
    page.wait_for_selector("#ws[data-ready] #target-text")
    page.keyboard.press("ArrowRight")
    assert page.evaluate("window.getSelection().toString()") == "Alex"
    page.keyboard.press("1")  # NAME
    page.wait_for_selector("#ws-spans [data-focus]")
    ann = Annotation.objects.get(assignment=item["d1", 3])
    assert (ann.start, ann.end, ann.label) == (0, 4, "NAME")
    # The help lists the shortcuts; Escape closes it.
    page.keyboard.press("?")
    assert page.locator("#ws-help").is_visible()
    page.keyboard.press("Escape")
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: str(item["d1", 3].public_id) not in url)

    done = dict(Assignment.objects.filter(annotator=me).values_list("message_id", "status"))
    assert [done[item[k].message_id] for k in sorted(item)] == ["done"] * 4
    assert Assignment.objects.get(pk=item["d1", 0].pk).active_seconds >= 0


def test_keyboard_only_editing_and_a_second_tab(live_server, browser_page, members, ws_project, planned):
    """Relabel, delete, undo, uncertain + comment, skip — all by keyboard; a stale tab gets a 409."""
    page = browser_page
    planned("blind")
    me = members["annotator"]
    first = Assignment.objects.get(annotator=me, message=msg(ws_project, "d1", 0))
    page.goto(f"{live_server.url}/accounts/login/?next=/p/test/queue/")
    page.fill("input[name=username]", "annotator")
    page.fill("input[name=password]", "pw-annotator")
    page.click("form button.primary")
    page.wait_for_selector("#ws[data-ready] #target-text")

    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert page.evaluate("window.getSelection().toString()") == "Maria"
    page.keyboard.press("1")  # NAME
    page.wait_for_selector("#ws-spans [data-focus]")
    page.keyboard.press("j")
    page.wait_for_selector("#ws-spans .focused")
    page.keyboard.press("e")
    page.keyboard.press("9")  # USERNAME
    page.wait_for_selector("#ws-spans .chip:text('USERNAME')")
    assert Annotation.objects.get(assignment=first).label == "USERNAME"
    page.keyboard.press("j")
    page.keyboard.press("d")
    page.wait_for_function("() => document.querySelectorAll('#ws-spans [data-focus]').length === 0")
    assert not Annotation.objects.filter(assignment=first).exists()
    page.keyboard.press("u")
    page.wait_for_selector("#ws-spans [data-focus]")
    assert Annotation.objects.get(assignment=first).label == "USERNAME"
    page.keyboard.press("m")
    page.wait_for_selector("#ws-uncertain:checked")
    page.keyboard.press("c")
    page.keyboard.type("Is this the student?")
    page.keyboard.press("Control+Enter")
    page.wait_for_function("() => document.getElementById('ws-comment').dataset.saved === 'Is this the student?'")
    first.refresh_from_db()
    assert first.uncertain and first.comment == "Is this the student?"

    # A second tab changes the item; the first tab's next action is refused with a clear message.
    other = page.context.new_page()
    other.goto(page.url)
    other.wait_for_selector("#ws[data-ready] #target-text")
    other.keyboard.press("ArrowRight")
    other.keyboard.press("Shift+2")  # OTHER_IDENTIFIER
    other.wait_for_selector("#ws-spans li:nth-child(2)")
    page.keyboard.press("Escape")
    page.keyboard.press("u")
    page.wait_for_selector("#toast:not([hidden])")
    assert "another tab" in page.inner_text("#toast")
    assert "another tab" in page.inner_text("#ws-state")
    assert Annotation.objects.filter(assignment=first).count() == 2  # nothing lost, nothing undone
    other.close()

    page.reload()
    page.wait_for_selector("#ws[data-ready] #target-text")
    page.keyboard.press("s")
    page.wait_for_url(lambda url: str(first.public_id) not in url)
    first.refresh_from_db()
    assert first.status == "skipped"
