"""LLM runs against the fake endpoint replaying real replies: usage and problems summed over the
run's chunks, the run failed past its failed-message threshold with the messages listed on its
page, finished dialogues kept when a chunk fails and not asked again when it is retried, and the
run's request budget."""

import json
from pathlib import Path

import pytest

from annotator.models import DetectorRun, Prediction, RunChunk
from annotator.services import runs
from tests.fake_openai import FakeOpenAI, error, ok, recorded, replay, target_text

# the fixture's hand-made shapes, one each (the replies recorded from a real server are replayed in
# tests/pipeline/test_llm.py)
REPLIES = [row for row in recorded(Path(__file__).resolve().parents[2] / "fixtures" / "llm_replies.jsonl")
           if not row["source"].startswith("recorded")]
FAST = {"max_retries": 0, "backoff_base_s": 0.01, "jitter": 0.0}


def _replies_corpus(project, per_dialogue=2):
    from annotator.services.imports import corpus_import
    from pipeline.formats import parse_upload

    texts = [row["target"] for row in REPLIES]
    lines = [json.dumps({"id": f"d{n:02d}", "messages": [
        {"speaker": "Tutor", "text": t} for t in texts[start:start + per_dialogue]]})
        for n, start in enumerate(range(0, len(texts), per_dialogue))]
    corpus_import(project=project, dialogues=parse_upload("\n".join(lines).encode()), source="t.jsonl")


@pytest.fixture
def endpoint(settings):
    """The deployment's endpoint pointed at a fake server; the test gives its handler."""
    with FakeOpenAI() as server:
        settings.OPENAI_BASE_URL = server.base_url
        settings.BLINDSPOT_LLM_MODEL = "fake-model"
        settings.OPENAI_API_KEY = ""
        yield server


def _run(project, config, capture, *, chunk_dialogues=3):
    from annotator.celery import app

    app.conf.task_eager_propagates = False
    with capture(execute=True):
        run = runs.run_start(project=project, detector="llm", config={**FAST, **config},
                             chunk_dialogues=chunk_dialogues)
        runs.run_enqueue(run)
    run.refresh_from_db()
    return run


@pytest.mark.django_db
def test_real_replies_sum_usage_over_chunks_and_fail_past_the_threshold(project, endpoint, client, members,
                                                                      django_capture_on_commit_callbacks):
    _replies_corpus(project)
    endpoint.handler = replay(REPLIES)
    run = _run(project, {}, django_capture_on_commit_callbacks)
    assert run.total_chunks == 3 and run.done_chunks == 3  # every chunk finished ...
    assert run.status == DetectorRun.Status.FAILED  # ... and the run says what went wrong
    assert "2 of 14 messages (14.3%) got no usable answer" in run.error
    assert run.usage["messages"] == 14 and run.usage["requests"] == 18 and run.usage["reasks"] == 4
    assert (run.usage["truncated"], run.usage["placeholders"], run.usage["unknown_labels"]) == (3, 2, 1)
    assert {p["kind"] for p in run.usage["failed"]} == {"placeholder", "truncated"}
    assert Prediction.objects.filter(run=run, label="NAME").count() == 3  # Sam, Jordan, Rivera

    client.force_login(members["admin"])
    page = client.get(f"/p/{project.slug}/runs/{run.pk}/").content.decode()
    assert "Messages without a usable answer" in page
    assert "placeholder" in page and "the reply reached max_tokens" in page


@pytest.mark.django_db
def test_a_run_within_its_threshold_succeeds(project, endpoint, django_capture_on_commit_callbacks):
    _replies_corpus(project)
    endpoint.handler = replay(REPLIES)
    run = _run(project, {"max_failed_share": 0.2}, django_capture_on_commit_callbacks)
    assert run.status == DetectorRun.Status.SUCCEEDED, run.error
    assert run.usage["failed_messages"] == 2


@pytest.mark.django_db
def test_a_failed_chunk_keeps_its_finished_dialogues_and_its_retry_resumes_after_them(
        project, endpoint, monkeypatch, django_capture_on_commit_callbacks):
    monkeypatch.setattr(runs, "PROGRESS_SECONDS", 0)  # write after every dialogue
    _replies_corpus(project)
    last = REPLIES[5]["target"]  # the third dialogue's second message, in the first chunk
    endpoint.handler = lambda r: error(500, "gone") if target_text(r) == last else ok({"pii": []})
    run = _run(project, {"concurrency": 1}, django_capture_on_commit_callbacks)
    assert run.status == DetectorRun.Status.FAILED and "gone" in run.error
    first = RunChunk.objects.get(run=run, index=0)
    assert first.status == RunChunk.Status.FAILED and first.messages_done == 4  # two dialogues written
    assert run.usage["requests"] >= 5  # the failed chunk's requests are counted too

    asked = len(endpoint.requests)
    endpoint.handler = lambda r: ok({"pii": []})
    with django_capture_on_commit_callbacks(execute=True):
        runs.run_resume(run=run)
    run.refresh_from_db()
    assert run.status == DetectorRun.Status.SUCCEEDED, run.error
    again = [target_text(r) for r in endpoint.requests[asked:]]
    assert REPLIES[0]["target"] not in again  # the written dialogues are not asked again
    assert len(again) == 2 + sum(c.message_count for c in run.chunks.filter(index__gt=0))
    assert run.progress_done == 14


@pytest.mark.django_db
def test_the_request_budget_stops_a_run_clearly(project, endpoint, django_capture_on_commit_callbacks):
    _replies_corpus(project)
    endpoint.handler = lambda r: ok({"pii": []})
    run = _run(project, {"max_requests": 6, "concurrency": 1}, django_capture_on_commit_callbacks)
    assert run.status == DetectorRun.Status.FAILED
    assert "max_requests" in run.error and "spent" in run.error
    assert len(endpoint.requests) == 6
