"""Adjudication on a laptop screen (1280×720), measured in Chromium: the decision form's actions
are in view without scrolling the page, and the message that refuses a save does not cover them."""

from __future__ import annotations

import pytest

from annotator.services.adjudication import gold_merge_ready
from tests.annotator.helpers import LAPTOP, in_view

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]




def overlap(a: dict, b: dict) -> bool:
    return (a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
            and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"])


def test_the_adjudication_form_fits_a_laptop_screen(live_server, browser_page, members, study):
    page = browser_page
    page.set_viewport_size(LAPTOP)
    gold_merge_ready(project=study)
    page.goto(f"{live_server.url}/accounts/login/?next=/p/test/adjudication/next/")
    page.fill("input[name=username]", "adjudicator")
    page.fill("input[name=password]", "pw-adjudicator")
    page.click("form button.primary")
    page.wait_for_selector("#adj-form[data-ready]")

    actions = {name: in_view(page, sel) for name, sel in {
        "save": "#adj-form button.primary", "queue": "#adj-form a.button", "confirm": "#adj-confirm-drop",
        "notes": "#adj-form textarea[name=notes]", "reply": "#adj-reply", "candidate": "#adj-candidates input",
        "target": "#adj-target", "help": "[data-open=adj-help]"}.items()}
    assert page.evaluate("document.scrollingElement.scrollHeight") <= LAPTOP["height"]

    # Enter with a marked address left out is refused; the message leaves the form usable.
    page.keyboard.press("Enter")
    page.wait_for_selector("#toast:not([hidden])")
    toast = page.locator("#toast").bounding_box()
    assert not overlap(toast, page.locator("#adj-form").bounding_box()), toast
    for name, box in actions.items():
        assert not overlap(toast, box), name
