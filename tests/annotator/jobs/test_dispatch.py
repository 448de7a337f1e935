"""The one dispatcher: tasks queued by name; without a broker, in-process jobs run on two lanes of
one worker thread each, in order (the tagger-run import clash), so a short job never waits behind
a long one."""

from __future__ import annotations

import json
import threading
import time

import pytest
from django.db import connections

from annotator import dispatch
from annotator.celery import app
from annotator.models import DetectorRun
from annotator.services import runs

_state = {"now": 0, "peak": 0, "done": [], "closed": []}
_lock = threading.Lock()


@app.task(name="tests.dispatch.probe")
def probe(n: int) -> None:
    """Counts how many jobs run at once (a clash needs two at the same time)."""
    with _lock:
        _state["now"] += 1
        _state["peak"] = max(_state["peak"], _state["now"])
    time.sleep(0.05)
    with _lock:
        _state["now"] -= 1
        _state["done"].append(n)


@app.task(name="tests.dispatch.hold")
def hold() -> None:
    conn = connections["default"]  # this thread's own (an in-memory SQLite never really closes)
    conn.ensure_connection()
    conn.close_at = None  # as with a persistent connection
    close = conn.close

    def counted() -> None:  # and really closed: a connection left open outlives the test session
        _state["closed"].append(threading.current_thread().name)
        close()

    conn.close = counted


@pytest.fixture
def in_thread(settings):
    settings.BLINDSPOT_EAGER_IN_THREAD = True
    _state.update(now=0, peak=0, done=[], closed=[])
    yield
    dispatch.wait_idle(30)


@pytest.mark.django_db
def test_jobs_started_together_run_one_at_a_time_in_order(in_thread, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        for n in range(6):
            dispatch.enqueue("tests.dispatch.probe", n)
    dispatch.wait_idle(30)
    assert _state["done"] == list(range(6))  # every job ran, in the order queued
    assert _state["peak"] == 1  # never two at once: one thread per job once clashed on imports


@pytest.mark.django_db
def test_in_process_worker_closes_its_connection_after_each_job(in_thread, django_capture_on_commit_callbacks):
    """The worker hands its connection back even when connections would otherwise persist
    (``DB_CONN_MAX_AGE`` > 0 once leaked one per job)."""
    with django_capture_on_commit_callbacks(execute=True):
        dispatch.enqueue("tests.dispatch.hold")
    dispatch.wait_idle(30)
    assert len(_state["closed"]) == 1 and _state["closed"][0].startswith("eager-job")


@pytest.mark.django_db(transaction=True)
def test_multi_chunk_run_started_from_the_runs_page_path_succeeds_in_process(in_thread, project):
    """Several chunks queued at once without a broker (the Runs page in bin/demo) all succeed."""
    from annotator.services.imports import corpus_import
    from pipeline.formats import parse_upload

    lines = [json.dumps({"id": f"d{i:02d}", "messages": [
        {"speaker": "Tutor", "text": f"Hello student{i}, mail me at t{i}@example.org"}]}) for i in range(8)]
    corpus_import(project=project, dialogues=parse_upload("\n".join(lines).encode()), source="t.jsonl")
    run = runs.run_start(project=project, detector="rules", config={}, chunk_dialogues=2)
    assert runs.run_enqueue(run) == 4
    dispatch.wait_idle(60)
    run.refresh_from_db()
    assert run.status == DetectorRun.Status.SUCCEEDED, run.error
    assert (run.done_chunks, run.progress_done) == (4, 8)


def test_services_queue_by_name_and_never_import_a_task():
    """No service module imports annotator.tasks (tasks sit above services)."""
    import ast
    import pathlib

    for path in pathlib.Path("annotator/services").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith("annotator.tasks"), f"{path} imports {node.module}"


_gate = threading.Event()


@app.task(name="tests.dispatch.train")
def train_stand_in() -> None:
    """A long job (a tagger's training) that runs until the test lets it finish."""
    assert _gate.wait(30), "the test never released the long job"


@pytest.mark.django_db
def test_a_short_job_never_waits_behind_a_long_one(in_thread, monkeypatch, django_capture_on_commit_callbacks):
    """Without a broker a report queued during a ten-minute training runs at once, on the short
    lane, and a page asking why a job waits is told what each lane runs."""
    from annotator import task_names

    monkeypatch.setattr(task_names, "LONG", task_names.LONG | {"tests.dispatch.train"})
    _gate.clear()
    try:
        with django_capture_on_commit_callbacks(execute=True):
            dispatch.enqueue("tests.dispatch.train")
            dispatch.enqueue("tests.dispatch.train")
        deadline = time.monotonic() + 10
        while "runs dispatch train" not in dispatch.wait_reason() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert "the long lane runs dispatch train with 1 more queued" in dispatch.wait_reason()
        with django_capture_on_commit_callbacks(execute=True):
            dispatch.enqueue("tests.dispatch.probe", 7)
        deadline = time.monotonic() + 10
        while 7 not in _state["done"] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _state["done"] == [7]  # the short job ran while the long one still runs
        assert not _gate.is_set()
    finally:
        _gate.set()
    dispatch.wait_idle(30)
    assert "both lanes are free" in dispatch.wait_reason()


def test_long_jobs_and_short_jobs_take_their_own_lanes():
    from annotator import task_names as names

    assert {dispatch.lane(n) for n in names.LONG} == {"long"}
    assert {dispatch.lane(n) for n in (names.REPORTS_AGREEMENT, names.REPORTS_CIRCULARITY, names.WORKSPACE_PLAN_BUILD,
                                       names.PROJECTS_FIGURE_REFRESH, names.ADJUDICATION_GOLD_MERGE)} == {"short"}
