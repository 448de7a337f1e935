"""The scale bench in CI size: at 20,000 messages with 40,000 finished assignments,
a run's worker memory does not grow with the run's size (5k against 20k messages), and no page
nor the run start reads a whole corpus table (EXPLAIN of every query they send; bench/scan_check.py).
Not timed: bench/scale_bench.py prints the figures."""

from __future__ import annotations

import sys

import pytest
from django.test import Client
from django.test.utils import CaptureQueriesContext

from tests.conftest import ROOT, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]

SMALL, BIG = 5_000, 20_000
# Requests that read a corpus table at 20k messages the first time they are asked for, and why;
# the list must stay exact (a page that starts scanning fails, and so does one that stops without
# leaving this list). After that first time they show kept figures (see the end of the test).
GOLD = "the gold fingerprint and count (decisions joined to the project's messages; cached per revision)"
KNOWN_SCANS = {
    "dashboard (admin)": f"{GOLD}; annotator statistics (median time, accept rate); messages waiting for review",
    "run detail": f"{GOLD}; spans by label (cached per finish)",
    "plan detail": "the plan's blind/aware statistics over its assignments",
    "exports / releases": GOLD,
    "adjudication queue": f"{GOLD}; messages waiting for review",
}


@pytest.fixture
def bench_modules():
    sys.path.insert(0, str(ROOT / "bench"))
    yield
    sys.path.remove(str(ROOT / "bench"))


def _run_peak(project) -> float:
    """Run the rules detector over ``project`` on the worker; its chunks' highest peak RSS."""
    from annotator.models import DetectorRun, RunChunk
    from annotator.services import runs

    run = runs.run_start(project=project, detector="rules", chunk_dialogues=20)
    runs.run_enqueue(run)
    wait_for(lambda: DetectorRun.objects.get(pk=run.pk).is_finished, timeout=300, what="the run")
    run.refresh_from_db()
    assert run.status == DetectorRun.Status.SUCCEEDED, run.error
    assert run.progress_done == run.progress_total == project.messages.count()
    peaks = list(RunChunk.objects.filter(run=run).values_list("peak_rss_mb", flat=True))
    assert len(peaks) > 1 and None not in peaks
    return max(peaks)


@pytest.mark.django_db(transaction=True)
def test_worker_memory_is_flat_and_no_request_scans_the_corpus(celery_worker, bench_modules, settings, capsys,
                                                               monkeypatch):
    from annotate_bench import add_reviewers, load
    from list_pages import load_review_state, pages
    from scan_check import query_scans, request_scans

    from annotator.models import AssignmentPlan, DetectorRun
    from annotator.services import runs
    from annotator.services.imports import corpus_import
    from annotator.services.projects import project_create
    from pipeline.synthetic import generate_messages

    settings.DEBUG = False  # the request log would hold every query of the load
    monkeypatch.setattr("annotator.admin.ESTIMATE_ABOVE", 1000)  # the admin's lists as at a million messages
    project, users = load(BIG)
    small = project_create(name="Small", slug="small")
    corpus_import(project=small, dialogues=generate_messages(SMALL, seed=7), source="small.jsonl")
    celery_worker(concurrency=1)
    small_peak, big_peak = _run_peak(small), _run_peak(project)
    with capsys.disabled():
        print(f"\nworker peak RSS: {small_peak:.0f} MB after {SMALL:,} messages, {big_peak:.0f} MB after {BIG:,} more")
    # one worker process ran both: a run four times the size may not raise its peak by more than noise
    assert big_peak <= small_peak * 1.05 + 20, (small_peak, big_peak)

    add_reviewers(project, users)
    import_run = DetectorRun.objects.filter(project=project).order_by("pk").first()
    load_review_state(project, import_run)
    with CaptureQueriesContext(__import__("django.db").db.connection) as start:
        runs.run_start(project=project, detector="rules")
    scans = {"run start": query_scans(start.captured_queries)}
    clients = {}
    plan = AssignmentPlan.objects.filter(project=project).order_by("pk").first()
    for name, who, url, headers in pages(project, plan.pk, import_run.pk):
        if who not in clients:
            clients[who] = Client()
            clients[who].force_login(users[who])
        status, found = request_scans(clients[who], url, headers)
        assert status in (200, 204), (name, status)
        if found:
            scans[name] = found
    scans = {name: found for name, found in scans.items() if found}
    with capsys.disabled():
        for name, found in scans.items():
            for scan, sql in found:
                print(f"{name}: {scan}: {sql[:200]}")
    assert sorted(set(scans) - set(KNOWN_SCANS)) == [], "these requests read a whole corpus table"
    assert sorted(set(KNOWN_SCANS) - set(scans)) == [], "these no longer scan: take them off KNOWN_SCANS"

    # A write moves the project's revision (annotators submit every few seconds). With workers, a
    # page then shows its figures' newest values while a worker computes the next: none of the
    # pages above reads the corpus again for it (annotator.selectors.figures).
    from annotator.services.audit import audit_record

    audit_record(user=users["boss"], action="test.write", project=project)
    again = {}
    for name, who, url, headers in pages(project, plan.pk, import_run.pk):
        if name in KNOWN_SCANS:
            status, found = request_scans(clients[who], url, headers)
            assert status in (200, 204), (name, status)
            if found:
                again[name] = found
    assert again == {}, "after a write these pages read the corpus in the request"
