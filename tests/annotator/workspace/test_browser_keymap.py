"""Every key of the workspace keymap, pressed in Chromium, with its effect checked.

Each label key labels a selected word (and the caret goes on after each span); ``o`` reopens
with a word selected instead of labelling it; ``c`` opens the comment without creating a span;
rejecting the last suggestion is a decision. The test fails if the keymap gains a key this test
never presses. The help overlay's screenshot goes to the ``screenshots_dir`` fixture
(``bin/screenshots`` refreshes docs/screenshots/keymap.png).
"""

from __future__ import annotations

import pytest

from annotator.models import (
    Annotation,
    Assignment,
    AuditEvent,
    DetectorRun,
    Dialogue,
    Message,
    Prediction,
)
from annotator.selectors.keymap import workspace_keymap

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

Origin = Annotation.Origin
WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima",
         "mike", "november")
TEXT = " ".join(WORDS)
PLAYWRIGHT = {"Ctrl+z": "Control+z"}  # key ids whose Playwright name differs


def start(word: str) -> int:
    return TEXT.index(word)


@pytest.fixture
def items(project, members):
    """An aware item (suggestions on "mike" and "november") and two blind ones after it."""
    d = Dialogue.objects.create(project=project, external_id="d-keys")
    m0 = Message.objects.create(dialogue=d, project=project, position=0, speaker="Tutor", text=TEXT)
    m1 = Message.objects.create(dialogue=d, project=project, position=1, speaker="Student", text="see you soon")
    m2 = Message.objects.create(dialogue=d, project=project, position=2, speaker="Tutor", text="bye for now")
    run = DetectorRun.objects.create(project=project, detector="rules", model_version="m", detector_version="1",
                                     config={}, status=DetectorRun.Status.SUCCEEDED)
    for word in ("mike", "november"):
        Prediction.objects.create(run=run, message=m0, start=start(word), end=start(word) + len(word),
                                  label="NAME", score=0.9)
    project.suggestion_runs.add(run)
    me = members["annotator"]
    return (Assignment.objects.create(project=project, annotator=me, message=m0, condition="aware", order=0),
            Assignment.objects.create(project=project, annotator=me, message=m1, condition="blind", order=1),
            Assignment.objects.create(project=project, annotator=me, message=m2, condition="blind", order=2))


class Keys:
    """Presses keys by their keymap id and remembers which were pressed."""

    def __init__(self, page):
        self.page, self.pressed = page, set()

    def __call__(self, key_id: str) -> None:
        self.pressed.add(key_id)
        self.page.keyboard.press(PLAYWRIGHT.get(key_id, key_id))


def selected(page) -> str:
    """The selected text of the message, by the page's offsets (a span's label tag is not text)."""
    off = page.evaluate("window.blindspotOffsets.selection(document.getElementById('target-text'))")
    return TEXT[off["start"]:off["end"]] if off else ""


def focused(page) -> str | None:
    return page.evaluate("(document.querySelector('#item .ws-entry.focused') || {dataset: {}}).dataset.focus || null")


def spans_shown(page, n: int) -> None:
    page.wait_for_function(f"() => document.querySelectorAll('#ws-spans [data-focus]').length === {n}")
    page.wait_for_selector("#ws-state[data-state='saved']")


def test_every_shortcut_of_the_keymap(live_server, browser_page, members, project, items, screenshots_dir):
    page, (a, b, c) = browser_page, items
    press = Keys(page)
    keymap = workspace_keymap(project.taxonomy, aware=True)
    page.goto(f"{live_server.url}/accounts/login/?next=/p/test/item/{a.public_id}/")
    page.fill("input[name=username]", "annotator")
    page.fill("input[name=password]", "pw-annotator")
    page.click("form button.primary")
    page.wait_for_selector("#ws[data-ready] #target-text")

    # ? opens the help, made from the same keymap; g the guidelines; Esc closes each.
    press("?")
    help_text = page.inner_text("#ws-help")
    for cmd in keymap.commands:
        assert cmd.help in help_text, cmd.action
    for lk in keymap.labels:
        assert lk.key in help_text and lk.label in help_text
    page.locator("#ws-help").screenshot(path=str(screenshots_dir / "keymap.png"))
    press("Escape")
    assert not page.locator("#ws-help").is_visible()
    press("g")
    assert page.locator("#ws-guidelines").is_visible()
    press("Escape")
    assert not page.locator("#ws-guidelines").is_visible()

    # Every label key labels the selected word; the caret goes on after each span.
    for n, lk in enumerate(keymap.labels, start=1):
        press("ArrowRight")
        assert selected(page) == WORDS[n - 1], lk.key
        press(lk.key)
        spans_shown(page, n)
        ann = Annotation.objects.get(assignment=a, start=start(WORDS[n - 1]))
        assert ann.label == lk.label, lk.key
    last = len(keymap.labels)
    press("ArrowLeft")  # from the caret after the last span: the word before it
    assert selected(page) == WORDS[last - 2]
    page.keyboard.press("Shift+ArrowRight")  # the same command, extending the selection
    assert selected(page) == f"{WORDS[last - 2]} {WORDS[last - 1]}"
    press("Escape")
    assert selected(page) == ""

    # j / ↓ and k / ↑ walk the suggestions and spans; Esc clears the focus.
    order = page.eval_on_selector_all("#item [data-focus]", "els => els.map(e => e.dataset.focus)")
    first = focused(page)
    i = order.index(first)
    press("j")
    assert focused(page) == order[i + 1]
    press("ArrowDown")
    assert focused(page) == order[i + 2]
    press("k")
    assert focused(page) == order[i + 1]
    press("ArrowUp")
    assert focused(page) == first
    press("Escape")
    assert focused(page) is None

    # a accepts the first undecided suggestion and focuses the next, which r rejects.
    press("a")
    spans_shown(page, last + 1)
    assert Annotation.objects.get(assignment=a, start=start("mike")).origin == Origin.ACCEPTED
    assert focused(page) == page.get_attribute("#ws-suggestions li.pending", "data-focus")
    press("r")
    page.wait_for_function("() => document.querySelectorAll('#ws-decided li.decided').length === 2")
    assert Annotation.objects.get(assignment=a, start=start("november")).origin == Origin.REJECTED
    a.refresh_from_db()
    assert not a.no_pii  # the item has spans: rejecting the last suggestion is not "no PII" here

    # e then a label key relabels the focused span; d / Delete / Backspace delete it, u / Ctrl+z undo.
    alpha = Annotation.objects.get(assignment=a, start=0)
    page.click(f"#ws-a{alpha.pk} .chip")
    press("e")
    assert "label key" in page.inner_text("#ws-mode")
    press("2")
    page.wait_for_selector(f"#ws-a{alpha.pk} .chip:text('SCHOOL')")
    assert Annotation.objects.get(pk=alpha.pk).label == "SCHOOL"
    for delete, undo in (("d", "u"), ("Delete", "Ctrl+z"), ("Backspace", "u")):
        page.click(f"#ws-a{alpha.pk} .chip")
        press(delete)
        spans_shown(page, last)
        assert not Annotation.objects.filter(pk=alpha.pk).exists(), delete
        press(undo)
        spans_shown(page, last + 1)
        assert Annotation.objects.filter(pk=alpha.pk).exists(), undo

    # x keeps the exact characters of the next span (november, its suggestion rejected).
    page.evaluate("([s, e]) => window.blindspotOffsets.select(document.getElementById('target-text'), s, e)",
                  [start("november") + 2, start("november") + 6])
    press("x")
    assert "Exact" in page.inner_text("#ws-mode")
    press("7")
    spans_shown(page, last + 2)
    exact = Annotation.objects.get(assignment=a, origin=Origin.ADDED, start=start("november") + 2)
    assert (exact.end, exact.label) == (start("november") + 6, "PHONE")

    # c opens the comment (no span, no label); Ctrl+Enter saves it. m marks the item uncertain.
    press("c")
    assert page.evaluate("document.activeElement.id") == "ws-comment"
    page.keyboard.type("check the call signs")
    page.keyboard.press("Control+Enter")
    page.wait_for_function("() => document.getElementById('ws-comment').dataset.saved === 'check the call signs'")
    assert Annotation.objects.filter(assignment=a).exclude(origin=Origin.REJECTED).count() == last + 2
    page.keyboard.press("Escape")
    press("m")  # the box is ticked at once; the item is saved when the state says so
    page.wait_for_selector("#ws-uncertain:checked")
    page.wait_for_selector("#ws-state[data-state='saved']")
    a.refresh_from_db()
    assert a.uncertain and a.comment == "check the call signs"

    # Enter submits and opens the next item; s skips it; on the next, n marks no PII and submits.
    press("Enter")
    page.wait_for_url(f"**/{b.public_id}/")
    page.wait_for_selector("#ws[data-ready] #target-text")
    a.refresh_from_db()
    assert a.status == "done"
    press("s")
    page.wait_for_url(f"**/{c.public_id}/")
    page.wait_for_selector("#ws[data-ready] #target-text")
    b.refresh_from_db()
    assert b.status == "skipped"
    press("n")
    page.wait_for_url(lambda url: str(c.public_id) not in url)
    c.refresh_from_db()
    assert c.no_pii and c.status == "done"

    # o reopens the submitted item even with a word selected: it is a command, never a label.
    page.goto(f"{live_server.url}/p/test/item/{a.public_id}/")
    page.wait_for_selector("#ws[data-ready] #target-text")
    press("ArrowRight")
    assert selected(page) == "alpha"
    before = Annotation.objects.filter(assignment=a).count()
    press("o")
    page.wait_for_selector("#item[data-status='in_progress']")
    assert AuditEvent.objects.filter(action="assignment.reopen").count() == 1
    assert Annotation.objects.filter(assignment=a).count() == before

    every = {k for c in keymap.commands for k in c.keys} | {lk.key for lk in keymap.labels}
    assert every - press.pressed == set(), "keys of the keymap this test never pressed"


def test_rejecting_the_only_suggestion_lets_enter_submit(live_server, browser_page, members, project, items):
    """The reported case: the only suggestion rejected, Enter submits with no n in between."""
    page, (a, b, _) = browser_page, items
    Prediction.objects.filter(message=a.message, start=start("november")).delete()
    page.goto(f"{live_server.url}/accounts/login/?next=/p/test/item/{a.public_id}/")
    page.fill("input[name=username]", "annotator")
    page.fill("input[name=password]", "pw-annotator")
    page.click("form button.primary")
    page.wait_for_selector("#ws[data-ready] #target-text")
    page.keyboard.press("r")
    page.wait_for_selector(".ws-nopii")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/{b.public_id}/")
    a.refresh_from_db()
    assert a.status == "done" and a.no_pii
