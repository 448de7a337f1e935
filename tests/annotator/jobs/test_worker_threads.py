"""A Celery worker gives each of its pool processes a share of the cores for inference, so that
``--concurrency N`` never runs N x cores inference threads, and keeps what it holds once set up out
of the garbage collections its tasks cause."""

from __future__ import annotations

import gc
import re

import pytest

from annotator.celery import _share_startup_state, inference_threads_share
from pipeline import parallel
from tests.conftest import wait_for


@pytest.fixture
def eight_cores(monkeypatch):
    monkeypatch.setattr(parallel, "usable_cores", lambda: 8)


@pytest.mark.parametrize(("tasks", "share"), [(1, "8"), (2, "4"), (3, "2"), (8, "1"), (16, "1"), (0, "8")])
def test_each_task_gets_its_share_of_the_cores(eight_cores, tasks, share):
    assert inference_threads_share({}, tasks=tasks) == share


@pytest.mark.parametrize("environ", [{"OMP_NUM_THREADS": "3"}, {"OMP_NUM_THREADS": " 1 "}])
def test_the_operators_setting_stands(eight_cores, environ):
    assert inference_threads_share(environ, tasks=4) is None


def test_an_empty_setting_is_no_setting(eight_cores):
    assert inference_threads_share({"OMP_NUM_THREADS": ""}, tasks=4) == "2"


def started(worker) -> str:
    wait_for(lambda: "inference threads per task" in worker.output(), timeout=60,
             what=lambda: f"the worker's thread share in its log\n{worker.output()}")
    return worker.output()


@pytest.mark.django_db(transaction=True)
@pytest.mark.redis
@pytest.mark.postgres
@pytest.mark.parametrize(("concurrency", "host_workers"), [(2, None), (1, "3")])
def test_a_real_worker_shares_the_hosts_cores_among_its_tasks(celery_worker, monkeypatch, concurrency, host_workers):
    """The handler is connected: a worker started without OMP_NUM_THREADS gives each task its
    share before its pool starts, counting the other workers on the host, and says so."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("BLINDSPOT_HOST_WORKERS", raising=False)
    worker = celery_worker(concurrency=concurrency, extra_env={"BLINDSPOT_HOST_WORKERS": host_workers} if host_workers else {})
    tasks = concurrency * int(host_workers or 1)
    assert (f"inference threads per task: {parallel.threads_per_worker(tasks)} (OMP_NUM_THREADS: this host's "
            f"cores shared by {tasks} task(s) at once)") in started(worker)


@pytest.mark.django_db(transaction=True)
@pytest.mark.redis
@pytest.mark.postgres
def test_a_real_worker_keeps_the_operators_setting(celery_worker):
    worker = celery_worker(concurrency=2, extra_env={"OMP_NUM_THREADS": "3"})
    assert "inference threads per task: 3 (OMP_NUM_THREADS as set)" in started(worker)


def test_what_the_process_holds_is_frozen():
    try:
        _share_startup_state()
        held = gc.get_freeze_count()
        assert held > 10_000  # Django, the app and the test run's own objects
        assert len(gc.get_objects()) < held / 10  # a collection now walks a fraction of them
    finally:
        gc.unfreeze()


def test_the_word_lists_are_loaded_before_the_pool_starts(monkeypatch):
    """Loaded by the process the pool forks from, the lists are its processes' from the start;
    wordfreq loads a language's whole table at its first lookup, so each language is looked up."""
    from pipeline.filters import vocabulary

    loaders = (vocabulary.given_names, vocabulary.family_names, vocabulary.english_words,
               vocabulary.frequent_words, vocabulary.maths_words, vocabulary._names_to_match)
    lexicon = vocabulary._lexicon()
    looked_up = []
    monkeypatch.setattr(vocabulary, "_lexicon", lambda: (lambda word, language: looked_up.append(language) or
                                                        lexicon[0](word, language), *lexicon[1:]))
    for loader in (*loaders, vocabulary.word_zipf):
        loader.cache_clear()
    try:
        _share_startup_state()
    finally:
        gc.unfreeze()
        vocabulary.word_zipf.cache_clear()  # nothing the stand-in answered stays cached
    assert all(loader.cache_info().currsize == 1 for loader in loaders)
    assert {"en", "es"} <= set(looked_up)


@pytest.mark.django_db(transaction=True)
@pytest.mark.redis
@pytest.mark.postgres
def test_a_real_worker_freezes_its_startup_objects(celery_worker):
    """The handler is connected and runs once the app is loaded: it loads the word lists and
    freezes tens of thousands of objects (a bare interpreter holds a few thousand)."""
    worker = celery_worker(concurrency=1)
    wait_for(lambda: "objects kept out of garbage collection" in worker.output(), timeout=60,
             what=lambda: f"the frozen count in the worker's log\n{worker.output()}")
    frozen = re.search(r"objects kept out of garbage collection: (\d+)", worker.output())
    assert frozen and int(frozen.group(1)) > 50_000
    words = re.search(r"word lists loaded for the pool's processes: (\d+) words", worker.output())
    assert words and int(words.group(1)) > 50_000
