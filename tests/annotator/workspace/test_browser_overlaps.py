"""Overlapping marks and report charts in Chromium, under the enforced Content Security Policy.

Overlaps: j / k reach every suggestion, overlapping ones included, and each lights its own mark(s)
in the text, which are visible; an "Overlaps" link moves the focus; a accepts the focused one.
Charts: the report charts render with no CSP violation and no style attribute.
"""

from __future__ import annotations

import pytest

from annotator.models import Annotation, Assignment, Prediction
from tests.annotator.helpers import msg

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _watch(page) -> tuple[list[str], list[str]]:
    violations, errors = [], []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return violations, errors


def _login(page, live_server, who: str, next_url: str) -> None:
    page.goto(f"{live_server.url}/accounts/login/?next={next_url}")
    page.fill("input[name=username]", who)
    page.fill("input[name=password]", f"pw-{who}")
    page.click("form button.primary")


def test_keyboard_reaches_every_overlapping_suggestion(live_server, browser_page, members, ws_project, planned, run):
    page = browser_page
    violations, errors = _watch(page)
    planned("aware")
    item = Assignment.objects.get(annotator=members["annotator"], message=msg(ws_project, "d1", 0))
    # "Hi Maria! Ready…": NAME 3–8 from the run, one suggestion inside it and one crossing its end
    inner = Prediction.objects.create(run=run, message=item.message, start=3, end=5, label="USERNAME", score=.3)
    cross = Prediction.objects.create(run=run, message=item.message, start=6, end=16, label="ID_NUMBER", score=.2)
    name = Prediction.objects.get(run=run, message=item.message, start=3, end=8)

    _login(page, live_server, "annotator", "/p/test/queue/")
    page.wait_for_selector("#ws[data-ready] #target-text")
    assert page.locator("[style]").count() == 0
    seen = []
    for _ in range(3):
        page.keyboard.press("j")
        focused = page.locator("#ws-suggestions li.focused").get_attribute("data-id")
        seen.append(int(focused))
        marks = page.locator(f"#target-text mark[data-suggestion='{focused}']")
        assert marks.count() >= 1
        assert marks.evaluate_all("ms => ms.every(m => m.classList.contains('focused'))")
        assert marks.evaluate_all("ms => ms.every(m => m.getBoundingClientRect().width > 0)")
    # the page opened focused on the first pending one; three j's went round every suggestion
    assert set(seen) == {name.pk, inner.pk, cross.pk}
    assert page.locator(f"#target-text mark[data-suggestion='{cross.pk}']").count() == 2  # split where it crosses

    # the NAME entry's "Overlaps" link moves the focus to the crossing suggestion; a accepts it
    page.locator(f"#ws-s{name.pk} [data-focus-to='s{cross.pk}']").click()
    assert page.locator("#ws-suggestions li.focused").get_attribute("data-id") == str(cross.pk)
    page.keyboard.press("a")
    page.wait_for_selector(f"#ws-s{cross.pk}.decided")
    ann = Annotation.objects.get(assignment=item, prediction=cross)
    assert (ann.origin, ann.start, ann.end) == (Annotation.Origin.ACCEPTED, 6, 16)
    assert violations == [] and errors == []


def test_report_charts_render_under_the_policy(live_server, browser_page, members, computed):
    page = browser_page
    violations, errors = _watch(page)
    _login(page, live_server, "adjudicator", "/p/test/reports/agreement/")
    page.wait_for_selector("#chart-kappa-label-title", state="attached")
    for url, chart in (("/p/test/reports/agreement/", "#kappa-by-label svg"),
                       ("/p/test/reports/detectors/", "#detector-pr svg")):
        page.goto(f"{live_server.url}{url}")
        svg = page.locator(chart)
        box = svg.bounding_box()
        assert box and box["width"] > 100 and box["height"] > 40
        bars = svg.locator("rect.bar")
        assert bars.count() >= 1
        # the stylesheet fills the bars (classes, not style attributes)
        assert bars.first.evaluate("r => getComputedStyle(r).fill") not in ("", "none", "rgb(0, 0, 0)")
        assert page.locator("[style]").count() == 0
    assert violations == [] and errors == []
