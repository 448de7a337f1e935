"""Keystrokes per item for the common cases, counted in Chromium: a message with no PII is one key
(n), two right suggestions are three (a, a, Enter), one wrong suggestion at most two (r, Enter), one
missing span is a selection, a label key and Enter; after Ctrl+Enter saves a note, Enter submits."""

from __future__ import annotations

import pytest

from annotator.models import Annotation, Assignment, DetectorRun, Dialogue, Message, Prediction

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

Origin = Annotation.Origin
# case -> (message, the words the model suggests as NAME)
CASES = {
    "no PII": ("see you on the next problem", ()),
    "two right suggestions": ("ask Maria and Tomas", ("Maria", "Tomas")),
    "one wrong suggestion": ("Great work on that", ("Great",)),
    "one missing span": ("Lisbon is sunny", ()),
    "a note, then submit": ("fine thanks", ()),
}


@pytest.fixture
def queue(project, members):
    d = Dialogue.objects.create(project=project, external_id="d-strokes")
    run = DetectorRun.objects.create(project=project, detector="rules", model_version="m", detector_version="1",
                                     config={}, status=DetectorRun.Status.SUCCEEDED)
    project.suggestion_runs.add(run)
    out = {}
    for i, (case, (text, names)) in enumerate(CASES.items()):
        m = Message.objects.create(dialogue=d, project=project, position=i, speaker="Tutor", text=text)
        for w in names:
            Prediction.objects.create(run=run, message=m, start=text.index(w), end=text.index(w) + len(w),
                                      label="NAME", score=0.9)
        out[case] = Assignment.objects.create(project=project, annotator=members["annotator"], message=m,
                                              condition="aware", order=i)
    return out


class Counter:
    def __init__(self, page):
        self.page, self.n = page, 0

    def press(self, key: str) -> None:
        self.n += 1
        self.page.keyboard.press(key)

    def take(self) -> int:
        n, self.n = self.n, 0
        return n


def test_keystrokes_per_item(live_server, browser_page, members, project, queue):
    page, keys, counts = browser_page, Counter(browser_page), {}
    page.goto(f"{live_server.url}/accounts/login/?next=/p/test/queue/")
    page.fill("input[name=username]", "annotator")
    page.fill("input[name=password]", "pw-annotator")
    page.click("form button.primary")

    def item(case):
        a = queue[case]
        page.wait_for_url(f"**/{a.public_id}/")
        page.wait_for_selector("#ws[data-ready] #target-text")
        return a

    def done(case):
        a = queue[case]
        page.wait_for_url(lambda url: str(a.public_id) not in url)
        a.refresh_from_db()
        assert a.status == "done", case
        counts[case] = keys.take()
        return a

    item("no PII")
    keys.press("n")
    assert done("no PII").no_pii

    item("two right suggestions")
    for key in ("a", "a", "Enter"):
        keys.press(key)
    a = done("two right suggestions")
    assert sorted(a.annotations.values_list("origin", flat=True)) == [Origin.ACCEPTED, Origin.ACCEPTED]

    item("one wrong suggestion")
    keys.press("r")
    keys.press("Enter")
    a = done("one wrong suggestion")
    assert a.no_pii and list(a.annotations.values_list("origin", flat=True)) == [Origin.REJECTED]

    item("one missing span")
    keys.press("ArrowRight")  # the selection: the first word
    keys.press("3")  # LOCATION
    keys.press("Enter")
    a = done("one missing span")
    assert list(a.annotations.values_list("start", "end", "label")) == [(0, 6, "LOCATION")]

    assert counts == {"no PII": 1, "two right suggestions": 3, "one wrong suggestion": 2, "one missing span": 3}

    # Ctrl+Enter saves the note and gives the keys back to the page: Enter submits, no Esc first.
    item("a note, then submit")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("1")
    page.wait_for_selector("#ws-spans [data-focus]")
    page.keyboard.press("c")
    page.keyboard.type("is this a name?")
    page.keyboard.press("Control+Enter")
    page.keyboard.press("Enter")
    a = done("a note, then submit")
    assert a.comment == "is this a name?" and a.annotations.count() == 1
