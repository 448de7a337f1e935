"""Run a detector over a stream of dialogues in a pool of worker processes, in input order.

The stream is cut into chunks of consecutive dialogues (closed once a chunk holds
:data:`CHUNK_MESSAGES` messages) whatever the number of workers, and every chunk goes through the
detector's own ``detect_many`` in one call, so a detector that batches (the tagger sorts a
chunk's windows by length) sees the same batches with one worker or eight: the output is the
same, in the same order. At most ``IN_FLIGHT_PER_WORKER`` chunks per worker are submitted and not
yet consumed, so memory stays flat whatever the corpus size.

Workers are started with the ``spawn`` method: a fresh interpreter holds nothing of the parent's
(no half-initialised torch or OpenMP thread pool, which ``fork`` can deadlock on; no Django, no
open files), so the only state a worker has is the detector its initializer builds, once. Each
worker gets ``cores // workers`` inference threads through ``OMP_NUM_THREADS``
(:func:`cpu_threads` honours it), so workers x threads never exceeds the
cores. A worker that dies (killed, out of memory) ends the run with :class:`WorkerDiedError`
instead of a hang; an exception inside a worker reaches the caller as itself.
"""

from __future__ import annotations

import gc
import importlib
import itertools
import multiprocessing
import os
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from pipeline import registry
from pipeline.errors import DetectorError
from pipeline.types import Detection, Detector, Dialogue

CHUNK_MESSAGES = 1024  # the tagger's own sweep: a chunk is one forward sweep of it
IN_FLIGHT_PER_WORKER = 2  # one chunk being detected, one waiting: workers never idle on the parent


class WorkerDiedError(DetectorError):
    """A worker process ended without an answer (killed, out of memory, a crash in native code)."""


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def cpu_threads() -> int:
    """Inference threads: ``OMP_NUM_THREADS`` where set (a process pool or a Celery worker gives
    each process its share of the cores that way), else every core this process may use."""
    share = os.environ.get("OMP_NUM_THREADS", "").strip()
    if share.isdigit() and int(share) > 0:
        return int(share)
    return usable_cores()


def threads_per_worker(workers: int) -> int:
    """Inference threads for each of ``workers`` processes, so that workers x threads <= cores."""
    return max(1, usable_cores() // workers)


def chunked(
    dialogues: Iterable[Dialogue], max_messages: int = CHUNK_MESSAGES
) -> Iterator[list[Dialogue]]:
    """Consecutive dialogues, a chunk closed once it holds ``max_messages`` messages."""
    chunk: list[Dialogue] = []
    size = 0
    for dialogue in dialogues:
        chunk.append(dialogue)
        size += len(dialogue.messages)
        if size >= max_messages:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def detect_chunk(detector: Detector, chunk: Sequence[Dialogue]) -> list[list[Detection]]:
    """One chunk through ``detector``: one list of detections per dialogue."""
    return list(_streamed(detector, chunk))


def _streamed(detector: Detector, chunk: Sequence[Dialogue]) -> Iterator[list[Detection]]:
    """:func:`detect_chunk`, each dialogue's detections as soon as the detector yields them."""
    n = 0
    for found in detector.detect_many(chunk):
        n += 1
        yield list(found)
    if n != len(chunk):
        raise DetectorError(f"{detector.name}: {n} results for a chunk of {len(chunk)} dialogues")


_worker_detector: Detector | None = None  # the one detector of a worker process


def _init_worker(
    name: str, config: Mapping[str, Any], plugins: Sequence[str], threads: int
) -> None:
    """Pool initializer: set the thread share before torch or numpy is imported, then build the
    detector once (its model loads on the first chunk and stays for the worker's life), then
    freeze what the worker holds (:func:`freeze_held_objects`)."""
    global _worker_detector
    os.environ["OMP_NUM_THREADS"] = str(threads)
    _worker_detector = _build(name, config, plugins)
    freeze_held_objects()


def freeze_held_objects() -> int:
    """Keep every object this process holds now out of its later garbage collections; returns
    how many are kept out. For a worker once it is set up: the modules it imported never become
    garbage, yet a full collection walks them all again whenever a task allocates enough (the
    tagger's word tokens and windows do); frozen, they are skipped, and a forked process no longer
    writes to the pages it shares with its parent when it counts them. Objects made later (a
    task's, a model's) are collected as before."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def _build(name: str, config: Mapping[str, Any], plugins: Sequence[str]) -> Detector:
    for module in plugins:
        importlib.import_module(module)
    return registry.build(name, config)


def _detect_in_worker(chunk: list[Dialogue]) -> list[list[Detection]]:
    assert _worker_detector is not None, "the pool initializer builds the detector"
    return detect_chunk(_worker_detector, chunk)


class ParallelDetector:
    """Detector ``name`` built from ``config``, run by ``workers`` processes over a stream.

    It stands in for the detector wherever one is streamed (``detect_many``); with one worker the
    chunks run in this process. ``plugins`` are modules a worker imports first, so detectors they
    register (``BLINDSPOT_DETECTOR_PLUGINS``) exist there as here. Building it checks the config and
    gives ``model_version`` without loading a model here.
    """

    def __init__(
        self,
        name: str,
        config: Mapping[str, Any] | None = None,
        *,
        workers: int,
        plugins: Sequence[str] = (),
        chunk_messages: int = CHUNK_MESSAGES,
    ) -> None:
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
            raise ValueError(f"workers must be a positive integer, not {workers!r}")
        self.name = name
        self.config = dict(config or {})
        self.workers = workers
        self.plugins = tuple(plugins)
        self.chunk_messages = chunk_messages
        self.detector = _build(name, self.config, self.plugins)
        self.processes = 0  # how many the last detect_many used (1: this one)

    @property
    def model_version(self) -> str:
        return self.detector.model_version

    def detect_many(self, dialogues: Iterable[Dialogue]) -> Iterator[list[Detection]]:
        """One list of detections per dialogue, in input order. A stream of one chunk runs here:
        starting processes would cost more than it saves. So does a detector that allows one
        process (``max_processes``: an LLM's requests wait on its endpoint, not on this CPU).
        Here, each dialogue is handed on as soon as it is detected, so a caller that writes as
        it goes keeps what finished when a later dialogue fails."""
        chunks = chunked(dialogues, self.chunk_messages)
        head = list(itertools.islice(chunks, 2))
        self.processes = 1
        if min(self.workers, getattr(self.detector, "max_processes", self.workers)) == 1 or len(head) < 2:
            for chunk in itertools.chain(head, chunks):
                yield from _streamed(self.detector, chunk)
            return
        yield from self._pooled(itertools.chain(head, chunks))

    def _pooled(self, chunks: Iterable[list[Dialogue]]) -> Iterator[list[Detection]]:
        pool = ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker,
            initargs=(self.name, self.config, self.plugins, threads_per_worker(self.workers)),
        )
        pending: deque[Future] = deque()
        try:
            for n, chunk in enumerate(chunks, 1):
                self.processes = min(self.workers, n)  # the pool starts a process per chunk, up to workers
                # a worker that died already breaks the pool: submit raises, as result() would
                pending.append(pool.submit(_detect_in_worker, chunk))
                if len(pending) >= self.workers * IN_FLIGHT_PER_WORKER:
                    yield from pending.popleft().result()
            while pending:
                yield from pending.popleft().result()
        except BrokenProcessPool:
            raise WorkerDiedError(
                f"{self.name}: a worker process died before it answered (killed, perhaps out of memory); "
                f"try fewer workers than {self.workers}"
            ) from None
        finally:
            # an error or a consumer that stops early: drop queued chunks, do not wait for them
            pool.shutdown(wait=not pending, cancel_futures=True)
