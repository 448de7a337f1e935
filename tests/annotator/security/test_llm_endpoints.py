"""The deployment's LLM key goes only to the deployment's endpoints.

The endpoint of an ``llm`` run is the deployment's (``OPENAI_BASE_URL`` with ``OPENAI_API_KEY``)
or one named in ``BLINDSPOT_LLM_ENDPOINTS`` (each with its own key); a run config may name one,
never carry a URL or a key. Each listener below is a real HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import json
import logging

import pytest

from annotator.models import AuditEvent, DetectorRun
from annotator.services import runs
from tests.fake_openai import FakeOpenAI, error, no_pii

pytestmark = pytest.mark.django_db

KEY = "sk-deployment-secret-0123456789"
LOCAL_KEY = "sk-local-endpoint-secret-9876"


@pytest.fixture
def deployment(settings, corpus):
    """The deployment's endpoint, a listener someone else controls, and the deployment's key."""
    with FakeOpenAI(no_pii) as official, FakeOpenAI(no_pii) as listener:
        settings.OPENAI_BASE_URL = official.base_url
        settings.OPENAI_API_KEY = KEY
        settings.BLINDSPOT_LLM_MODEL = "fake-model"
        settings.BLINDSPOT_LLM_ENDPOINTS = {}
        yield official, listener


def test_a_project_admin_cannot_point_a_run_at_their_own_url(deployment, client, members,
                                                             django_capture_on_commit_callbacks):
    """The repro: preset "llm basic" with {"base_url": <listener>} sent the key and the corpus there."""
    official, listener = deployment
    admin = members["admin"]
    assert not admin.is_staff
    client.force_login(admin)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/p/test/runs/", {"preset": "llm basic",
                                                 "config": json.dumps({"base_url": listener.base_url})})
    assert response.status_code == 200
    assert "base_url" in response.content.decode() and "BLINDSPOT_LLM_ENDPOINTS" in response.content.decode()
    assert not DetectorRun.objects.exists()
    assert listener.requests == [] and official.requests == []


@pytest.mark.parametrize("detector, config", [
    ("llm", {"api_key": "sk-mine"}),
    ("llm", {"base_url": "http://127.0.0.1:1/v1"}),
    ("llm", {"segments": {"model_path": "/etc"}}),
    ("ensemble", {"members": [{"name": "llm", "config": {"base_url": "http://127.0.0.1:1/v1"}}]}),
    ("ensemble", {"tagger": {"model_dir": "/tmp"}}),
    ("tagger", {"model_path": "/tmp/other-project/20260101-000000-aaaa"}),
])
def test_a_run_config_never_carries_a_url_a_key_or_a_path(deployment, corpus, detector, config):
    with pytest.raises(runs.RunError, match="may not be set in a run config"):
        runs.run_start(project=corpus, detector=detector, config=config)
    assert not DetectorRun.objects.exists()


def test_a_run_recorded_with_a_url_still_calls_only_the_deployment(deployment, corpus,
                                                                    django_capture_on_commit_callbacks):
    """A run started before the fix (its config holds a URL) is resumed against the deployment's endpoint."""
    official, listener = deployment
    run = runs.run_start(project=corpus, detector="llm", config={"backoff_base_s": 0.01})
    DetectorRun.objects.filter(pk=run.pk).update(config={**run.config, "base_url": listener.base_url})
    with django_capture_on_commit_callbacks(execute=True):
        runs.run_enqueue(run)
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    assert listener.requests == []
    assert official.requests and {h["authorization"] for h in official.headers} == {f"Bearer {KEY}"}


def test_a_named_endpoint_gets_its_own_key_never_the_deployments(deployment, corpus, settings,
                                                                  django_capture_on_commit_callbacks):
    official, _ = deployment
    with FakeOpenAI(no_pii) as local:
        settings.BLINDSPOT_LLM_ENDPOINTS = {"local": {"base_url": local.base_url, "api_key": LOCAL_KEY},
                                            "keyless": {"base_url": local.base_url, "api_key": ""}}
        with pytest.raises(runs.RunError, match="no LLM endpoint 'elsewhere'.*default, keyless, local"):
            runs.run_start(project=corpus, detector="llm", config={"endpoint": "elsewhere"})
        with django_capture_on_commit_callbacks(execute=True):
            run = runs.run_start(project=corpus, detector="llm", config={"endpoint": "local"})
            runs.run_enqueue(run)
            keyless = runs.run_start(project=corpus, detector="llm", config={"endpoint": "keyless"})
            runs.run_enqueue(keyless)
    run.refresh_from_db()
    keyless.refresh_from_db()
    assert run.status == keyless.status == "succeeded", (run.error, keyless.error)
    assert run.config["endpoint"] == "local" and run.config["base_url"] == local.base_url
    assert official.requests == []
    sent = {h["authorization"] for h in local.headers}
    assert f"Bearer {LOCAL_KEY}" in sent and f"Bearer {KEY}" not in sent
    assert "Bearer not-needed" in sent  # a keyless endpoint is sent no key, not the deployment's


def test_no_key_reaches_a_run_record_a_log_line_an_error_or_a_page(deployment, corpus, client, members, caplog,
                                                                 django_capture_on_commit_callbacks):
    """An endpoint that echoes the key back in its error (as real APIs do for a wrong key)."""
    from annotator.celery import app

    official, _ = deployment
    official.handler = lambda request: error(401, f"Incorrect API key provided: {KEY}")
    app.conf.task_eager_propagates = False
    caplog.set_level(logging.DEBUG)
    with django_capture_on_commit_callbacks(execute=True):
        run = runs.run_start(project=corpus, detector="llm", config={"max_retries": 0, "backoff_base_s": 0.01})
        runs.run_enqueue(run)
    run.refresh_from_db()
    assert official.headers and official.headers[0]["authorization"] == f"Bearer {KEY}"
    assert run.status == "failed" and "Incorrect API key provided: [redacted]" in run.error
    records = [run.config, run.error, run.usage, list(run.chunks.values_list("error", flat=True)),
               list(AuditEvent.objects.values_list("details", flat=True))]
    assert KEY not in json.dumps(records, default=str)
    assert KEY not in caplog.text
    client.force_login(members["admin"])
    for url in ("/p/test/runs/", f"/p/test/runs/{run.pk}/"):
        page = client.get(url)
        assert page.status_code == 200 and KEY not in page.content.decode()


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_calls_the_deployments_endpoint_and_logs_no_key(celery_worker, settings, project):
    """Through a Celery worker on PostgreSQL: a run whose record holds another URL (started before
    run configs were checked) calls the deployment's endpoint, which echoes the key in its error;
    the key is in neither the run's error nor the worker's log."""
    from annotator.services.imports import corpus_import
    from pipeline.formats import parse_upload
    from tests.conftest import wait_for

    corpus_import(project=project, source="one.jsonl", dialogues=parse_upload(
        b'{"id": "d1", "messages": [{"speaker": "Tutor", "text": "Hi Maria"}]}\n', name="one.jsonl"))
    with FakeOpenAI(lambda request: error(401, f"Incorrect API key provided: {KEY}")) as official, \
            FakeOpenAI(no_pii) as listener:
        endpoint = {"OPENAI_BASE_URL": official.base_url, "OPENAI_API_KEY": KEY, "BLINDSPOT_LLM_MODEL": "fake-model"}
        for name, value in endpoint.items():
            setattr(settings, name, value)
        settings.BLINDSPOT_LLM_ENDPOINTS = {}
        worker = celery_worker(concurrency=1, extra_env=endpoint)
        wait_for(lambda: " ready." in worker.output(), timeout=90, what=lambda: f"a worker to start\n{worker.output()[-3000:]}")
        run = runs.run_start(project=project, detector="llm", config={"max_retries": 0})
        DetectorRun.objects.filter(pk=run.pk).update(config={**run.config, "base_url": listener.base_url})
        runs.run_enqueue(run)
        wait_for(lambda: DetectorRun.objects.get(pk=run.pk).is_finished, timeout=120,
                 what=lambda: f"the run to finish\n{worker.output()[-3000:]}")
    run.refresh_from_db()
    assert listener.requests == [] and official.headers[0]["authorization"] == f"Bearer {KEY}"
    assert run.status == "failed" and "Incorrect API key provided: [redacted]" in run.error
    assert "[redacted]" in worker.output() and KEY not in worker.output()
