"""The runs page in Chromium: the flash that says a run was queued goes once the page shows the
run finished, and a run that found nothing says "0 spans"."""

from __future__ import annotations

import json

import pytest

from annotator.models import DetectorRun

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_queued_flash_goes_when_the_run_has_finished(live_server, browser_page, members, project):
    from annotator.services.imports import corpus_import
    from pipeline.formats import parse_upload

    line = json.dumps({"id": "quiet", "messages": [{"speaker": "Tutor", "text": "what is 3 + 4 ?"}]})
    corpus_import(project=project, dialogues=parse_upload(line.encode()), source="q.jsonl")
    page = browser_page
    page.goto(f"{live_server.url}/accounts/login/?next=/p/test/runs/")
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password]", "pw-admin")
    page.click("form button.primary")
    page.select_option("select[name=preset]", "rules")
    page.click("form.card button.primary")
    page.wait_for_url("**/runs/*/")
    page.wait_for_selector("#run-progress[data-job-finished]")
    assert DetectorRun.objects.get().status == DetectorRun.Status.SUCCEEDED
    page.wait_for_function("() => !document.querySelector('.flash li.job')")
    assert "queued" not in page.inner_text("main")
    assert page.inner_text("#run-no-spans").startswith("0 spans")
