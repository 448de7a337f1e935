"""The Content Security Policy is enforced and the workspace still works under it.

An annotator labels with the keyboard in Chromium while the server's policy is in force: no
violation may appear in the console (htmx, workspace.js and the label colours all run without
inline script or style). Then markup that got past the sanitizer (simulated by switching it off)
reaches the page, and its inline script and event handler must not run.
"""

from __future__ import annotations

import pytest

from annotator.models import Annotation, Assignment, Message, Project
from tests.annotator.helpers import msg

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _watch(page) -> tuple[list[str], list[str]]:
    """Console lines that report a CSP violation, and uncaught page errors."""
    violations, errors = [], []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return violations, errors


def _login(page, live_server):
    response = page.goto(f"{live_server.url}/accounts/login/?next=/p/test/queue/")
    page.fill("input[name=username]", "annotator")
    page.fill("input[name=password]", "pw-annotator")
    page.click("form button.primary")
    page.wait_for_selector("#ws[data-ready] #target-text")
    return response


def test_workspace_works_with_the_policy_enforced(live_server, browser_page, members, ws_project, planned):
    page = browser_page
    violations, errors = _watch(page)
    planned("aware")
    first = Assignment.objects.get(annotator=members["annotator"], message=msg(ws_project, "d1", 0))
    second = Assignment.objects.get(annotator=members["annotator"], message=msg(ws_project, "d1", 1))

    response = _login(page, live_server)
    headers = response.headers
    policy = headers["content-security-policy"]
    assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "same-origin"
    item = page.goto(page.url)  # the workspace page itself carries the policy too
    assert "default-src 'self'" in item.headers["content-security-policy"]
    page.wait_for_selector("#ws[data-ready] #target-text")

    # Label colours come from the project's stylesheet, not from style attributes.
    assert page.locator("[style]").count() == 0
    name_button = page.locator(".label-btn[data-label=NAME]")
    assert name_button.evaluate("b => getComputedStyle(b).borderLeftColor") == "rgb(252, 165, 165)"
    suggestion = page.locator("#target-text mark.suggestion")
    assert suggestion.evaluate("m => getComputedStyle(m).getPropertyValue('--c').trim()") == "#fca5a5"

    # Keyboard annotation through htmx: accept the suggestion, submit, reject on the next item.
    page.keyboard.press("a")
    page.wait_for_selector("#ws-spans [data-focus]")
    assert page.locator("#ws-spans .chip[data-label=NAME]").evaluate(
        "c => getComputedStyle(c).getPropertyValue('--c').trim()") == "#fca5a5"
    ann = Annotation.objects.get(assignment=first)
    assert (ann.origin, ann.label, ann.start, ann.end) == (Annotation.Origin.ACCEPTED, "NAME", 3, 8)
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/{second.public_id}/")
    page.wait_for_selector("#ws-suggestions li.pending")
    page.keyboard.press("r")
    page.wait_for_selector("#ws-decided li.decided")
    assert Annotation.objects.get(assignment=second).origin == Annotation.Origin.REJECTED
    page.keyboard.press("g")
    assert page.locator("#ws-guidelines").is_visible()
    page.keyboard.press("Escape")

    assert violations == [] and errors == []


def test_an_injected_inline_script_does_not_run(live_server, browser_page, members, ws_project, planned,
                                                monkeypatch):
    """Markup that escaped every server-side defence still cannot run script or set styles."""
    page = browser_page
    violations, errors = _watch(page)
    planned("blind")
    Message.objects.filter(pk=msg(ws_project, "d1", 0).pk).update(
        text="Hi <script>window.pwnedByText = 1</script> there")
    Project.objects.filter(pk=ws_project.pk).update(guidelines=(
        '<script>window.pwnedByScript = 1</script>'
        '<img id="evil-img" src="/no-such-image.png" onerror="window.pwnedByHandler = 1">'
        '<p id="evil-style" style="color: rgb(255, 0, 0)">styled</p>'
    ))
    # Simulate a sanitizer bypass: the guidelines reach the page as raw HTML.
    monkeypatch.setattr("annotator.templatetags.workspace._guidelines", lambda text: text)

    _login(page, live_server)
    page.wait_for_selector("#evil-img", state="attached")
    page.wait_for_load_state("load")
    page.wait_for_function("() => document.getElementById('evil-img').complete")
    assert page.evaluate("typeof window.pwnedByScript") == "undefined"
    assert page.evaluate("typeof window.pwnedByHandler") == "undefined"
    assert page.evaluate("typeof window.pwnedByText") == "undefined"
    assert page.locator("#evil-style").evaluate("p => getComputedStyle(p).color") != "rgb(255, 0, 0)"
    assert "<script>window.pwnedByText = 1</script>" in page.locator("#target-text").inner_text()
    blocked = " ".join(violations)
    assert "inline script" in blocked and "inline event handler" in blocked and "style" in blocked

    # A script added at run time (what a DOM-based injection would do) is refused as well.
    page.evaluate("""() => { const s = document.createElement('script');
                             s.textContent = 'window.pwnedAtRunTime = 1'; document.body.append(s); }""")
    assert page.evaluate("typeof window.pwnedAtRunTime") == "undefined"
    assert errors == []
