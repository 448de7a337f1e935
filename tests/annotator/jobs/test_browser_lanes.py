"""The embedded default in Chromium: without a broker, an admin starts a real tagger training from
the Tagger page, recomputes the agreement report while it trains, and sees the report before the
training ends, because the report takes the short lane and the training the long one.

The training is real (a tiny transformer on generated dialogues) but is held, once it has trained
its first batch, until the test lets it go: the report then certainly runs while the training is
running, whatever the machine's speed. Were the two lanes one, the report would queue behind the
held training and never show."""

from __future__ import annotations

import threading

import pytest

from annotator import dispatch
from annotator.models import BackgroundJob
from annotator.services import tagger
from tests.conftest import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

pytest.importorskip("torch")

TINY = {"epochs": 1, "num_layers": 1, "check_precision": False, "min_dev_score": 0.0}


@pytest.fixture
def held_training(settings, monkeypatch):
    """The Tagger page's training, tiny and without its student, held after its first batch:
    ``started`` is set once a batch really trained, and the training goes on when ``release`` is."""
    settings.BLINDSPOT_EAGER_IN_THREAD = True  # the embedded default: jobs on the in-process lanes
    settings.BLINDSPOT_TAGGER_ONNX = False
    started, release = threading.Event(), threading.Event()
    real = tagger.tagger_train

    def held(**kw):
        report = kw["progress"]

        def progress(done: int, total: int, message: str = "") -> None:
            report(done, total, message)
            if done and not started.is_set():
                started.set()
                assert release.wait(300), "the test never let the training go on"

        return real(**{**kw, "progress": progress, "options": TINY, "student": False})

    monkeypatch.setattr(tagger, "tagger_train", held)
    yield started, release
    release.set()
    dispatch.wait_idle(300)  # no job outlives the test's database


def test_a_report_recomputed_during_a_real_training_finishes_while_the_training_runs(
        live_server, browser_page, study, members, held_training):
    started, release = held_training
    page = browser_page
    page.goto(f"{live_server.url}/accounts/login/?next=/p/test/tagger/")
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password]", "pw-admin")
    page.click("form button.primary")
    page.uncheck("input[name=use_gold]")
    page.fill("input[name=synthetic]", "4")
    page.click("form[action$='/tagger/train/'] button")
    page.wait_for_url("**/jobs/*/")
    training = BackgroundJob.objects.get(kind=BackgroundJob.Kind.TRAIN)
    wait_for(lambda: started.is_set() or BackgroundJob.objects.get(pk=training.pk).is_finished, timeout=180,
             what=lambda: f"the training's first batch; {dispatch.wait_reason()}")
    training.refresh_from_db()
    assert started.is_set() and training.status == "running", training.error

    page.goto(f"{live_server.url}/p/test/reports/agreement/")
    page.fill("input[name=n_boot]", "10")
    page.click("#report-status button.primary")
    page.wait_for_selector("#per-label", timeout=60_000)  # the page reloads with the result
    report = BackgroundJob.objects.get(kind=BackgroundJob.Kind.AGREEMENT)
    training.refresh_from_db()
    assert report.status == "succeeded" and report.finished_at is not None
    assert training.status == "running" and training.finished_at is None  # still held on the long lane

    release.set()
    page.goto(f"{live_server.url}/p/test/jobs/{training.pk}/")
    page.wait_for_selector("#job:has-text('Trained tagger version')", timeout=300_000)
    training.refresh_from_db()
    assert training.status == "succeeded", training.error
    assert training.finished_at > report.finished_at
