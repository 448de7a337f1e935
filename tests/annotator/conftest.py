"""Fixtures shared by the app's areas: a detector run with tell-tale metadata and assignment plans
(workspace, security, projects), a small labelled study (adjudication, reports, runs, exports), the
computed reports of that study, a Chromium page for the browser tests, and an S3-compatible
store (moto's server) for the storage and model-store tests.

The study: the small corpus is imported with its spans as a detector run (the "model", chosen as
the project's suggestion run). Two annotators then label five messages so that every kind of
outcome occurs once:

=========  ===========================  ============================  =========================
message    annotator                    annotator2                    outcome
=========  ===========================  ============================  =========================
d1#0       NAME "Maria" (aware)         NAME "Maria" (blind)          unanimous gold
d1#1       nothing                      nothing                       unanimous, empty gold
d1#2       EMAIL (blind)                nothing (aware)               queue: possible leak
d1#3       NAME "Alex"                  LOCATION "Alex"               queue: label
d2#1       NAME "Sam"                   NAME "Sa"                     queue: boundary
d2#0       done                         still to do                   not ready
=========  ===========================  ============================  =========================

Plain helpers (``msg``, ``label``, ``post_action`` and the run's secret strings) are in
``tests/annotator/helpers.py``.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from annotator import model_store
from annotator.models import DetectorRun, Prediction
from annotator.services import runs as run_services
from annotator.settings import object_storages
from tests.annotator.helpers import RUN_DETECTOR, RUN_MODEL, RUN_PRESET, SCORES, Status, label, msg
from tests.conftest import need

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--no-first-run"]


# ---- a run and assignment plans -------------------------------------------------------------

@pytest.fixture
def run(corpus):
    """A finished run on the small corpus: two true hits, one false positive on a fraction."""
    r = DetectorRun.objects.create(
        project=corpus, detector=RUN_DETECTOR, model_version=RUN_MODEL, detector_version="9.9",
        config={"preset": RUN_PRESET}, status=DetectorRun.Status.SUCCEEDED,
    )
    Prediction.objects.create(run=r, message=msg(corpus, "d1", 0), start=3, end=8, label="NAME", score=SCORES[0])
    Prediction.objects.create(run=r, message=msg(corpus, "d1", 1), start=8, end=11, label="ID_NUMBER", score=SCORES[2])
    Prediction.objects.create(run=r, message=msg(corpus, "d1", 2), start=12, end=35, label="EMAIL", score=SCORES[1])
    Prediction.objects.create(run=r, message=msg(corpus, "d2", 1), start=12, end=15, label="NAME", score=SCORES[3])
    corpus.suggestion_runs.add(r)
    return r


@pytest.fixture
def ws_project(corpus, members, run):
    return corpus


@pytest.fixture
def planned(ws_project, members):
    """Every message to both annotators (k = 2), in the project's visibility mode; returns a function."""
    from annotator.services.assignments import plan_create

    def make(mode: str = "blind", **kwargs):
        ws_project.visibility_mode = mode
        ws_project.save(update_fields=["visibility_mode"])
        params = {"strategy": "dialogues", "n_dialogues": 2, "k": 2, "seed": 7,
                  "annotators": [members["annotator"], members["annotator2"]], **kwargs}
        return plan_create(project=ws_project, by=members["admin"], **params)

    return make


# ---- the labelled study ---------------------------------------------------------------------

@pytest.fixture
def model_project(project, members, corpus_bytes):
    from annotator.services.imports import corpus_import
    from pipeline.formats import parse_upload

    corpus_import(project=project, dialogues=parse_upload(corpus_bytes, name="small.jsonl"),
                  source="small.jsonl", spans_as="run")
    run = DetectorRun.objects.get(project=project)
    project.suggestion_runs.add(run)
    return project


@pytest.fixture
def study(model_project, members):
    p = model_project
    ann, ann2 = members["annotator"], members["annotator2"]
    label(ann, msg(p, "d1", 0), [(3, 8, "NAME")], condition="aware")
    label(ann2, msg(p, "d1", 0), [(3, 8, "NAME")])
    label(ann, msg(p, "d1", 1), [])
    label(ann2, msg(p, "d1", 1), [], condition="aware")
    label(ann, msg(p, "d1", 2), [(12, 35, "EMAIL")])
    label(ann2, msg(p, "d1", 2), [], condition="aware")
    label(ann, msg(p, "d1", 3), [(0, 4, "NAME")])
    label(ann2, msg(p, "d1", 3), [(0, 4, "LOCATION")])
    label(ann, msg(p, "d2", 1), [(12, 15, "NAME")])
    label(ann2, msg(p, "d2", 1), [(12, 14, "NAME")])
    label(ann, msg(p, "d2", 0), [])
    label(ann2, msg(p, "d2", 0), [], status=Status.PENDING)
    return p


@pytest.fixture
def computed(study, members, django_capture_on_commit_callbacks):
    """Gold merged and one item adjudicated; agreement and circularity computed (eagerly)."""
    from annotator.models import AdjudicationItem
    from annotator.services.adjudication import adjudication_submit, gold_merge_ready
    from annotator.services.reports import agreement_request, circularity_request

    gold_merge_ready(project=study)
    item = AdjudicationItem.objects.filter(project=study).order_by("-risk").first()
    adjudication_submit(item=item, user=members["adjudicator"], spans=[(12, 35, "EMAIL")], version=0)
    run = DetectorRun.objects.get(project=study)
    with django_capture_on_commit_callbacks(execute=True):
        agreement_request(project=study, user=members["adjudicator"], n_boot=50)
        job = circularity_request(project=study, user=members["adjudicator"], run=run, n_boot=50)
    return {"project": study, "run": run, "circularity": job}


# ---- the browser ----------------------------------------------------------------------------

@pytest.fixture
def browser_page():
    if not Path(CHROMIUM).exists():
        reason = f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason + " — CI must run the browser tests, not skip them")
        pytest.skip(reason)
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API runs an event loop
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        page = context.new_page()
        page.set_default_timeout(15000)
        yield page
        for p in context.pages:  # let the pages send their last active-time report while the server runs
            p.goto("about:blank")
        browser.close()
        # The ORM calls made while Playwright runs use a connection of their own (another
        # context); close it here, or PostgreSQL refuses to drop the test database.
        from django.db import connections

        connections.close_all()


# --- an S3-compatible store -----------------------------------------------------------------


@pytest.fixture(scope="module")
def s3_server():
    try:
        from moto.server import ThreadedMotoServer
    except ImportError:
        ThreadedMotoServer = None  # noqa: N806
    need(ThreadedMotoServer is not None, "needs moto[server] (the dev extra) for the S3 storage tests")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3(s3_server, settings, tmp_path):
    """A fresh bucket on the moto server, with both storage aliases pointed at it (prefix ``pfx``)."""
    import boto3

    bucket = f"blindspot-{uuid.uuid4().hex[:12]}"
    client = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    client.create_bucket(Bucket=bucket)
    url = f"s3://{bucket}/pfx?endpoint_url={s3_server}&region_name=us-east-1&addressing_style=path"
    settings.STORAGES = {**settings.STORAGES, **object_storages(url, access_key="testing", secret_key="testing")}
    settings.BLINDSPOT_STAGING_DIR = tmp_path / "staging"
    model_store._verified.clear()
    run_services._cached_detector.cache_clear()
    client.bucket, client.url = bucket, url
    yield client
    model_store._verified.clear()
    run_services._cached_detector.cache_clear()
