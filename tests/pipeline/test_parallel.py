"""The process pool behind ``--workers``: chunks in order, bounded read-ahead, the same answers as
one process, a thread share per worker, and a dead worker reported instead of a hang."""

from __future__ import annotations

import gc
import os

import pytest

from pipeline.parallel import (
    ParallelDetector,
    WorkerDiedError,
    chunked,
    cpu_threads,
    threads_per_worker,
)
from pipeline.synthetic import generate_corpus

PLUGINS = ("tests.parallel_detectors",)


@pytest.fixture(scope="module")
def dialogues():
    return generate_corpus(24, seed=11)


def test_chunks_close_once_they_hold_enough_messages(dialogues):
    chunks = list(chunked(dialogues, max_messages=50))
    assert [d for c in chunks for d in c] == dialogues
    assert all(sum(len(d.messages) for d in c) >= 50 for c in chunks[:-1])
    assert all(sum(len(d.messages) for d in c[:-1]) < 50 for c in chunks)


def test_two_workers_answer_like_one(dialogues):
    one = list(ParallelDetector("rules", workers=1, chunk_messages=60).detect_many(dialogues))
    two = list(ParallelDetector("rules", workers=2, chunk_messages=60).detect_many(dialogues))
    assert [[d.to_dict() for d in ds] for ds in two] == [[d.to_dict() for d in ds] for ds in one]
    assert [ds[0].dialogue_id for ds in two] == [d.id for d in dialogues]
    assert sum(len(d.spans) for ds in one for d in ds) > 0  # the corpus has PII the rules find


def test_the_stream_is_read_only_a_few_chunks_ahead(dialogues):
    read = []

    def stream():
        for d in dialogues:
            read.append(d.id)
            yield d

    chunk = len(dialogues[0].messages)  # about one dialogue per chunk
    answers = ParallelDetector("rules", workers=2, chunk_messages=chunk).detect_many(stream())
    next(answers)
    # 2 workers x 2 chunks in flight, each ~1-2 dialogues: far from the 24 of the corpus
    assert len(read) <= 2 * 2 * 2 + 1 < len(dialogues)
    assert len(list(answers)) == len(dialogues) - 1


def test_each_worker_builds_its_detector_with_its_share_of_the_threads_and_freezes_what_it_holds(
    dialogues, monkeypatch
):
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert [threads_per_worker(n) for n in (1, 2, 3, 8)] == [4, 2, 1, 1]
    monkeypatch.undo()
    det = ParallelDetector("probe_test", workers=2, plugins=PLUGINS, chunk_messages=40)
    sources = {d.spans[0].source for ds in det.detect_many(dialogues) for d in ds if d.spans}
    pids = {int(s.split(":")[0]) for s in sources}
    assert pids and os.getpid() not in pids and len(pids) <= 2  # the workers, not this process
    assert {s.split(":")[1] for s in sources} == {str(threads_per_worker(2))}
    assert all(int(s.split(":")[2]) > 5_000 for s in sources)  # the modules a worker imported
    one_chunk = next(det.detect_many(dialogues[:1]))  # not worth starting processes for
    assert one_chunk[0].spans[0].source == f"{os.getpid()}:{cpu_threads()}:{gc.get_freeze_count()}"


def test_cpu_threads_honours_omp_num_threads(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert cpu_threads() == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "lots")
    assert cpu_threads() >= 1


def test_a_dead_worker_ends_the_run_with_a_clear_error(dialogues):
    det = ParallelDetector("probe_test", {"die_on": dialogues[5].id}, workers=2, plugins=PLUGINS,
                           chunk_messages=40)
    with pytest.raises(WorkerDiedError, match="worker process died"):
        list(det.detect_many(dialogues))


def test_a_worker_that_died_before_the_next_chunk_was_sent_is_the_same_clear_error(dialogues, monkeypatch):
    """The pool breaks as soon as a worker dies: sending the next chunk then raises, not only
    waiting for an answer (CI once saw the raw BrokenProcessPool from ``submit``)."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    import pipeline.parallel

    class BreaksOnThirdSubmit(ProcessPoolExecutor):
        sent = 0

        def submit(self, fn, /, *args, **kwargs):
            BreaksOnThirdSubmit.sent += 1
            if BreaksOnThirdSubmit.sent == 3:
                raise BrokenProcessPool("A child process terminated abruptly")
            return super().submit(fn, *args, **kwargs)

    monkeypatch.setattr(pipeline.parallel, "ProcessPoolExecutor", BreaksOnThirdSubmit)
    det = ParallelDetector("probe_test", {}, workers=2, plugins=PLUGINS, chunk_messages=40)
    with pytest.raises(WorkerDiedError, match="worker process died"):
        list(det.detect_many(dialogues))


def test_an_error_inside_a_worker_reaches_the_caller_as_itself(dialogues):
    det = ParallelDetector("slow_test", {"seconds_per_dialogue": 0, "fail_on": dialogues[3].id}, workers=2,
                           plugins=("tests.slow_detector",))
    with pytest.raises(RuntimeError, match=f"boom on {dialogues[3].id}"):
        list(det.detect_many(dialogues))


@pytest.mark.parametrize("workers", [0, -1, 1.5, True])
def test_workers_must_be_a_positive_integer(workers):
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        ParallelDetector("rules", workers=workers)
