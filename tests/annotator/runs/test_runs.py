import json
import os
import signal

import pytest

import tests.slow_detector  # noqa: F401  (registers slow_test)
from annotator.models import DetectorRun, Prediction, RunChunk
from annotator.services import runs
from tests.conftest import wait_for


def _corpus(project, n=12):
    from annotator.services.imports import corpus_import
    from pipeline.formats import parse_upload

    lines = [json.dumps({"id": f"d{i:02d}", "messages": [
        {"speaker": "Tutor", "text": f"Hello student{i}, mail me at t{i}@example.org"},
        {"speaker": "Student", "text": "what is 9351 / 7 ?"},
    ]}) for i in range(n)]
    corpus_import(project=project, dialogues=parse_upload("\n".join(lines).encode()), source="t.jsonl")


@pytest.mark.django_db
def test_rules_run_end_to_end_in_process(project, django_capture_on_commit_callbacks):
    _corpus(project)
    with django_capture_on_commit_callbacks(execute=True):
        run = runs.run_start(project=project, detector="rules", config={}, chunk_dialogues=5)
        runs.run_enqueue(run)
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    assert (run.total_chunks, run.done_chunks, run.progress_done) == (3, 3, 24)
    assert set(Prediction.objects.filter(run=run).values_list("label", flat=True)) == {"EMAIL"}
    assert Prediction.objects.filter(run=run).count() == 12
    assert run.model_version


@pytest.mark.django_db
def test_chunks_close_at_a_message_budget_or_a_dialogue_cap(project, settings):
    """Short exchanges (two messages a dialogue) are chunked by messages, not in 100-message
    handfuls of dialogues whose fixed cost outweighs the detection; a dialogue is never split."""
    _corpus(project, n=12)  # 24 messages, 2 a dialogue
    run = runs.run_start(project=project, detector="rules", config={}, chunk_messages=5)
    sizes = list(run.chunks.order_by("index").values_list("message_count", flat=True))
    assert sizes == [6, 6, 6, 6]  # closed once a chunk holds >= 5 messages
    assert [len(ids) for ids in run.chunks.order_by("index").values_list("dialogue_ids", flat=True)] == [3] * 4
    settings.BLINDSPOT_RUN_CHUNK_MESSAGES = 10_000  # the dialogue cap comes first
    run = runs.run_start(project=project, detector="rules", config={}, chunk_dialogues=5)
    assert list(run.chunks.order_by("index").values_list("message_count", flat=True)) == [10, 10, 4]
    settings.BLINDSPOT_RUN_CHUNK_MESSAGES = 8  # the settings decide without arguments
    run = runs.run_start(project=project, detector="rules", config={})
    assert (run.total_chunks, run.progress_total) == (3, 24)


@pytest.mark.django_db
def test_rerunning_a_chunk_replaces_never_duplicates(project):
    _corpus(project, n=4)
    run = runs.run_start(project=project, detector="slow_test", config={"seconds_per_dialogue": 0})
    chunk = run.chunks.get()
    assert runs.chunk_process(chunk_id=chunk.pk) == "done"
    n = Prediction.objects.filter(run=run).count()
    assert n == 8
    # a redelivered task after a crash between write and ack
    RunChunk.objects.filter(pk=chunk.pk).update(status="pending")
    assert runs.chunk_process(chunk_id=chunk.pk) == "done"
    assert Prediction.objects.filter(run=run).count() == n
    assert runs.chunk_process(chunk_id=chunk.pk) == "already done"


@pytest.mark.django_db
def test_failing_chunk_fails_the_run_and_keeps_finished_chunks(project, django_capture_on_commit_callbacks):
    from annotator.celery import app

    app.conf.task_eager_propagates = False
    _corpus(project, n=6)
    with django_capture_on_commit_callbacks(execute=True):
        run = runs.run_start(project=project, detector="slow_test",
                             config={"seconds_per_dialogue": 0, "fail_on": "d04"}, chunk_dialogues=2)
        runs.run_enqueue(run)
    run.refresh_from_db()
    assert run.status == "failed"
    assert "boom on d04" in run.error and "chunk 2" in run.error
    assert run.chunks.filter(status="done").count() == 2
    assert Prediction.objects.filter(run=run).count() == 8


@pytest.mark.django_db
def test_cancelled_run_stops_writing(project):
    _corpus(project, n=4)
    run = runs.run_start(project=project, detector="slow_test", config={"seconds_per_dialogue": 0},
                         chunk_dialogues=2)
    runs.run_cancel(run=run)
    for chunk in run.chunks.all():
        assert runs.chunk_process(chunk_id=chunk.pk) == "run cancelled"
    assert Prediction.objects.filter(run=run).count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize("detector,config,message", [
    ("nope", {}, "Unknown detector"),
    ("rules", {"bogus": 1}, "unknown config key"),
])
def test_bad_run_requests_are_refused(project, detector, config, message):
    _corpus(project, n=1)
    with pytest.raises(runs.RunError, match=message):
        runs.run_start(project=project, detector=detector, config=config)
    assert DetectorRun.objects.count() == 0


@pytest.mark.django_db
def test_run_pages_are_admin_only_and_show_progress(client, members, django_capture_on_commit_callbacks):
    project = members["admin"].memberships.get().project
    _corpus(project, n=3)
    client.force_login(members["annotator"])
    assert client.get("/p/test/runs/").status_code == 403
    client.force_login(members["adjudicator"])
    assert client.get("/p/test/runs/").status_code == 403
    client.force_login(members["admin"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/p/test/runs/", {"preset": "rules", "config": ""})
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    assert "Succeeded" in page and "6 / 6 messages" in page
    fragment = client.get(response["Location"], HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in fragment and "run-progress" in fragment
    bad = client.post("/p/test/runs/", {"preset": "rules", "config": "{nope"})
    assert b"Not valid JSON" in bad.content


WORKER_ENV = {"BLINDSPOT_DETECTOR_PLUGINS": "tests.slow_detector", "CELERY_VISIBILITY_TIMEOUT": "3"}


@pytest.mark.django_db(transaction=True)
@pytest.mark.redis
def test_real_worker_processes_a_run(celery_worker, project):
    _corpus(project, n=6)
    worker = celery_worker(concurrency=2, extra_env=WORKER_ENV)
    run = runs.run_start(project=project, detector="slow_test", config={"seconds_per_dialogue": 0.05},
                         chunk_dialogues=2)
    runs.run_enqueue(run)
    wait_for(lambda: DetectorRun.objects.get(pk=run.pk).is_finished, timeout=90,
             what=lambda: f"the run to finish\n{worker.output()[-3000:]}")
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    assert Prediction.objects.filter(run=run).count() == 12


@pytest.mark.django_db(transaction=True)
@pytest.mark.redis
def test_worker_killed_mid_run_completes_after_restart_without_duplicates(celery_worker, project):
    _corpus(project, n=16)
    first = celery_worker(concurrency=1, extra_env=WORKER_ENV)
    run = runs.run_start(project=project, detector="slow_test", config={"seconds_per_dialogue": 0.4},
                         chunk_dialogues=1)
    runs.run_enqueue(run)
    wait_for(lambda: DetectorRun.objects.get(pk=run.pk).done_chunks >= 3, timeout=90,
             what=lambda: f"three chunks\n{first.output()[-3000:]}")
    os.killpg(first.proc.pid, signal.SIGKILL)
    first.proc.wait(10)
    run.refresh_from_db()
    assert run.status == "running" and run.done_chunks < run.total_chunks
    second = celery_worker(concurrency=1, extra_env=WORKER_ENV)
    wait_for(lambda: DetectorRun.objects.get(pk=run.pk).is_finished, timeout=120,
             what=lambda: f"the run to finish after restart\n{second.output()[-3000:]}")
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    assert run.progress_done == run.progress_total == 32
    assert Prediction.objects.filter(run=run).count() == 32
    assert (Prediction.objects.filter(run=run).values("message_id", "start", "end", "label").distinct().count()
            == 32)


@pytest.mark.django_db
def test_only_admins_can_overlay_a_run_on_a_transcript(client, members, django_capture_on_commit_callbacks):
    from annotator.models import Dialogue

    project = members["admin"].memberships.get().project
    _corpus(project, n=1)
    with django_capture_on_commit_callbacks(execute=True):
        run = runs.run_start(project=project, detector="rules")
        runs.run_enqueue(run)
    d = Dialogue.objects.get()
    url = f"/p/test/dialogues/{d.pk}/?run={run.pk}"
    client.force_login(members["admin"])
    assert 'class="suggestion"' in client.get(url).content.decode()
    client.force_login(members["adjudicator"])
    page = client.get(url).content.decode()
    assert 'class="suggestion"' not in page and "rules" not in page


@pytest.mark.django_db
def test_llm_run_through_the_queue_against_a_local_endpoint(project, settings, django_capture_on_commit_callbacks):
    """The app's settings reach the LLM detector; usage lands on the run; a dead endpoint fails it clearly."""
    from tests.fake_openai import FakeOpenAI, error, pii_handler

    _corpus(project, n=2)

    def find(text):
        return [{"text": w, "label": "EMAIL"} for w in text.split() if "@" in w]

    with FakeOpenAI(pii_handler(find)) as server:
        settings.OPENAI_BASE_URL = server.base_url
        settings.BLINDSPOT_LLM_MODEL = "fake-model"
        settings.OPENAI_API_KEY = "sk-test-secret"
        with django_capture_on_commit_callbacks(execute=True):
            run = runs.run_start(project=project, detector="llm",
                                 config={"strategy": "math_aware", "backoff_base_s": 0.01})
            runs.run_enqueue(run)
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    assert run.config["base_url"] == server.base_url
    assert "sk-test-secret" not in str(run.config) and server.headers[-1]["authorization"] == "Bearer sk-test-secret"
    assert Prediction.objects.filter(run=run, label="EMAIL").count() == 2
    assert run.usage["requests"] == 4 and run.usage["prompt_tokens"] > 0
    assert "fake-model" in run.model_version

    from annotator.celery import app

    app.conf.task_eager_propagates = False
    with FakeOpenAI(lambda request: error(503, "upstream overloaded")) as server:
        settings.OPENAI_BASE_URL = server.base_url
        with django_capture_on_commit_callbacks(execute=True):
            failing = runs.run_start(project=project, detector="llm",
                                     config={"max_retries": 1, "backoff_base_s": 0.01})
            runs.run_enqueue(failing)
    failing.refresh_from_db()
    assert failing.status == "failed" and "upstream overloaded" in failing.error
    assert Prediction.objects.filter(run=failing).count() == 0


def _spans(run) -> list[tuple]:
    return sorted(Prediction.objects.filter(run=run).values_list("message_id", "start", "end", "label", "score"))


@pytest.mark.django_db(transaction=True)
@pytest.mark.redis
def test_two_workers_share_a_runs_chunks_and_predict_what_one_process_does(celery_worker, project,
                                                                          django_capture_on_commit_callbacks):
    """Any worker takes any chunk; together they leave no duplicate and no gap."""
    from annotator.celery import app

    _corpus(project, n=16)
    workers = [celery_worker(concurrency=1, extra_env=WORKER_ENV) for _ in range(2)]
    for w in workers:
        wait_for(lambda w=w: " ready." in w.output(), timeout=90, what=lambda w=w: f"a worker to start\n{w.output()[-3000:]}")
    config = {"seconds_per_dialogue": 0.3}
    run = runs.run_start(project=project, detector="slow_test", config=config, chunk_dialogues=1)
    assert runs.run_enqueue(run) == 16
    wait_for(lambda: DetectorRun.objects.get(pk=run.pk).is_finished, timeout=120,
             what=lambda: f"the run to finish\n{workers[0].output()[-2000:]}\n{workers[1].output()[-2000:]}")
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    names = [w.rsplit("@", 1)[0] for w in run.chunks.values_list("worker", flat=True)]
    assert set(names) == {f"{app.conf.task_default_queue}-0", f"{app.conf.task_default_queue}-1"}, names

    app.conf.task_always_eager = True  # the same detector over the same corpus, in this process
    with django_capture_on_commit_callbacks(execute=True):
        alone = runs.run_start(project=project, detector="slow_test", config={"seconds_per_dialogue": 0})
        runs.run_enqueue(alone)
    alone.refresh_from_db()
    assert alone.status == "succeeded" and alone.total_chunks == 1
    assert len(_spans(run)) == 32 and len(set(_spans(run))) == 32
    assert _spans(run) == _spans(alone)
    assert run.progress_done == run.progress_total == 32


@pytest.mark.django_db(transaction=True)
@pytest.mark.redis
def test_a_page_s_figure_overtakes_the_chunks_of_a_queued_run(celery_worker, project):
    """A run's chunks go at the lowest priority: work queued after them (here a page's figure;
    merges and reports alike) runs next, not after the whole run."""
    from django.core.cache import cache

    from annotator import task_names
    from annotator.dispatch import enqueue
    from annotator.selectors import figures
    from annotator.selectors.projects import corpus_counts

    _corpus(project, n=16)
    run = runs.run_start(project=project, detector="slow_test", config={"seconds_per_dialogue": 0.4},
                         chunk_dialogues=1)
    runs.run_enqueue(run)
    enqueue(task_names.PROJECTS_FIGURE_REFRESH, project.pk, "annotator.selectors.projects.corpus_counts", {})
    worker = celery_worker(concurrency=1, extra_env={"BLINDSPOT_DETECTOR_PLUGINS": "tests.slow_detector"})
    kept = figures._key(figures._name(corpus_counts, {}), figures.project_revision(project))
    wait_for(lambda: cache.get(kept) is not None or DetectorRun.objects.get(pk=run.pk).is_finished, timeout=60,
             what=lambda: f"the figure or the run\n{worker.output()[-3000:]}")
    done = DetectorRun.objects.get(pk=run.pk).done_chunks
    assert cache.get(kept) is not None and done <= 1, f"the figure waited for {done} of the run's 16 chunks"
    wait_for(lambda: DetectorRun.objects.get(pk=run.pk).is_finished, timeout=90,
             what=lambda: f"the run to finish\n{worker.output()[-3000:]}")
    assert DetectorRun.objects.get(pk=run.pk).status == "succeeded"


def test_a_refused_run_says_why_once(client, members, project):
    client.force_login(members["admin"])
    page = client.post("/p/test/runs/", {"preset": "tagger", "config": ""}).content.decode()
    assert page.count("has no active tagger") == 1


@pytest.mark.django_db
def test_a_run_with_no_findings_says_0_spans(client, members, django_capture_on_commit_callbacks):
    from annotator.services.imports import corpus_import
    from pipeline.formats import parse_upload

    project = members["admin"].memberships.get().project
    line = json.dumps({"id": "quiet", "messages": [{"speaker": "Tutor", "text": "what is 3 + 4 ?"}]})
    corpus_import(project=project, dialogues=parse_upload(line.encode()), source="q.jsonl")
    client.force_login(members["admin"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/p/test/runs/", {"preset": "rules", "config": ""})
    page = client.get(response["Location"]).content.decode()
    assert "Succeeded" in page and "0 spans: the detector found nothing in 1 message." in page


@pytest.mark.django_db
def test_a_runs_config_shows_paths_from_the_models_folder(client, members, settings, tmp_path):
    settings.BLINDSPOT_MODELS_DIR = tmp_path / "var" / "models"
    project = members["admin"].memberships.get().project
    run = DetectorRun.objects.create(project=project, detector="tagger", status=DetectorRun.Status.SUCCEEDED, config={
        "model_dir": str(settings.BLINDSPOT_MODELS_DIR), "model_path": str(settings.BLINDSPOT_MODELS_DIR / "test-v3"),
        "other": "/etc/elsewhere", "threshold": 0.5})
    client.force_login(members["admin"])
    page = client.get(f"/p/test/runs/{run.pk}/").content.decode()
    assert str(tmp_path) not in page
    assert "&quot;model_path&quot;: &quot;BLINDSPOT_MODELS_DIR/test-v3&quot;" in page
    assert "&quot;model_dir&quot;: &quot;BLINDSPOT_MODELS_DIR&quot;" in page and "/etc/elsewhere" in page
    run.refresh_from_db()
    assert run.config["model_path"] == str(settings.BLINDSPOT_MODELS_DIR / "test-v3")  # stored as the run used it
